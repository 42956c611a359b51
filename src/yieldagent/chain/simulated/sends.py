"""Many supplies and withdrawals in one unit of the simulated world's store.

A ``SendBatch`` reads at once what its sends involve (the pools of their tokens, the
holders' balances and positions), applies each send in memory with the pool math of the
single writes, and writes back only what changed, a few statements for the lot. A send
the market refuses changes nothing; the ones after it still go.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from yieldagent.chain.simulated.pools import (
    advance,
    deposit,
    rewards_owed,
    value_of,
    withdraw,
)
from yieldagent.domain.ports.chain import Send
from yieldagent.simulated_world.state import MarketError, PoolState, ScaledPosition
from yieldagent.simulated_world.store import WorldUnit


class SendBatch:
    """The state a batch of sends on one chain reads and changes, in memory."""

    def __init__(
        self, unit: WorldUnit, chain_id: int, sends: Sequence[Send], now: int, seed: int
    ) -> None:
        self._unit = unit
        self._chain_id = chain_id
        self._now = now
        self._seed = seed
        tokens = {send.token for send in sends}
        holders = list(dict.fromkeys(send.holder for send in sends))
        self._pools = {
            (pool.protocol, pool.token): pool
            for pool in unit.pools(chain_id)
            if pool.token in tokens
        }
        self._pool_ids = {key: unit.pool_id(pool) for key, pool in self._pools.items()}
        self._advanced: set[tuple[str, str]] = set()
        self._stored_balances = unit.balances_of(chain_id, tokens, holders)
        self._balances = dict(self._stored_balances)
        self._holdings = unit.holdings(list(self._pools.values()), holders)
        self._changed_pools: dict[tuple[str, str], PoolState] = {}
        self._changed_balances: set[tuple[str, str]] = set()
        self._changed_holdings: set[tuple[int, str]] = set()

    def _pool(self, protocol: str, token: str) -> tuple[PoolState, int]:
        """The pool at the batch's moment, and its id, as ``SimulatedMarket._pool`` finds it."""
        key = (protocol, token)
        pool = self._pools.get(key)
        if pool is None:
            raise MarketError(f"no {protocol} pool for {token} on chain {self._chain_id}")
        if key not in self._advanced:
            advance(pool, self._now, self._seed)
            self._advanced.add(key)
        return pool, self._pool_ids[key]

    def _holding(self, pool: PoolState, pool_id: int, holder: str) -> ScaledPosition:
        """The holder's position (a zero one, not stored, if none is): a copy to change."""
        held = self._holdings.get((pool_id, holder))
        if held is None:
            return ScaledPosition(pool_id, holder, 0, pool.reward_index, 0, stored=False)
        return ScaledPosition(
            pool_id, holder, held.scaled, held.reward_snapshot, held.rewards_owed, held.stored
        )

    def _keep(self, pool: PoolState, held: ScaledPosition) -> None:
        key = (held.pool_id, held.holder)
        self._holdings[key] = held
        self._changed_holdings.add(key)
        self._changed_pools[(pool.protocol, pool.token)] = pool

    def _credit(self, token: str, holder: str, amount: int) -> None:
        self._balances[(token, holder)] = self._balances.get((token, holder), 0) + amount
        self._changed_balances.add((token, holder))

    def supply(self, holder: str, protocol: str, token: str, amount: int) -> None:
        """``SimulatedMarket.supply``, in memory; MarketError (and nothing changed) if refused."""
        pool, pool_id = self._pool(protocol, token)
        current = self._balances.get((token, holder), 0)
        if current - amount < 0:
            raise MarketError(f"insufficient balance: {holder} holds {current} of {token}")
        held = self._holding(pool, pool_id, holder)
        checkpoint_rewards(pool, held)
        held.scaled += deposit(pool, amount)
        self._credit(token, holder, -amount)
        self._keep(pool, held)

    def withdraw(self, holder: str, protocol: str, token: str, amount: int, whole: bool) -> int:
        """``SimulatedMarket.withdraw``, in memory; with ``whole``, of the position's whole
        value now. Returns the amount withdrawn; MarketError (and nothing changed) if refused."""
        pool, pool_id = self._pool(protocol, token)
        held = self._holding(pool, pool_id, holder)
        if whole:
            amount = value_of(pool, held.scaled)
        checkpoint_rewards(pool, held)
        held.scaled -= withdraw(pool, amount, held.scaled)
        self._credit(token, holder, amount)
        self._keep(pool, held)
        return amount

    def save(self) -> None:
        """Writes back the pools, positions and balances the batch changed."""
        for pool in self._changed_pools.values():
            self._unit.save_pool(pool)
        self._unit.save_holdings(self._holdings[key] for key in self._changed_holdings)
        self._unit.save_balances(
            self._chain_id,
            {key: self._balances[key] for key in self._changed_balances},
            self._stored_balances,
        )


class _Position(Protocol):
    scaled: int
    reward_snapshot: int
    rewards_owed: int


def checkpoint_rewards(pool: PoolState, position: _Position) -> None:
    """Credits ``position`` with the rewards it earned up to the pool's moment."""
    position.rewards_owed += rewards_owed(pool, position.scaled, position.reward_snapshot)
    position.reward_snapshot = pool.reward_index
