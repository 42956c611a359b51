"""The simulated clock: simulated time as a function of wall-clock time.

``now = anchor + (wall - anchor_wall) * speed``. Nothing ticks: every process that
reads the same anchor agrees on the time, and ``advance`` just moves the anchor.
Speed 0 freezes time (tests); speed 1 is real time; 3600 runs an hour a second.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SimClock:
    """Where simulated time stood at one wall-clock moment, and how fast it runs."""

    anchor: int
    anchor_wall: float
    speed: float

    def now(self, wall: float) -> int:
        """Simulated unix time at wall-clock time ``wall``."""
        return self.anchor + int(max(wall - self.anchor_wall, 0.0) * self.speed)

    def advanced(self, seconds: int, wall: float) -> SimClock:
        """This clock moved ``seconds`` ahead, re-anchored at ``wall``."""
        if seconds < 0:
            raise ValueError("the clock only moves forward")
        return SimClock(self.now(wall) + seconds, wall, self.speed)

    def with_speed(self, speed: float, wall: float) -> SimClock:
        """This clock running at ``speed`` from ``wall`` on."""
        if speed < 0:
            raise ValueError("speed cannot be negative")
        return SimClock(self.now(wall), wall, speed)
