"""Where a wallet's funds should sit: the allocation that earns the most, net of our own
rate impact, within the wallet's constraints.

Each protocol's yearly yield on an amount ``a`` is ``a × apr(a − current)``: the pool's
rate after our change of position. Funds are placed in small chunks, each where it
adds the most yield (water-filling on marginal yield). Forced minimums come first:
``min_allocation_amount_per_protocol``, then ``min_protocols`` (the best protocols at
the minimum fraction). Caps (``max_allocation_amount_per_protocol``,
``max_amount_per_protocol``) bound every protocol; what no protocol may take stays idle.
A position below ``min_amount`` is folded into the others.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from yieldagent.domain.constraints import Constraints
from yieldagent.domain.errors import InvalidRequest
from yieldagent.domain.market import PoolQuote

CHUNKS = 400


def _exact(ratio: float) -> Fraction:
    """A ratio as written (0.05 is exactly 1/20), for exact amounts."""
    return Fraction(str(ratio))


@dataclass(frozen=True, slots=True)
class Candidate:
    """A protocol the funds may go to, its pool, and what the wallet holds there now."""

    protocol: str
    quote: PoolQuote
    current: int = 0

    def apr(self, amount: int) -> float:
        """APR in percent if the wallet held ``amount`` here."""
        return self.quote.apr(amount - self.current)

    def yearly_yield(self, amount: int) -> float:
        """Yearly yield in token units if the wallet held ``amount`` here."""
        return amount * self.apr(amount) / 100 if amount > 0 else 0.0


def _caps(total: int, candidates: Sequence[Candidate], rules: Constraints) -> dict[str, int]:
    caps = {}
    for candidate in candidates:
        cap = total
        if candidate.protocol in rules.max_amount:
            cap = min(cap, rules.max_amount[candidate.protocol])
        if candidate.protocol in rules.max_ratio:
            cap = min(cap, math.floor(total * _exact(rules.max_ratio[candidate.protocol])))
        caps[candidate.protocol] = cap
    return caps


def _fill(
    total: int,
    start: dict[str, int],
    candidates: Mapping[str, Candidate],
    caps: Mapping[str, int],
) -> dict[str, int]:
    """Adds what is left of ``total`` to ``start``, chunk by chunk, where it earns most."""
    allocation = dict(start)
    remaining = total - sum(allocation.values())
    chunk = max(total // CHUNKS, 1)

    def gain(name: str) -> tuple[float, int]:
        held = allocation[name]
        step = min(chunk, caps[name] - held, remaining)
        if step <= 0:
            return 0.0, 0
        candidate = candidates[name]
        return candidate.yearly_yield(held + step) - candidate.yearly_yield(held), step

    heap: list[tuple[float, str]] = []
    for name in candidates:
        value, step = gain(name)
        if step > 0:
            heapq.heappush(heap, (-value / step, name))
    while remaining > 0 and heap:
        _, name = heapq.heappop(heap)
        value, step = gain(name)
        if step <= 0:
            continue
        allocation[name] += step
        remaining -= step
        value, step = gain(name)
        if step > 0:
            heapq.heappush(heap, (-value / step, name))
    return allocation


def allocate(total: int, candidates: Sequence[Candidate], rules: Constraints) -> dict[str, int]:
    """The target amount per protocol (zeros left out); the rest of ``total`` stays idle.

    InvalidRequest when the constraints cannot be met together.
    """
    usable = {c.protocol: c for c in candidates if c.protocol not in rules.excluded}
    caps = _caps(total, list(usable.values()), rules)
    allocation = dict.fromkeys(usable, 0)
    for name, minimum in rules.min_amount.items():
        if name in usable:
            allocation[name] = min(minimum, caps[name], total - sum(allocation.values()))
    if rules.min_protocols > 1:
        floor = math.ceil(total * _exact(rules.min_fraction))
        eligible = [name for name in usable if caps[name] >= floor]
        if len(eligible) < rules.min_protocols or floor * rules.min_protocols > total:
            raise InvalidRequest(
                f"Constraints cannot be met: min_protocols {rules.min_protocols} at "
                f"{rules.min_fraction:.0%} each, with {len(eligible)} eligible protocols"
            )
        best = sorted(eligible, key=lambda n: (-usable[n].apr(floor), n))[: rules.min_protocols]
        for name in best:
            allocation[name] = max(allocation[name], floor)
        if sum(allocation.values()) > total:
            raise InvalidRequest("Constraints cannot be met: the minimums exceed the total")
    allocation = _fill(total, allocation, usable, caps)
    while rules.min_position:
        small = [n for n, a in allocation.items() if 0 < a < rules.min_position]
        if not small:
            break
        for name in small:
            allocation[name] = 0
            caps = {**caps, name: 0}
        allocation = _fill(total, allocation, usable, caps)
    return {name: amount for name, amount in allocation.items() if amount > 0}


def weighted_apr(allocation: Mapping[str, int], candidates: Sequence[Candidate]) -> float:
    """The allocation's APR in percent, each pool priced after the allocation's own change."""
    total = sum(allocation.values())
    if total == 0:
        return 0.0
    by_name = {c.protocol: c for c in candidates}
    return sum(amount * by_name[name].apr(amount) for name, amount in allocation.items()) / total
