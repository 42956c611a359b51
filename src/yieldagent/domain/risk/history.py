"""A pool's recent readings: what the TVL-drop, utilisation, past-pause and loss guards
compare the present with.

The history is small and bounded: one snapshot per reading interval (the simulator takes
one per step, an hour), none older than the guards' window, at most ``MAX_SNAPSHOTS``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

MAX_SNAPSHOTS = 48
"""The most snapshots a pool's history keeps (two days of hourly readings)."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A pool at one moment, as its guards read it."""

    at: int
    """Unix seconds."""
    tvl: int
    """Underlying supplied to the pool, interest included."""
    borrows: int
    """Underlying lent out of it."""
    share_price: int
    """What one unit of the pool's shares is worth (its liquidity index, exchange rate or
    share price), in the pool's own fixed-point scale; only compared with itself."""
    supply_paused: bool = False
    withdraw_paused: bool = False
    frozen: bool = False

    @property
    def paused(self) -> bool:
        """Any of its switches is on."""
        return self.supply_paused or self.withdraw_paused or self.frozen

    def utilisation_at_least(self, numerator: int, denominator: int) -> bool:
        """Whether borrows are at least ``numerator / denominator`` of the TVL (a pool with
        nothing supplied counts as fully used only when something is borrowed)."""
        if self.tvl <= 0:
            return self.borrows > 0
        return self.borrows * denominator >= self.tvl * numerator


def recorded(
    history: Iterable[Snapshot], snapshot: Snapshot, keep_seconds: int
) -> tuple[Snapshot, ...]:
    """``history`` with ``snapshot`` added, less what is older than ``keep_seconds``
    before it, at most ``MAX_SNAPSHOTS`` (the newest), oldest first. Snapshots of one
    moment are all kept: a pool before and after a sudden change."""
    kept = [s for s in history if snapshot.at - keep_seconds <= s.at <= snapshot.at]
    kept.append(snapshot)
    return tuple(kept[-MAX_SNAPSHOTS:])
