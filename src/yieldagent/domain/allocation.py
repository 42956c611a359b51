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

Yield curves are not concave: where the wallet's change of position takes a market of
the pool across a kink of its rate model, or fills it, the curve bends, and a narrow peak
(the whole pool at its highest rate) can sit between two points of any grid. The search
knows where the bends are (``Candidate.bends``), and for a given S:

1. **Global search.** Funds start at the lower bounds; the rest is spread by dynamic
   programming over the protocols, each at a point of a grid of about GRID steps, at a
   bend, or across a piece of its curve too narrow for the grid; one protocol (the
   *sink*) takes the exact rest. On kinked curves every protocol of a small S is tried as
   the sink. Exact on these points whatever the curves' shapes.
2. **Refinement.** From the best allocations found (STARTS of them on kinked curves),
   ever smaller amounts move from the protocol with the lowest marginal yield to the one
   with the highest, down to single units.

Every S is tried when there are at most ``EXHAUSTIVE_UP_TO`` optional protocols; beyond,
the nested supports (the forced protocols plus the k most attractive others, for every k).
The best one wins. No feasible S raises InvalidRequest: a constraint is never silently
broken. The tests hold the result within 0.01% of a brute-force optimum on random
instances, kinked ones included.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations, pairwise

from yieldagent.domain.constraints import Constraints
from yieldagent.domain.errors import InvalidRequest
from yieldagent.domain.quotes import PoolQuote

MOVES_PER_STEP = 8
"""Refinement moves at one step size before halving it."""
GRID = 32
"""The global search spreads the budget in this many steps; refinement then halves them."""
STARTS = 3
"""Refinement starts from this many of the global search's best allocations: near a sharp
peak the best one on its points need not be the one that climbs highest."""
EVERY_SINK_UP_TO = 6
"""On kinked curves, supports of up to this many protocols try each one as the sink."""
PIECE_POINTS = 8
"""The global search looks at this many points across a piece of a yield curve (between two
bends) narrower than as many steps of its grid."""


@functools.lru_cache(maxsize=1024)
def _exact(ratio: float) -> tuple[int, int]:
    """A ratio as written (0.05 is exactly 1/20), for exact amounts: numerator, denominator."""
    exact = Fraction(str(ratio))
    return exact.numerator, exact.denominator


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

    def bends(self) -> list[int]:
        """The holdings at which the yield curve bends (a market of the pool reaches a kink
        of its rate model or fills up): its peaks and troughs lie there."""
        return [self.current + delta for delta in self.quote.kinks() if self.current + delta > 0]


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
        numerator, denominator = _exact(rules.max_ratio[name])
        cap = min(cap, total * numerator // denominator)
    low = max(rules.min_position, rules.min_amount.get(name, 0))
    if rules.min_protocols > 1:
        numerator, denominator = _exact(rules.min_fraction)
        low = max(low, -(-total * numerator // denominator))
    return Bounds(low, cap)


class _Yields:
    """Yearly yields of candidates, remembered: the search asks for the same points often."""

    def __init__(self, candidates: Mapping[str, Candidate]) -> None:
        self._candidates = candidates
        self._known: dict[tuple[str, int], float] = {}
        self._bends: dict[str, list[int]] = {}

    def bends(self, name: str) -> list[int]:
        """The candidate's bends (see ``Candidate.bends``)."""
        found = self._bends.get(name)
        if found is None:
            found = self._bends[name] = self._candidates[name].bends()
        return found

    def __call__(self, name: str, amount: int) -> float:
        key = (name, amount)
        found = self._known.get(key)
        if found is None:
            found = self._known[key] = self._candidates[name].yearly_yield(amount)
        return found


def _off_grid(name: str, yields: _Yields, bounds: Bounds, step: int, units: int) -> list[int]:
    """Where one protocol may sit in the global search besides the grid's points: its cap,
    the curve's bends between its bounds, and PIECE_POINTS points across every piece of the
    curve narrower than that many steps. A piece of a kinked curve, and the peak in it, can
    be narrower than a step: so the search sees it."""
    low, cap = bounds.low, min(bounds.cap, bounds.low + units * step)
    marks = sorted({low, cap, *(bend for bend in yields.bends(name) if low < bend < cap)})
    amounts = set(marks)
    for start, end in pairwise(marks):
        if end - start < PIECE_POINTS * step:
            amounts.update(
                start + (end - start) * i // PIECE_POINTS for i in range(1, PIECE_POINTS)
            )
    return sorted(a for a in amounts if (a - low) % step)


def _options(
    name: str, yields: _Yields, bounds: Bounds, step: int, units: int
) -> list[tuple[int, int, float]]:
    """Where one protocol may sit in the global search, as (grid steps it takes, amount,
    yearly yield): the grid's points and ``_off_grid``'s, which take the steps that cover
    them."""
    low, cap = bounds.low, min(bounds.cap, bounds.low + units * step)
    amounts = sorted({*range(low, cap + 1, step), *_off_grid(name, yields, bounds, step, units)})
    return [(-(-(a - low) // step), a, yields(name, a)) for a in amounts]


@dataclass(frozen=True, slots=True)
class _Seed:
    """A starting point for refinement: an allocation, its yearly yield, its grid's step."""

    value: float
    allocation: dict[str, int]
    step: int

    def rank(self) -> tuple[float, tuple[int, ...]]:
        return self.value, tuple(self.allocation.values())


def _seeds(
    support: Sequence[str],
    yields: _Yields,
    bounds: Mapping[str, Bounds],
    placed: int,
    kinked: bool,
) -> list[_Seed]:
    """A global search for where ``placed`` in all should go over ``support``: for a *sink*
    protocol, dynamic programming over the others, each at one of its ``_options`` (about
    GRID steps of what lies above the lower bounds, a power of two so that supports share
    points), the sink taking the exact rest (see ``_sink_seeds``). Exact on these points
    whatever the shape of the yield curves (kinked rate models make them non-concave). The
    sink is the protocol with the most room; on kinked curves, every protocol of a small
    support in turn, as the others' points off the grid are judged well only where the
    sink takes what they leave. Returns the STARTS best allocations found."""
    budget = placed - sum(bounds[n].low for n in support)
    step = 1 << (max(budget // GRID, 1).bit_length() - 1)
    if kinked and len(support) <= EVERY_SINK_UP_TO:
        sinks = list(support)
    else:
        sinks = [max(support, key=lambda n: (bounds[n].cap - bounds[n].low, n))]
    found = {
        tuple(a[n] for n in support): _Seed(_value(a, yields), {n: a[n] for n in support}, step)
        for sink in sinks
        for a in _sink_seeds(sink, support, yields, bounds, placed, step)
    }
    return sorted(found.values(), key=_Seed.rank, reverse=True)[:STARTS]


def _sink_seeds(
    sink: str,
    support: Sequence[str],
    yields: _Yields,
    bounds: Mapping[str, Bounds],
    placed: int,
    step: int,
) -> list[dict[str, int]]:
    """For every split of the steps between the sink and the others: the others' best by
    dynamic programming, the sink taking the exact rest, or sitting at one of its points
    off the grid (a peak of its curve) with the others taking the rest. What the sink
    cannot take goes where it earns most."""
    others = [n for n in support if n != sink]
    units = (placed - sum(bounds[n].low for n in support)) // step
    best = [0.0] + [-math.inf] * units
    picks: list[list[int]] = []
    choices: list[list[tuple[int, int, float]]] = []
    for name in others:
        options = _options(name, yields, bounds[name], step, units)
        merged = [-math.inf] * (units + 1)
        pick = [0] * (units + 1)
        for k in range(units + 1):
            for index, (j, _, gain) in enumerate(options):
                if j > k:
                    break
                value = best[k - j] + gain
                if value > merged[k]:
                    merged[k], pick[k] = value, index
        best = merged
        picks.append(pick)
        choices.append(options)

    def seed(used: int, held: int | None = None) -> dict[str, int]:
        """The others' best on ``used`` steps; the sink holds ``held``, or else the rest."""
        allocation, k = {}, used
        for name, pick, options in zip(
            reversed(others), reversed(picks), reversed(choices), strict=True
        ):
            j, amount, _ = options[pick[k]]
            allocation[name] = amount
            k -= j
        rest = placed - sum(allocation.values())
        allocation[sink] = min(rest, bounds[sink].cap) if held is None else held
        return _place(allocation, placed, yields, bounds)

    seeds = [seed(used) for used in range(units + 1) if best[used] > -math.inf]
    low = bounds[sink].low
    for amount in _off_grid(sink, yields, bounds[sink], step, units):
        used = units - -(-(amount - low) // step)
        if best[used] > -math.inf:
            seeds.append(seed(used, amount))
    return seeds


def _value(allocation: Mapping[str, int], yields: _Yields) -> float:
    return sum(yields(name, amount) for name, amount in allocation.items())


def _feasible(total: int, support: Sequence[str], bounds: Mapping[str, Bounds]) -> bool:
    """Whether every protocol of ``support`` can hold its minimum, within the total."""
    return all(bounds[n].low <= bounds[n].cap for n in support) and (
        sum(bounds[n].low for n in support) <= total
    )


def _place(
    seed: Mapping[str, int], placed: int, yields: _Yields, bounds: Mapping[str, Bounds]
) -> dict[str, int]:
    """``seed`` topped up to ``placed`` in all: what is left goes where it earns most on
    average, as far as the caps let it."""
    allocation = dict(seed)
    remaining = placed - sum(allocation.values())

    def gain(name: str, amount: int) -> float:
        held = allocation[name]
        return (yields(name, held + amount) - yields(name, held)) / amount

    while remaining > 0:
        open_ = [n for n in allocation if allocation[n] < bounds[n].cap]
        if not open_:
            break
        name = max(open_, key=lambda n: (gain(n, min(remaining, bounds[n].cap - allocation[n])), n))
        amount = min(remaining, bounds[name].cap - allocation[name])
        allocation[name] += amount
        remaining -= amount
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
    if all(bounds[name].low == 0 for name in usable):
        # Without lower bounds the full set is optimal: any smaller set's best allocation is
        # one of its allocations, with zeros.
        supports = [forced + others]
    else:
        supports = _supports(forced, others, rules.min_protocols)
    feasible = [support for support in supports if _feasible(total, support, bounds)]
    if not feasible:
        raise InvalidRequest(
            f"Constraints cannot be met: with {len(usable)} usable protocols, the minimums "
            f"(min_protocols {rules.min_protocols}, min_amount, minimum fraction) do not fit "
            "within the total and the caps"
        )
    if feasible == [[]]:
        return {}
    # On smooth curves a support's best start climbs highest; near the bends of kinked ones,
    # not always. Supports are compared once refined: their grids differ.
    kinked = any(bounds[n].low < bend < bounds[n].cap for n in usable for bend in yields.bends(n))
    starts = [
        seed
        for support in feasible
        if support
        for seed in _seeds(
            support, yields, bounds, min(total, sum(bounds[n].cap for n in support)), kinked
        )[: STARTS if kinked else 1]
    ]
    for start in starts:
        _refine(start.allocation, yields, bounds, start.step)
    best = max(starts, key=lambda s: (_value(s.allocation, yields), *s.allocation.values()))
    return {name: amount for name, amount in best.allocation.items() if amount > 0}


def weighted_apr(allocation: Mapping[str, int], candidates: Sequence[Candidate]) -> float:
    """The allocation's APR in percent, each pool priced after the allocation's own change."""
    total = sum(allocation.values())
    if total == 0:
        return 0.0
    by_name = {c.protocol: c for c in candidates}
    return sum(amount * by_name[name].apr(amount) for name, amount in allocation.items()) / total
