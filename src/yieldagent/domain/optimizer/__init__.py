"""The optimizer: where funds earn the most after our own rate impact (on the market's
curves, ``domain.market``), and whether moving them pays."""
