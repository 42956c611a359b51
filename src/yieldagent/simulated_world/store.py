"""The store port of the simulated world: units of work on its clock, pools, positions,
balances, price feeds and transactions.

``storage.simulation.SimulationStore`` implements it in the service's database. A write
unit is serialized with every other one, across processes, and commits at its end; a read
unit sees committed state and takes no lock. Pools a unit returns are written back through
the same unit (``save_pool``, ``pool_id`` and ``position`` know them by the read).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from yieldagent.simulated_world.clock import SimClock
from yieldagent.simulated_world.state import MinedTx, PoolState, ScaledPosition, WorldClock


class WorldUnit(Protocol):
    """One unit of work on the simulated world."""

    # clock

    def clock(self) -> WorldClock | None:
        """The stored clock; None before genesis."""

    def set_clock(self, clock: SimClock) -> None:
        """Stores a re-anchored clock."""

    def next_sequence(self) -> int:
        """A new transaction number, unique in the simulated world."""

    def take_sequences(self, count: int) -> None:
        """Takes ``count`` transaction numbers at once: those after the stored sequence that
        ``clock`` read."""

    # pools and positions

    def pools(self, chain_id: int | None = None, token: str | None = None) -> list[PoolState]:
        """Pools, optionally of one chain and token, in a stable order."""

    def save_pool(self, pool: PoolState) -> None:
        """Writes back a pool read through ``pools`` in this unit."""

    def add_pool(self, pool: PoolState) -> None:
        """Records a new pool."""

    def pool_id(self, pool: PoolState) -> int:
        """The stored id of a pool read through ``pools`` in this unit."""

    def position(self, pool: PoolState, holder: str) -> ScaledPosition:
        """``holder``'s position in ``pool`` (a zero one, not stored, if there is none)."""

    def save_position(self, position: ScaledPosition) -> None:
        """Writes a position back."""

    def scaled_positions(self, chain_id: int, token: str, holder: str) -> dict[str, int]:
        """``holder``'s scaled units per protocol, in the pools of ``token``."""

    def scaled_positions_of(
        self, chain_id: int, token: str, holders: Sequence[str]
    ) -> dict[str, dict[str, int]]:
        """Each of ``holders``' scaled units per protocol, in the pools of ``token``
        (holders without a position are left out)."""

    def holders_of(self, pool: PoolState) -> dict[str, int]:
        """Every holder's scaled units in ``pool`` (read through ``pools``), by holder."""

    def holdings(
        self, pools: Sequence[PoolState], holders: Sequence[str]
    ) -> dict[tuple[int, str], ScaledPosition]:
        """The stored positions of ``holders`` in ``pools`` (read through ``pools`` in this
        unit), by (pool id, holder)."""

    def save_holdings(self, holdings: Iterable[ScaledPosition]) -> None:
        """Writes positions back, new and stored ones alike."""

    # price feeds

    def prices(self, chain_id: int) -> dict[str, tuple[int, int]]:
        """Each price feed of ``chain_id`` set so far: (price, peg) by token symbol."""

    def set_price(self, chain_id: int, symbol: str, price: int, peg: int) -> None:
        """Sets a price feed."""

    def sequencer(self, chain_id: int) -> tuple[bool, int] | None:
        """The chain's sequencer uptime feed, (up, since when), once a scenario set it;
        None: the chain shows none."""

    def set_sequencer(self, chain_id: int, up: bool, since: int) -> None:
        """Sets the chain's sequencer uptime feed."""

    # balances and transactions

    def balance(self, chain_id: int, token: str, holder: str) -> int:
        """``holder``'s balance of ``token``."""

    def balances(self, chain_id: int, token: str, holders: Sequence[str]) -> dict[str, int]:
        """Each of ``holders``' balance of ``token`` (absent: none)."""

    def credit(self, chain_id: int, token: str, holder: str, delta: int) -> None:
        """Adds ``delta`` (negative: debits); MarketError if the balance would go negative."""

    def balances_of(
        self, chain_id: int, tokens: Collection[str], holders: Sequence[str]
    ) -> dict[tuple[str, str], int]:
        """The stored balances of ``holders`` in ``tokens``, by (token, holder)."""

    def save_balances(
        self,
        chain_id: int,
        amounts: Mapping[tuple[str, str], int],
        stored: Collection[tuple[str, str]],
    ) -> None:
        """Writes balances by (token, holder): those not in ``stored`` (what
        ``balances_of`` found) are new."""

    def record(self, transaction: MinedTx) -> None:
        """Records a mined transaction."""

    def record_many(self, transactions: Sequence[MinedTx]) -> None:
        """Records mined transactions at once."""

    def transactions_of(self, chain_id: int, holder: str, since_block: int) -> list[MinedTx]:
        """Transactions sending from or to ``holder`` from ``since_block`` on, in order."""

    def transactions_of_many(
        self, chain_id: int, holders: Sequence[str], since_block: int
    ) -> dict[str, list[MinedTx]]:
        """``transactions_of`` each of ``holders`` (each one a key)."""

    def transaction(self, tx_hash: str) -> MinedTx | None:
        """The transaction with this hash, if any."""


class WorldStore(Protocol):
    """Opens units of work on the simulated world."""

    def reading(self) -> AbstractContextManager[WorldUnit]:
        """A read-only unit: sees committed state, takes no lock."""

    def writing(self) -> AbstractContextManager[WorldUnit]:
        """A write unit, serialized with every other one; commits at the end."""

    def create_world(
        self, seed: int, genesis: int, clock: SimClock, pools: list[PoolState]
    ) -> bool:
        """Records the world at genesis; False if another process already did."""
