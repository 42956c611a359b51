"""What the simulated market shows the risk guards, and the scenarios that trip them.

**Readings.** Each pool as its guards read it: the present (supply, borrows, liquidity
index, switches), its recent history (``pools.remember``) and the price feeds of the
collateral its markets lend against (a market named ``cbBTC/USDC 86%`` lends against
cbBTC; the single-market pools name no collateral).

**Scenarios** a partner or a test provokes (``yieldagent sim …``), each stored in one unit
of the simulated world at the current simulated time: switches (supply or withdrawals
paused), a drain (other suppliers leave), a loss (bad debt written off: each holder's
share is noted in its history, ``SimulatedMarket.note_loss``), a price feed, and the
chain's L2 sequencer going down or back up (its uptime feed, which a chain shows once a
scenario has switched it).
A feed's peg is the collateral's reference price (``REFERENCE_USD``), or the first price
set for a token without one.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING

from yieldagent.chain.simulated.pools import (
    advance,
    drain,
    lose,
    snapshot_of,
    switch,
    value_of,
)
from yieldagent.domain.errors import InvalidRequest
from yieldagent.domain.market.readings import CollateralFeed, PoolReading, SequencerStatus
from yieldagent.simulated_world.state import PoolState

if TYPE_CHECKING:
    from yieldagent.chain.simulated.market import SimulatedMarket
    from yieldagent.simulated_world.store import WorldUnit

PRICE_DECIMALS = 8
"""A feed's decimals, as Chainlink's USD feeds have."""
REFERENCE_USD = {"cbBTC": "95000", "WETH": "3500", "wstETH": "4200", "USDC": "1", "USDT": "1"}
"""What each collateral's feed is pegged to (or quoted at) until a scenario moves it."""

WHAT = ("supply", "withdraw", "all")
"""What a pause stops."""


def collateral_of(market_name: str) -> str | None:
    """The collateral a market lends against, from its name (``cbBTC/USDC 86%``)."""
    head, slash, _ = market_name.partition("/")
    return head if slash else None


def readings(
    pools: Sequence[PoolState],
    prices: dict[str, tuple[int, int]],
    at: int,
    sequencer: SequencerStatus | None = None,
) -> list[PoolReading]:
    """The pools, projected to ``at``, as their guards read them, with the chain's
    ``sequencer`` uptime feed if it shows one."""
    found = []
    for pool in pools:
        feeds = []
        for market in pool.markets:
            symbol = collateral_of(market.name)
            if symbol is not None and symbol in prices:
                price, peg = prices[symbol]
                feeds.append(CollateralFeed(symbol, price, peg))
        found.append(
            PoolReading(pool.protocol, snapshot_of(pool, at), pool.history, tuple(feeds), sequencer)
        )
    return found


def _fraction(value: str) -> Fraction:
    try:
        fraction = Fraction(value)
    except (ValueError, ZeroDivisionError):
        raise InvalidRequest(f"fraction must be a number, got {value!r}") from None
    if not 0 < fraction < 1:
        raise InvalidRequest("fraction must be above 0 and below 1")
    return fraction


def _scaled(usd: str) -> int:
    try:
        price = Decimal(usd)
    except ArithmeticError:
        raise InvalidRequest(f"usd must be a number, got {usd!r}") from None
    if not price.is_finite() or price < 0:
        raise InvalidRequest("usd must be a non-negative number")
    return int(price * 10**PRICE_DECIMALS)


class Scenarios:
    """The scenarios of one simulated market."""

    def __init__(self, market: SimulatedMarket) -> None:
        self._market = market

    def _pools(self, unit: WorldUnit, chain_id: int, protocol: str, now: int) -> list[PoolState]:
        """Every pool of ``protocol`` on ``chain_id`` (one per token), brought to ``now``."""
        pools = [p for p in unit.pools(chain_id) if p.protocol == protocol]
        if not pools:
            raise InvalidRequest(f"no {protocol} pool on chain {chain_id}")
        for pool in pools:
            advance(pool, now, self._market.seed)
        return pools

    def _changed(self, unit: WorldUnit, pools: Sequence[PoolState]) -> None:
        for pool in pools:
            unit.save_pool(pool)
        unit.take_sequences(1)  # a new state of the world: projections are read afresh

    def pause(
        self, chain_id: int, protocol: str, what: str, paused: bool = True
    ) -> dict[str, object]:
        """Pauses (or, with ``paused`` False, reopens) supply, withdrawals or both."""
        if what not in WHAT:
            raise InvalidRequest(f"what must be one of {', '.join(WHAT)}")
        supply = paused if what in ("supply", "all") else None
        withdraw = paused if what in ("withdraw", "all") else None
        now = self._market.now()
        with self._market.store.writing() as unit:
            pools = self._pools(unit, chain_id, protocol, now)
            for pool in pools:
                switch(pool, pool.updated_at, supply, withdraw)
            self._changed(unit, pools)
        return {
            "protocol": protocol,
            "supply_paused": pools[0].supply_paused,
            "withdraw_paused": pools[0].withdraw_paused,
        }

    def drain(self, chain_id: int, protocol: str, fraction: str) -> dict[str, object]:
        """Other suppliers withdraw ``fraction`` of each of the protocol's pools."""
        share = _fraction(fraction)
        now = self._market.now()
        with self._market.store.writing() as unit:
            pools = self._pools(unit, chain_id, protocol, now)
            left = {p.token: drain(p, share, p.updated_at) for p in pools}
            self._changed(unit, pools)
        return {
            "protocol": protocol,
            "drained": {token: str(amount) for token, amount in left.items()},
            "tvl": {p.token: str(p.total_supply()) for p in pools},
        }

    def loss(self, chain_id: int, protocol: str, fraction: str) -> dict[str, object]:
        """Each of the protocol's pools loses ``fraction`` of its assets to bad debt."""
        share = _fraction(fraction)
        now = self._market.now()
        with self._market.store.writing() as unit:
            pools = self._pools(unit, chain_id, protocol, now)
            lost = {}
            for pool in pools:
                holders = unit.holders_of(pool)
                before = {h: value_of(pool, scaled) for h, scaled in holders.items()}
                lost[pool.token] = lose(pool, share, pool.updated_at)
                for holder, scaled in sorted(holders.items()):
                    taken = before[holder] - value_of(pool, scaled)
                    if taken > 0:
                        self._market.note_loss(unit, chain_id, pool.token, protocol, holder, taken)
            self._changed(unit, pools)
        return {
            "protocol": protocol,
            "lost": {token: str(amount) for token, amount in lost.items()},
            "tvl": {p.token: str(p.total_supply()) for p in pools},
        }

    def price(self, chain_id: int, symbol: str, usd: str) -> dict[str, object]:
        """Sets the price feed of ``symbol`` (a collateral or token symbol)."""
        price = _scaled(usd)
        with self._market.store.writing() as unit:
            known = unit.prices(chain_id)
            if symbol in known:
                peg = known[symbol][1]
            elif symbol in REFERENCE_USD:
                peg = _scaled(REFERENCE_USD[symbol])
            else:
                peg = price
            unit.set_price(chain_id, symbol, price, peg)
            unit.take_sequences(1)
        return {"token": symbol, "price": str(price), "peg": str(peg), "decimals": PRICE_DECIMALS}

    def sequencer(self, chain_id: int, up: bool) -> dict[str, object]:
        """Takes the chain's L2 sequencer down (``up`` False) or brings it back up, now:
        its uptime feed answers 1 or 0, and ``startedAt`` the current simulated time."""
        now = self._market.now()
        with self._market.store.writing() as unit:
            unit.set_sequencer(chain_id, up, now)
            unit.take_sequences(1)
        return {"chain_id": chain_id, "up": up, "since": now}

    def readings(self, chain_id: int, token: str, protocols: Sequence[str]) -> list[PoolReading]:
        """The pools of ``protocols`` for ``token`` as their guards read them now."""
        wanted = set(protocols)
        pools, prices, now = self._market.guard_inputs(chain_id, token)
        with self._market.store.reading() as unit:
            status = unit.sequencer(chain_id)
        sequencer = None if status is None else SequencerStatus(*status)
        return readings([p for p in pools if p.protocol in wanted], prices, now, sequencer)
