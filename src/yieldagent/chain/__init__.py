"""The chain side: the operator's wallet and, later, the chain port and its adapters."""
