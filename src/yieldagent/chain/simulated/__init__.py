"""The simulated chain: a deterministic market built on the protocols' real rate models.

``SimulatedMarket`` owns the simulated world (clock, pools, balances, transactions) in
the service's database; ``SimulatedChain`` is the chain port for one of its chains.
"""
