"""The simulated lending market's pools: interest accrual, borrow demand, suppliers.

Pure state transitions, no I/O. What a quote of a pool says (its rate after our own
deposit) comes from ``yieldagent.domain.market.quotes``, as it does for a real chain. A *pool* is
what an agent supplies to (Aave's USDC reserve, Compound's cUSDCv3, a Morpho vault). It
lends through one or more *markets* (a Morpho vault's Morpho Blue markets; every other
protocol has one), each with its own supply, borrows and rate model state.

Accounting is exact, as on chain:
- A supplier holds *scaled* units; the pool's liquidity index (RAY) turns them into
  underlying: ``value = scaled * index / RAY``, an exact integer at any time.
- Supplying x mints ``floor(x * RAY / index)`` scaled units and withdrawing y burns
  ``ceil(y * RAY / index)``: rounding always favours the pool, so nothing is created.
- Interest accrues linearly between accruals (as Aave's liquidity index does), at the
  pool's supply rate net of the vault fee. Markets grow at their own gross rates.
- Borrow demand moves at step boundaries (every ``STEP_SECONDS``) by a random walk
  seeded from (seed, pool, market, step number). Stored pools move only at step
  boundaries (``catch_up``) and at interactions; reads project to the exact moment on a
  copy. So the same seed, clock and actions give the same market, however time was
  advanced in between.
- Reward tokens are emitted to the pool's whole supply; a holder earns its share
  through a reward index per scaled unit.
- A pool has switches (supply paused, withdrawals paused) and keeps a short history of
  itself for the risk guards: a snapshot at every step boundary and at every scenario
  (``drain``, ``lose``, a switch), at most ``MAX_SNAPSHOTS``. ``drain`` has other
  suppliers leave; ``lose`` writes off bad debt, so every supplier's value falls pro rata.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import replace
from fractions import Fraction

from yieldagent.domain.market.history import MAX_SNAPSHOTS, Snapshot, recorded
from yieldagent.domain.market.quotes import MarketQuote, PoolQuote, pool_rate, spread
from yieldagent.domain.market.rate_models import RAY, SECONDS_PER_YEAR
from yieldagent.simulated_world.state import MarketError, MarketState, PoolState

STEP_SECONDS = 3600
"""Borrow demand changes at every multiple of this many seconds of simulated time."""
HISTORY_SECONDS = MAX_SNAPSHOTS * STEP_SECONDS
"""How far back a pool's history reaches."""

_YEAR_RAY = RAY * SECONDS_PER_YEAR
_MIN_UTILIZATION, _MAX_UTILIZATION = 0.30, 0.97
_REVERSION = 0.05  # share of the gap to the mean utilization closed each step
_VOLATILITY = 0.01  # standard deviation of the target utilization's step
_FOLLOW = 0.5  # share of the gap between borrows and their target closed each step


def snapshot_of(pool: PoolState, at: int) -> Snapshot:
    """The pool as its risk guards read it at ``at`` (its liquidity index is its share
    price)."""
    return Snapshot(
        at,
        pool.total_supply(),
        pool.borrows(),
        pool.liquidity_index,
        supply_paused=pool.supply_paused,
        withdraw_paused=pool.withdraw_paused,
    )


def remember(pool: PoolState, at: int) -> None:
    """Adds the pool as it is at ``at`` to its history."""
    pool.history = recorded(pool.history, snapshot_of(pool, at), HISTORY_SECONDS)


# -- rates -------------------------------------------------------------------


def supply_rate(pool: PoolState, delta: int = 0) -> int:
    """The pool's supply rate (annual, RAY) net of fee, after adding ``delta``."""
    return pool_rate(pool.model, pool.fee, pool.markets, delta)


def quote_of(pool: PoolState) -> PoolQuote:
    """What a chain would tell of the pool now: its rate model, fee and markets."""
    markets = tuple(
        MarketQuote(m.name, m.supply, m.borrows, m.rate_at_target) for m in pool.markets
    )
    return PoolQuote(pool.protocol, pool.token, pool.model, markets, pool.fee)


# -- time --------------------------------------------------------------------


def accrue(pool: PoolState, until: int) -> None:
    """Accrues interest and rewards from ``pool.updated_at`` to ``until`` at current rates."""
    seconds = until - pool.updated_at
    if seconds <= 0:
        return
    net = supply_rate(pool)
    supply = pool.total_supply()
    if supply > 0 and pool.reward_rate > 0:
        # per scaled unit: rate × seconds × (one scaled unit's share of the supply)
        pool.reward_index += pool.reward_rate * seconds * pool.liquidity_index // supply
    for market in pool.markets:
        rates = pool.model.rates(market.supply, market.borrows, market.rate_at_target)
        market.rate_at_target = pool.model.adapt(
            market.supply, market.borrows, market.rate_at_target, seconds
        )
        market.borrows += market.borrows * rates.borrow * seconds // _YEAR_RAY
        market.supply += market.supply * rates.supply * seconds // _YEAR_RAY
    pool.liquidity_index += pool.liquidity_index * net * seconds // _YEAR_RAY
    pool.updated_at = until


def _step_random(seed: int, pool: PoolState, market: MarketState, step: int) -> random.Random:
    key = f"{seed}:{pool.chain_id}:{pool.protocol}:{pool.token}:{market.name}:{step}"
    return random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))


def take_step(pool: PoolState, seed: int) -> None:
    """Moves borrow demand at the pool's next step boundary (accruing up to it first)."""
    boundary = pool.next_step * STEP_SECONDS
    accrue(pool, boundary)
    for market in pool.markets:
        noise = _step_random(seed, pool, market, pool.next_step).gauss(0.0, _VOLATILITY)
        target = market.target_utilization
        target += _REVERSION * (market.mean_utilization - target) + noise
        market.target_utilization = min(max(target, _MIN_UTILIZATION), _MAX_UTILIZATION)
        wanted = int(market.supply * market.target_utilization)
        market.borrows += int((wanted - market.borrows) * _FOLLOW)
        market.borrows = min(max(market.borrows, 0), market.supply)
    pool.next_step += 1
    remember(pool, boundary)


def catch_up(pool: PoolState, until: int, seed: int) -> None:
    """Takes every step up to ``until``; the pool then stands at its last step boundary
    (or later interaction). What a store keeps: it does not depend on how often it ran."""
    while pool.next_step * STEP_SECONDS <= until:
        take_step(pool, seed)


def advance(pool: PoolState, until: int, seed: int) -> None:
    """Brings the pool to exactly ``until``: its steps, then accrual to that moment. For
    interactions (which happen at a moment) and for reads on a copy."""
    catch_up(pool, until, seed)
    accrue(pool, until)


def first_step_after(moment: int) -> int:
    """Number of the first step boundary strictly after ``moment``."""
    return moment // STEP_SECONDS + 1


# -- suppliers ---------------------------------------------------------------


def value_of(pool: PoolState, scaled: int) -> int:
    """Underlying value of ``scaled`` units at the pool's current index (rounded down)."""
    return scaled * pool.liquidity_index // RAY


def deposit(pool: PoolState, amount: int) -> int:
    """Adds ``amount`` of underlying; returns the scaled units minted for it. Raises
    MarketError while supply is paused."""
    if amount <= 0:
        raise MarketError("amount must be positive")
    if pool.supply_paused:
        raise MarketError("supply is paused")
    scaled = amount * RAY // pool.liquidity_index
    for market, part in zip(pool.markets, spread(pool.markets, amount), strict=True):
        market.supply += part
    pool.scaled_supply += scaled
    return scaled


def withdraw(pool: PoolState, amount: int, holder_scaled: int) -> int:
    """Removes ``amount`` of underlying from a holder with ``holder_scaled`` units;
    returns the scaled units burned. Raises MarketError beyond the holder's value or the
    pool's cash, and while withdrawals are paused."""
    if amount <= 0:
        raise MarketError("amount must be positive")
    if pool.withdraw_paused:
        raise MarketError("withdrawals are paused")
    if amount > value_of(pool, holder_scaled):
        raise MarketError("amount exceeds the position")
    if amount > pool.cash():
        raise MarketError("not enough liquidity in the pool")
    burned = min(-(-amount * RAY // pool.liquidity_index), holder_scaled)
    remaining = amount
    parts = spread(pool.markets, -amount)
    for market, part in zip(pool.markets, parts, strict=True):
        take = min(-part, market.cash(), remaining)
        market.supply -= take
        remaining -= take
    for market in pool.markets:  # what pro rata could not take, from any market with cash
        take = min(market.cash(), remaining)
        market.supply -= take
        remaining -= take
    pool.scaled_supply -= burned
    return burned


# -- scenarios ---------------------------------------------------------------


def drain(pool: PoolState, fraction: Fraction, at: int) -> int:
    """Other suppliers withdraw ``fraction`` of the pool's supply (never what the pool's
    own holders have): from each market in proportion; borrowers repay what the market's
    cash cannot give. Returns the amount that left."""
    remember(pool, at)  # the pool before: the peak the TVL drop is measured from
    others = max(pool.total_supply() - value_of(pool, pool.scaled_supply), 0)
    leaving = min(pool.total_supply() * fraction.numerator // fraction.denominator, others)
    left = 0
    for market, part in zip(pool.markets, spread(pool.markets, -leaving), strict=True):
        take = min(-part, market.supply)
        market.supply -= take
        market.borrows = min(market.borrows, market.supply)
        left += take
    remember(pool, at)
    return left


def lose(pool: PoolState, fraction: Fraction, at: int) -> int:
    """The pool loses ``fraction`` of its assets to bad debt: loans of that size are
    written off, and every supplier's value (the liquidity index) falls pro rata. Returns
    the amount lost."""
    remember(pool, at)  # the share price before the loss
    keep = 1 - fraction
    lost = 0
    for market in pool.markets:
        loss = market.supply * fraction.numerator // fraction.denominator
        market.supply -= loss
        market.borrows = max(market.borrows - loss, 0)
        lost += loss
    pool.liquidity_index = pool.liquidity_index * keep.numerator // keep.denominator
    remember(pool, at)
    return lost


def switch(pool: PoolState, at: int, supply: bool | None, withdraw: bool | None) -> None:
    """Sets the pool's supply and withdrawal switches (None: as it is) and remembers the
    pool as they leave it."""
    if supply is not None:
        pool.supply_paused = supply
    if withdraw is not None:
        pool.withdraw_paused = withdraw
    remember(pool, at)


def rewards_owed(pool: PoolState, scaled: int, snapshot: int) -> int:
    """Reward units earned by ``scaled`` units since the reward index was ``snapshot``."""
    return scaled * (pool.reward_index - snapshot) // RAY


def copy_pool(pool: PoolState) -> PoolState:
    """A deep copy, for quoting or projecting without touching the original."""
    return replace(pool, markets=[replace(m) for m in pool.markets])
