"""The clock port: wall time, a monotonic clock, and sleeping.

The domain reads time and waits only through this port, so it does no I/O of its own
and tests can drive time. ``yieldagent.composition.clock.SystemClock`` is the real one.
"""

from __future__ import annotations

from typing import Protocol


class Clock(Protocol):
    """Time as the domain sees it."""

    def time(self) -> float:
        """Wall-clock unix time in seconds (lease deadlines, schedules)."""

    def monotonic(self) -> float:
        """A clock that never goes back (waiting bounds)."""

    async def sleep(self, seconds: float) -> None:
        """Waits ``seconds`` without blocking other tasks."""
