"""Partners: credentials, smart-account addresses, rate limits and webhook rules."""
