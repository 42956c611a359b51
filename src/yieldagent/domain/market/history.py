"""A pool's recent readings: what the TVL-drop, utilisation, past-pause and loss guards
compare the present with.

The history is small and bounded: one snapshot per reading interval (the simulator takes
one per step, an hour; the survey remembers one per ``interval`` of the window for a chain
read only at its head, and one whenever a switch flips), none older than the guards'
window, at most ``MAX_SNAPSHOTS``.
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


def interval(window_seconds: int) -> int:
    """How far apart the survey remembers a pool's snapshots: the window over
    ``MAX_SNAPSHOTS``, so the history spans the whole window (30 minutes for a day)."""
    return max(window_seconds // MAX_SNAPSHOTS, 1)


def remembered(
    history: tuple[Snapshot, ...], snapshot: Snapshot, window_seconds: int
) -> tuple[Snapshot, ...]:
    """``history`` with ``snapshot`` added when it is due: none yet, an ``interval`` since
    the last, or a switch flipped since (a pause between readings is not lost). Else
    ``history`` itself, so a pool read every few seconds is stored every half hour."""
    if history:
        last = history[-1]
        switches = (last.supply_paused, last.withdraw_paused, last.frozen)
        flipped = switches != (snapshot.supply_paused, snapshot.withdraw_paused, snapshot.frozen)
        if snapshot.at - last.at < interval(window_seconds) and not flipped:
            return history
    return recorded(history, snapshot, window_seconds)
