"""A wallet's APR: the time-weighted return over a period, annualized.

The wallet's history is a list of **performance points**: at a moment, the wallet's
value just before any flow, and the net flow then (a deposit adds, a withdrawal takes
away). Points are recorded at every deposit and withdrawal and periodically between.

- The period is split into **sub-periods** at every flow. Each one starts from the
  value right after a flow (its ``initial_value``) and ends at the value just before
  the next flow (or the period's end); its ``return_`` is ``end ÷ initial − 1``.
- The returns are **chained**: ``R = Π(1 + return_) − 1``, so deposits and withdrawals
  do not count as performance.
- The result is **annualized** simply: ``apr = R × (365 days ÷ span) × 100``, in percent.

Where the period starts and ends:
- ``start``: the first performance point at or after ``start_date`` (by default the
  first one: the activation).
- ``end`` without ``end_date``: now, valued live on the chain.
- ``end_date`` with ``use_exact_end_date`` false: the last performance point at or
  before it.
- ``end_date`` with ``use_exact_end_date`` true: exactly ``end_date``, valued live when
  it is now or later, else interpolated at a constant rate between the points around it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, localcontext
from itertools import islice
from operator import attrgetter

YEAR_SECONDS = 365 * 24 * 3600
_AT = attrgetter("at")


@dataclass(frozen=True, slots=True)
class PerformancePoint:
    """The wallet's value just before any flow at ``at``, and the net flow then."""

    at: datetime
    value: int
    flow: int = 0

    @property
    def after(self) -> int:
        """The value right after the flow."""
        return self.value + self.flow


@dataclass(frozen=True, slots=True)
class SubPeriod:
    """A span without flows and its simple return."""

    start: datetime
    end: datetime
    initial_value: int
    final_value: int

    @property
    def return_(self) -> float:
        """``final ÷ initial − 1``."""
        return self.final_value / self.initial_value - 1


@dataclass(frozen=True, slots=True)
class AprResult:
    """The annualized return in percent, and the sub-periods it chains."""

    apr: float
    sub_periods: tuple[SubPeriod, ...]


def interpolate(before: PerformancePoint, after: PerformancePoint, at: datetime) -> int:
    """The value at ``at`` between two points, growing at a constant rate from the value
    after ``before``'s flow to the value at ``after``."""
    start, end = before.after, after.value
    total = (after.at - before.at).total_seconds()
    if start <= 0 or end <= 0 or total <= 0 or at <= before.at:
        return start
    if at >= after.at:
        return end
    fraction = Decimal((at - before.at).total_seconds()) / Decimal(total)
    with localcontext() as context:
        context.prec = 80
        return int(Decimal(start) * (Decimal(end) / Decimal(start)) ** fraction)


def time_weighted_apr(points: Sequence[PerformancePoint]) -> AprResult:
    """Chains and annualizes the return over ``points`` (the period's first to last).

    Linear in the points (once in time order, as the books keep them): a sub-period closes
    only at a flow or at the last point, so only those are visited one by one."""
    ordered = sorted(points, key=_AT)
    if len(ordered) < 2:
        return AprResult(0.0, ())
    last = ordered[-1]
    periods: list[SubPeriod] = []
    opened = ordered[0]
    for point in [p for p in islice(ordered, 1, None) if p.flow != 0 or p is last]:
        if opened.after > 0:
            periods.append(SubPeriod(opened.at, point.at, opened.after, point.value))
        opened = point
    growth = 1.0
    for period in periods:
        growth *= 1 + period.return_
    span = (last.at - ordered[0].at).total_seconds()
    apr = (growth - 1) * YEAR_SECONDS / span * 100 if span > 0 else 0.0
    return AprResult(apr, tuple(periods))
