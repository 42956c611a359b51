"""What a chain reads of a pool for its risk guards, and the states the guards give a pool.

A ``PoolReading`` is the pool now (a ``Snapshot``), its recent history and the price feeds
of the collateral it lends against; ``domain.risk.guards`` judges it. ``RiskState`` is
what a verdict lets a pool do: the standing a pool's record keeps between judgements.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from yieldagent.domain.market.history import Snapshot


class RiskState(StrEnum):
    """What a pool may do, least strict first."""

    OK = "ok"
    NO_NEW_FUNDS = "no_new_funds"
    EXIT = "exit"


@dataclass(frozen=True, slots=True)
class CollateralFeed:
    """A price feed of a collateral a pool lends against, and the price it is pegged to,
    in one fixed-point scale (a feed's own, 8 decimals for most)."""

    token: str
    price: int
    peg: int
    updated_at: int | None = None
    """When the feed last answered (unix seconds); None where the chain keeps the feed
    current (the simulator)."""
    readable: bool = True
    """False: the feed could not be read (``price`` then means nothing)."""

    def stale(self, now: int, max_age: int) -> bool:
        """Whether the feed cannot vouch for its price at ``now``: unreadable, or its
        last answer older than ``max_age`` seconds."""
        if not self.readable:
            return True
        return self.updated_at is not None and now - self.updated_at > max_age


@dataclass(frozen=True, slots=True)
class PoolReading:
    """What the chain port read of one pool for its guards: the present and its history."""

    protocol: str
    now: Snapshot
    history: tuple[Snapshot, ...] = ()
    """Earlier snapshots, oldest first (``history.recorded``); ``now`` need not be among
    them."""
    collateral: tuple[CollateralFeed, ...] = ()

    @property
    def cash(self) -> int:
        """What the pool can pay out now."""
        return max(self.now.tvl - self.now.borrows, 0)
