"""The optimizer: rate models, pool quotes, where funds earn the most after our own rate
impact, and whether moving them pays."""
