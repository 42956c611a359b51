"""What a chain reads of a pool for its risk guards, and the states the guards give a pool.

A ``PoolReading`` is the pool now (a ``Snapshot``), its recent history, the price feeds
of the collateral it lends against and, on a rollup that has one, its sequencer's uptime
feed (``SequencerStatus``); ``domain.risk.guards`` judges it. ``RiskState`` is
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
class SequencerStatus:
    """A rollup's sequencer as its uptime feed tells it (Chainlink's L2 sequencer uptime
    feed: answer 0 up, 1 down; ``startedAt`` when that status began). While the sequencer
    is down, price feeds stop updating on the chain, and for a while after it comes back
    they may still show old prices."""

    up: bool
    since: int
    """When the status began (unix seconds)."""
    readable: bool = True
    """False: the uptime feed could not be read (``up`` then means nothing)."""

    def distrust(self, now: int, grace: int) -> str | None:
        """Why the chain's price feeds cannot be trusted at ``now``, if they cannot: the
        sequencer down, unreadable, or up for less than ``grace`` seconds."""
        if not self.readable:
            return "the chain's sequencer uptime feed cannot be read"
        if not self.up:
            return "the chain's sequencer is down"
        if now - self.since < grace:
            return f"the chain's sequencer came back up less than {grace} s ago"
        return None


@dataclass(frozen=True, slots=True)
class PoolReading:
    """What the chain port read of one pool for its guards: the present and its history."""

    protocol: str
    now: Snapshot
    history: tuple[Snapshot, ...] = ()
    """Earlier snapshots, oldest first (``history.recorded``); ``now`` need not be among
    them."""
    collateral: tuple[CollateralFeed, ...] = ()
    sequencer: SequencerStatus | None = None
    """The chain's sequencer uptime feed; None on a chain without one."""

    @property
    def cash(self) -> int:
        """What the pool can pay out now."""
        return max(self.now.tvl - self.now.borrows, 0)
