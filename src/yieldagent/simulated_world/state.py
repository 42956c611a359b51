"""The simulated world's state: its pools and their markets, a holder's position, a mined
transaction, the stored clock, and the one refusal of the market.

The simulator (``chain.simulated``) computes with these values and its store
(``storage.simulation``) keeps them; they are plain data, and the rules that move them
(accrual, borrow demand, supply and withdrawal) stay in ``chain.simulated.pools``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from yieldagent.domain.market.history import Snapshot
from yieldagent.domain.market.rate_models import RateModel, model_for
from yieldagent.simulated_world.clock import SimClock


class MarketError(ValueError):
    """An action the market cannot carry out (not enough funds or liquidity)."""


@dataclass(slots=True)
class MarketState:
    """One lending market: what is supplied and borrowed, and where demand pulls."""

    name: str
    supply: int
    borrows: int
    rate_at_target: int
    mean_utilization: float
    target_utilization: float

    @property
    def held(self) -> int:
        """What the pool holds of the market: all of it (a simulated market lends for one
        pool only)."""
        return self.supply

    def cash(self) -> int:
        """What can be withdrawn from the market now."""
        return max(self.supply - self.borrows, 0)


@dataclass(slots=True)
class PoolState:
    """A pool an agent supplies to, and the markets it lends through."""

    chain_id: int
    protocol: str
    token: str
    kind: str
    fee: int
    liquidity_index: int
    scaled_supply: int
    markets: list[MarketState]
    updated_at: int
    next_step: int
    reward_token: str | None = None
    reward_rate: int = 0
    reward_index: int = 0
    supply_paused: bool = False
    withdraw_paused: bool = False
    history: tuple[Snapshot, ...] = ()
    """Snapshots of the pool, oldest first (``snapshot_of``)."""
    model: RateModel = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.model = model_for(self.kind)

    def total_supply(self) -> int:
        """Underlying supplied to the pool's markets, interest included."""
        return sum(m.supply for m in self.markets)

    def cash(self) -> int:
        """What can be withdrawn from the pool now."""
        return sum(m.cash() for m in self.markets)

    def borrows(self) -> int:
        """Underlying lent out of the pool's markets."""
        return sum(m.borrows for m in self.markets)


@dataclass(slots=True)
class ScaledPosition:
    """A holder's position in a pool: its scaled units and what it has earned of the pool's
    rewards. ``stored`` tells whether the store holds it yet (a zero one does not)."""

    pool_id: int
    holder: str
    scaled: int
    reward_snapshot: int
    rewards_owed: int
    stored: bool = True


@dataclass(frozen=True, slots=True)
class MinedTx:
    """A mined simulated transaction."""

    tx_hash: str
    chain_id: int
    block_number: int
    timestamp: int
    sequence: int
    """Its number in the simulated world: what orders the transactions of one block."""
    kind: str
    token: str
    sender: str
    recipient: str
    amount: int
    token_out: str | None = None
    amount_out: int | None = None


@dataclass(frozen=True, slots=True)
class WorldClock:
    """The stored clock: seed, genesis time and the simulated clock itself."""

    seed: int
    genesis: int
    clock: SimClock
    sequence: int
