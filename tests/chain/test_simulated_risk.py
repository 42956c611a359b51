"""The simulated pools' scenarios: switches refuse what they stop, a drain never takes the
pool's own holders' funds, a loss lowers every supplier's value pro rata, and the history
stays bounded."""

from __future__ import annotations

from fractions import Fraction

import pytest

from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.genesis import genesis_pool
from yieldagent.chain.simulated.pools import (
    advance,
    deposit,
    drain,
    lose,
    switch,
    value_of,
    withdraw,
)
from yieldagent.chain.simulated.risk import collateral_of, readings
from yieldagent.domain.market.history import MAX_SNAPSHOTS
from yieldagent.simulated_world.state import MarketError, PoolState

BASE = 8453
GENESIS = 1_767_225_600
TOKEN = load_catalog().chain(BASE).tokens[0]
UNIT = 10**6


def _pool(name: str = "aave") -> PoolState:
    info = TOKEN.protocol(name)
    assert info is not None
    return genesis_pool(BASE, TOKEN, info, 7, GENESIS)


def test_switches_refuse_what_they_stop_and_show_in_the_history() -> None:
    pool = _pool()
    scaled = deposit(pool, 1_000 * UNIT)
    switch(pool, GENESIS, supply=True, withdraw=None)
    with pytest.raises(MarketError, match="supply is paused"):
        deposit(pool, UNIT)
    withdraw(pool, UNIT, scaled)  # withdrawals still go
    switch(pool, GENESIS, supply=False, withdraw=True)
    with pytest.raises(MarketError, match="withdrawals are paused"):
        withdraw(pool, UNIT, scaled)
    deposit(pool, UNIT)
    assert [(s.supply_paused, s.withdraw_paused) for s in pool.history] == [
        (True, False),
        (False, True),
    ]


def test_a_drain_takes_only_other_suppliers_funds() -> None:
    pool = _pool()
    ours = deposit(pool, 5_000_000 * UNIT)
    before = pool.total_supply()
    left = drain(pool, Fraction(99, 100), GENESIS)
    assert left == before - value_of(pool, ours)
    assert pool.total_supply() == value_of(pool, ours)
    assert all(m.borrows <= m.supply for m in pool.markets)
    assert pool.history[0].tvl == before and pool.history[-1].tvl == pool.total_supply()


def test_a_loss_lowers_every_suppliers_value_pro_rata() -> None:
    pool = _pool("morpho_gauntlet_usdc_prime")
    ours = deposit(pool, 1_000_000 * UNIT)
    value = value_of(pool, ours)
    supply = pool.total_supply()
    lost = lose(pool, Fraction(1, 10), GENESIS)
    assert value_of(pool, ours) in (value * 9 // 10, value * 9 // 10 - 1)
    assert pool.total_supply() == supply - lost
    assert abs(lost - supply // 10) <= len(pool.markets)
    assert pool.history[-1].share_price < pool.history[0].share_price


def test_the_history_keeps_a_snapshot_per_step_and_no_more_than_its_bound() -> None:
    pool = _pool()
    advance(pool, GENESIS + 100 * 3_600, 7)
    assert len(pool.history) == MAX_SNAPSHOTS
    steps = [s.at for s in pool.history]
    assert steps == sorted(steps) and steps[-1] - steps[0] == (MAX_SNAPSHOTS - 1) * 3_600


def test_a_vault_reads_the_feeds_of_its_markets_collateral() -> None:
    assert collateral_of("cbBTC/USDC 86%") == "cbBTC"
    assert collateral_of("Aave v3") is None
    vault = _pool("morpho_gauntlet_usdc_prime")
    [reading] = readings([vault], {"cbBTC": (80, 100), "USDe": (1, 100)}, GENESIS)
    assert [feed.token for feed in reading.collateral] == ["cbBTC"]
    assert reading.now.tvl == vault.total_supply()
