"""yieldagent: puts partners' users' stablecoins where the yield is best, on EVM chains."""

__version__ = "0.1.0"
