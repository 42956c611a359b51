"""Where a wallet's funds should sit: the allocation that earns the most, net of our own
rate impact, within the wallet's constraints.

Each protocol's yearly yield on an amount ``a`` is ``a × apr(a − current)``: the pool's
rate after our change of position. The constraints define, for a set S of protocols the
funds are spread over:

- every protocol of S holds at least ``lo = max(min_fraction × total if min_protocols
  is set, min_amount (no position below it), its own min_allocation_amount)``, and at
  most ``cap = min(total, max_allocation_amount, max_ratio × total)``;
- S has at least ``min_protocols`` members and includes every protocol with a
  ``min_allocation_amount``; excluded protocols are never in S;
- what S cannot take (all caps reached) stays idle.

For a given S, funds start at the lower bounds and the rest is spread by a global
search on a grid (dynamic programming over the protocols, exact on the grid even where
kinked rate models make the yield curves non-concave), then refined by moving ever
smaller amounts from the protocol with the lowest marginal yield to the one with the
highest. Every S is tried when there are at most
``EXHAUSTIVE_UP_TO`` optional protocols; beyond, the nested supports (the forced
protocols plus the k most attractive others, for every k). The best one wins. No
feasible S raises InvalidRequest: a constraint is never silently broken.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations

from yieldagent.domain.constraints import Constraints
from yieldagent.domain.errors import InvalidRequest
from yieldagent.domain.market import PoolQuote

MOVES_PER_STEP = 8
"""Refinement moves at one step size before halving it."""
GRID = 40
"""The global search spreads the budget in this many steps; refinement then halves them."""


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


@dataclass(frozen=True, slots=True)
class Bounds:
    """The least and the most one protocol may hold, if it is used."""

    low: int
    cap: int


def position_bounds(total: int, name: str, rules: Constraints) -> Bounds:
    cap = total
    if name in rules.max_amount:
        cap = min(cap, rules.max_amount[name])
    if name in rules.max_ratio:
        cap = min(cap, math.floor(total * _exact(rules.max_ratio[name])))
    low = max(rules.min_position, rules.min_amount.get(name, 0))
    if rules.min_protocols > 1:
        low = max(low, math.ceil(total * _exact(rules.min_fraction)))
    return Bounds(low, cap)


class _Yields:
    """Yearly yields of candidates, remembered: the search asks for the same points often."""

    def __init__(self, candidates: Mapping[str, Candidate]) -> None:
        self._candidates = candidates
        self._known: dict[tuple[str, int], float] = {}

    def __call__(self, name: str, amount: int) -> float:
        key = (name, amount)
        found = self._known.get(key)
        if found is None:
            found = self._known[key] = self._candidates[name].yearly_yield(amount)
        return found


def _seed(
    support: Sequence[str], yields: _Yields, bounds: Mapping[str, Bounds], budget: int
) -> tuple[dict[str, int], int]:
    """A global search on a grid: the best way to spread ``budget`` above the lower bounds
    in GRID steps, by dynamic programming over the protocols. Exact on the grid whatever
    the shape of the yield curves (kinked rate models make them non-concave). Returns the
    allocation and the step."""
    step = max(budget // GRID, 1)
    units = budget // step
    best = [0.0] + [-math.inf] * units
    picks: list[list[int]] = []
    for name in support:
        low, cap = bounds[name].low, bounds[name].cap
        most = min(units, (cap - low) // step)
        gains = [yields(name, low + j * step) for j in range(most + 1)]
        merged = [-math.inf] * (units + 1)
        pick = [0] * (units + 1)
        for k in range(units + 1):
            for j in range(min(k, most) + 1):
                value = best[k - j] + gains[j]
                if value > merged[k]:
                    merged[k], pick[k] = value, j
        best = merged
        picks.append(pick)
    k = max(range(units + 1), key=lambda u: (best[u], u))
    allocation = {}
    for name, pick in zip(reversed(support), reversed(picks), strict=True):
        allocation[name] = bounds[name].low + pick[k] * step
        k -= pick[k]
    return allocation, step


def _fill(
    total: int,
    support: Sequence[str],
    yields: _Yields,
    bounds: Mapping[str, Bounds],
) -> dict[str, int] | None:
    """The best allocation over exactly ``support``; None when it cannot be met."""
    if any(bounds[n].low > bounds[n].cap for n in support):
        return None
    lows = sum(bounds[n].low for n in support)
    if lows > total:
        return None
    budget = min(total, sum(bounds[n].cap for n in support)) - lows
    allocation, step = _seed(support, yields, bounds, budget)
    remaining = lows + budget - sum(allocation.values())  # what the grid could not place

    def gain(name: str, amount: int) -> float:
        held = allocation[name]
        return (yields(name, held + amount) - yields(name, held)) / amount

    while remaining > 0:
        open_ = [n for n in support if allocation[n] < bounds[n].cap]
        if not open_:
            break
        name = max(open_, key=lambda n: (gain(n, min(remaining, bounds[n].cap - allocation[n])), n))
        amount = min(remaining, bounds[name].cap - allocation[name])
        allocation[name] += amount
        remaining -= amount
    _refine(allocation, yields, bounds, step)
    return allocation


def _refine(
    allocation: dict[str, int],
    yields: _Yields,
    bounds: Mapping[str, Bounds],
    chunk: int,
) -> None:
    """Moves ever smaller amounts from where they earn least to where they earn most, down
    to single units, so that caps and bounds are met exactly. The global search left the
    allocation within a grid step of the best one, so each step size gets a few moves
    (a flat stretch of a non-concave curve would otherwise be walked unit by unit)."""
    step = chunk
    while step >= 1:
        improved = True
        moves = 0
        while improved and moves < MOVES_PER_STEP:
            improved = False
            moves += 1
            takers = [n for n in allocation if allocation[n] + step <= bounds[n].cap]
            givers = [n for n in allocation if allocation[n] - step >= bounds[n].low]
            if not takers or not givers:
                break
            up = {n: yields(n, allocation[n] + step) - yields(n, allocation[n]) for n in takers}
            down = {n: yields(n, allocation[n]) - yields(n, allocation[n] - step) for n in givers}
            taker = max(up, key=lambda n: (up[n], n))
            giver = min(down, key=lambda n: (down[n], n))
            if taker != giver and up[taker] > down[giver] * (1 + 1e-12):
                allocation[taker] += step
                allocation[giver] -= step
                improved = True
        step //= 2


EXHAUSTIVE_UP_TO = 8
"""Up to this many optional protocols every support is tried; beyond, the nested ones."""


def _supports(forced: list[str], others: list[str], min_protocols: int) -> list[list[str]]:
    """The sets of protocols worth trying: all of them for a few candidates, else the
    forced ones plus the k most attractive others for every k."""
    smallest = max(min_protocols if min_protocols > 1 else 0, len(forced))
    sizes = range(max(smallest - len(forced), 0), len(others) + 1)
    if len(others) <= EXHAUSTIVE_UP_TO:
        return [forced + list(extra) for k in sizes for extra in combinations(others, k)]
    return [forced + others[:k] for k in sizes]


def allocate(total: int, candidates: Sequence[Candidate], rules: Constraints) -> dict[str, int]:
    """The target amount per protocol (zeros left out); the rest of ``total`` stays idle.

    InvalidRequest when the constraints cannot be met together.
    """
    if total <= 0:
        return {}
    usable = {c.protocol: c for c in candidates if c.protocol not in rules.excluded}
    bounds = {name: position_bounds(total, name, rules) for name in usable}
    forced = sorted(name for name in usable if rules.min_amount.get(name, 0) > 0)
    missing = sorted(n for n, amount in rules.min_amount.items() if amount > 0 and n not in usable)
    if missing:
        raise InvalidRequest(
            f"Constraints cannot be met: {', '.join(missing)} must be used but is excluded "
            "or unavailable"
        )
    others = sorted(  # protocols whose own minimum exceeds their cap can never be used
        (n for n in usable if n not in forced and bounds[n].low <= bounds[n].cap),
        key=lambda n: (-usable[n].apr(max(bounds[n].low, 1)), n),
    )
    if rules.min_protocols > 1 and rules.min_protocols > len(usable):
        raise InvalidRequest(
            f"Constraints cannot be met: min_protocols {rules.min_protocols} with "
            f"{len(usable)} usable protocols"
        )
    yields = _Yields(usable)
    best: dict[str, int] | None = None
    best_value = -1.0
    if all(bounds[name].low == 0 for name in usable):
        # Without lower bounds the full set is optimal: any smaller set's best allocation is
        # one of its allocations, with zeros.
        supports = [forced + others]
    else:
        supports = _supports(forced, others, rules.min_protocols)
    for support in supports:
        allocation = _fill(total, support, yields, bounds)
        if allocation is None:
            continue
        value = sum(yields(name, amount) for name, amount in allocation.items())
        if value > best_value:
            best, best_value = allocation, value
    if best is None:
        raise InvalidRequest(
            f"Constraints cannot be met: with {len(usable)} usable protocols, the minimums "
            f"(min_protocols {rules.min_protocols}, min_amount, minimum fraction) do not fit "
            "within the total and the caps"
        )
    return {name: amount for name, amount in best.items() if amount > 0}


def weighted_apr(allocation: Mapping[str, int], candidates: Sequence[Candidate]) -> float:
    """The allocation's APR in percent, each pool priced after the allocation's own change."""
    total = sum(allocation.values())
    if total == 0:
        return 0.0
    by_name = {c.protocol: c for c in candidates}
    return sum(amount * by_name[name].apr(amount) for name, amount in allocation.items()) / total
