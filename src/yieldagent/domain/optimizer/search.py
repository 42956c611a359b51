"""Where a wallet's funds should sit: the allocation that earns the most, net of our own
rate impact, within the wallet's constraints.

Each protocol's yearly yield on an amount ``a`` is ``a × apr(a − current)``: the pool's
rate after our change of position (see ``curves``). The constraints define, for a set S of
protocols the funds are spread over:

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
2. **Refinement** (``refine``). From the best allocations found (STARTS of them on
   kinked curves), ever smaller amounts move from the protocol with the lowest marginal
   yield to the one with the highest, down to single units.

Every S is tried when there are at most ``EXHAUSTIVE_UP_TO`` optional protocols; beyond,
the nested supports (the forced protocols plus the k most attractive others, for every k).
The best one wins. No feasible S raises InvalidRequest: a constraint is never silently
broken. The tests hold the result within 0.01% of a brute-force optimum on random
instances, kinked ones included.

**Shortcuts** that leave the answer as it is. Protocols whose grid yields are concave
in the steps are spread by a sort of their increments, the result dynamic programming
would reach. As a pool's rate never rises with its supply (a holding earns at most the
rate of a smaller one), the search skips what provably cannot win: a protocol that earns
less on any step than the units-th best increment, a refinement taker whose ceiling is
below the best growth found or the giver's loss, a support whose ceiling is below a
refined start, a seed that cannot rank among the STARTS best, a split whose sink's yield
need not be read (its ceiling leaves it out of the STARTS best; splits are read from the
smallest rest up, so that each ceiling takes the sink's yield per unit on the largest
rest read below its own). On smooth curves, where only the best seed is refined, the
global search keeps only its best split. Refinement scans only the protocols that hold
something, and reuses the yields it read for a move. The curves are read through
``curves.Yields``, which the optimizer then prices its plan with.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations, pairwise

from yieldagent.domain.constraints import Bounds, Constraints, position_bounds
from yieldagent.domain.errors import InvalidRequest
from yieldagent.domain.market.curves import Candidate, Yields
from yieldagent.domain.optimizer.refine import refine

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


def _off_grid(name: str, yields: Yields, bounds: Bounds, step: int, units: int) -> list[int]:
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
    name: str, yields: Yields, bounds: Bounds, step: int, units: int
) -> list[tuple[int, int, float]]:
    """Where one protocol may sit in the global search, as (grid steps it takes, amount,
    yearly yield): the grid's points and ``_off_grid``'s, which take the steps that cover
    them."""
    low, cap = bounds.low, min(bounds.cap, bounds.low + units * step)
    grid = range(low, cap + 1, step)
    off_grid = _off_grid(name, yields, bounds, step, units)
    curve = yields.curve(name)
    if not off_grid:  # the j-th point of the grid takes j steps
        return [(j, a, curve(a)) for j, a in enumerate(grid)]
    amounts = sorted({*grid, *off_grid})
    return [(-(-(a - low) // step), a, curve(a)) for a in amounts]


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
    yields: Yields,
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
    sink takes what they leave. Returns the STARTS best allocations found on kinked curves;
    on smooth ones, where only the best is refined, that one."""
    keep = STARTS if kinked else 1
    budget = placed - sum(bounds[n].low for n in support)
    step = 1 << (max(budget // GRID, 1).bit_length() - 1)
    if kinked and len(support) <= EVERY_SINK_UP_TO:
        sinks = list(support)
    else:
        sinks = [max(support, key=lambda n: (bounds[n].cap - bounds[n].low, n))]
    found = {
        tuple(a[n] for n in support): _Seed(_value(a, yields), {n: a[n] for n in support}, step)
        for sink in sinks
        for a in _sink_seeds(sink, support, yields, bounds, placed, step, keep)
    }
    return sorted(found.values(), key=_Seed.rank, reverse=True)[:keep]


def _sink_seeds(
    sink: str,
    support: Sequence[str],
    yields: Yields,
    bounds: Mapping[str, Bounds],
    placed: int,
    step: int,
    keep: int = STARTS,
) -> list[dict[str, int]]:
    """For every split of the steps between the sink and the others: the others' best by
    dynamic programming, the sink taking the exact rest, or sitting at one of its points
    off the grid (a peak of its curve) with the others taking the rest. What the sink
    cannot take goes where it earns most. On smooth curves, splits that provably cannot
    rank among the ``keep`` best are left out."""
    others = [n for n in support if n != sink]
    units = (placed - sum(bounds[n].low for n in support)) // step
    # Where a protocol's best yield on j steps is concave in j, the best split of k steps
    # over such protocols takes the k largest increments: the same optimum as dynamic
    # programming finds, for a sort. The others go through dynamic programming on top.
    # A protocol whose every step earns less than the smooth ones' units-th best increment
    # takes no step in any split (moving its steps there gains): it stays at its lower bound,
    # and its curve need not be read. Protocols are read best ceiling first.
    smooth: list[tuple[str, list[tuple[int, int, float]], list[int]]] = []
    rugged: list[tuple[str, list[tuple[int, int, float]]]] = []
    idle: list[str] = []
    # the smooth protocols' increments, as (loss, position in smooth, steps): a step's gain
    # is minus its loss (float subtraction is antisymmetric), and the units-th smallest loss
    # gives the units-th best increment, `least_gain`
    increments: list[tuple[float, int, int]] = []
    least_gain = -math.inf
    # ``Yields.ceiling(n, 0, step)``, with room
    reach = step + 1e-12 * step
    ranked = sorted(((reach * yields.per_unit(n, 0) * (1 + 1e-8), n) for n in others), reverse=True)
    for ceiling, name in ranked:
        if len(increments) >= units > 0 and ceiling < least_gain:
            idle.append(name)
            continue
        options = _options(name, yields, bounds[name], step, units)
        tops = _tops(options)
        if tops is None:
            rugged.append((name, options))
            continue
        position = len(smooth)
        smooth.append((name, options, tops))
        yields_on = [options[index][2] for index in tops]  # best yield on j steps
        increments += [
            (before - after, position, j)
            for j, (before, after) in enumerate(pairwise(yields_on), start=1)
        ]
        if len(increments) >= units > 0:
            increments.sort()
            least_gain = -increments[units - 1][0]
    increments.sort()
    best = [0.0] + [-math.inf] * units
    value = best[0] = sum(options[tops[0]][2] for _, options, tops in smooth)
    held = sum(options[tops[0]][1] for _, options, tops in smooth)
    holding = [held]  # what the smooth protocols hold, for k steps in all
    for k, (loss, position, j) in enumerate(increments[:units], start=1):
        value -= loss
        best[k] = value
        _, options, tops = smooth[position]
        held += options[tops[j]][1] - options[tops[j - 1]][1]
        holding.append(held)

    def spread(k: int) -> list[int]:
        """The steps each smooth protocol takes, for k steps in all."""
        counts = [0] * len(smooth)
        for _, position, _ in increments[:k]:
            counts[position] += 1
        return counts

    picks: list[list[int]] = []
    for _, options in rugged:
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

    def seed(used: int, held: int | None = None) -> dict[str, int]:
        """The others' best on ``used`` steps; the sink holds ``held``, or else the rest."""
        allocation, k = {}, used
        for (name, options), pick in zip(reversed(rugged), reversed(picks), strict=True):
            j, amount, _ = options[pick[k]]
            allocation[name] = amount
            k -= j
        for (name, options, tops), count in zip(smooth, spread(k), strict=True):
            allocation[name] = options[tops[count]][1]
        for name in idle:
            allocation[name] = bounds[name].low
        rest = placed - sum(allocation.values())
        allocation[sink] = min(rest, bounds[sink].cap) if held is None else held
        return _place(allocation, placed, yields, bounds)

    splits = [used for used in range(units + 1) if best[used] > -math.inf]
    if not rugged and len(splits) > keep:
        # Only the `keep` best seeds are kept: the others are not built. A seed is worth
        # about its split's yield and the sink's on the rest (exactly, up to float rounding,
        # unless the sink cannot take the rest).
        fixed = sum(bounds[n].low for n in idle)
        base = sum(yields(n, bounds[n].low) for n in idle)
        cap = bounds[sink].cap
        rests = {used: placed - fixed - holding[used] for used in splits}
        finite = [used for used in splits if rests[used] <= cap]
        if len(finite) >= keep:
            # Read from the smallest rest up. A split whose ceiling (``Yields.ceiling``) is
            # below the `keep`-th best worth read, with room, is worth less, and is not read.
            # The sink's yield per unit on a rest read bounds it on any larger rest
            # (``Yields.per_unit``): each ceiling takes the tightest such bound read so far.
            unit = yields.per_unit(sink, 0)
            worth: dict[int, float] = {}
            least: list[float] = []  # a heap of the `keep` best worths read
            sink_curve = yields.curve(sink)
            for used in sorted(finite, key=rests.__getitem__):
                rest = rests[used]
                if len(least) == keep:
                    ceiling = (
                        best[used] + base + ((rest + 1e-12 * rest) * unit if rest > 0 else 0.0)
                    )
                    if ceiling < least[0] - 2e-9 * abs(least[0]):
                        continue
                earned = sink_curve(rest)
                worth[used] = best[used] + base + earned
                if len(least) < keep:
                    heapq.heappush(least, worth[used])
                elif worth[used] > least[0]:
                    heapq.heapreplace(least, worth[used])
                if rest > 0:
                    per_unit = earned / rest  # as Yields.per_unit(sink, rest)
                    unit = min(unit, per_unit * (1 + 1e-9) if per_unit > 0 else math.inf)
            bar = least[0] - 1e-9 * abs(least[0])
            splits = [
                used for used in splits if rests[used] > cap or worth.get(used, -math.inf) >= bar
            ]
    seeds = [seed(used) for used in splits]
    low = bounds[sink].low
    for amount in _off_grid(sink, yields, bounds[sink], step, units):
        used = units - -(-(amount - low) // step)
        if best[used] > -math.inf:
            seeds.append(seed(used, amount))
    return seeds


def _tops(options: Sequence[tuple[int, int, float]]) -> list[int] | None:
    """For each number of steps j (from 0), the index of the option on j steps that
    yields most (the first such), if those yields are concave in j; else None."""
    tops: list[int] = []
    for index, (j, _, gain) in enumerate(options):
        if j == len(tops):
            tops.append(index)
        elif j == len(tops) - 1:
            if gain > options[tops[-1]][2]:
                tops[-1] = index
        else:
            return None
    gains = [options[index][2] for index in tops]
    if any(c - b > b - a for a, b, c in zip(gains, gains[1:], gains[2:], strict=False)):
        return None
    return tops


def _value(allocation: Mapping[str, int], yields: Yields) -> float:
    return sum(yields(name, amount) for name, amount in allocation.items())


def _feasible(total: int, support: Sequence[str], bounds: Mapping[str, Bounds]) -> bool:
    """Whether every protocol of ``support`` can hold its minimum, within the total."""
    return all(bounds[n].low <= bounds[n].cap for n in support) and (
        sum(bounds[n].low for n in support) <= total
    )


def _place(
    seed: Mapping[str, int], placed: int, yields: Yields, bounds: Mapping[str, Bounds]
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


def allocate(
    total: int, candidates: Sequence[Candidate], rules: Constraints, yields: Yields | None = None
) -> dict[str, int]:
    """The target amount per protocol (zeros left out); the rest of ``total`` stays idle.
    ``yields``: the candidates' (by protocol), when the caller prices them too.

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
    yields = Yields(usable) if yields is None else yields
    others = sorted(  # protocols whose own minimum exceeds their cap can never be used
        (n for n in usable if n not in forced and bounds[n].low <= bounds[n].cap),
        key=lambda n: (-yields.apr(n, max(bounds[n].low, 1)), n),
    )
    if rules.min_protocols > 1 and rules.min_protocols > len(usable):
        raise InvalidRequest(
            f"Constraints cannot be met: min_protocols {rules.min_protocols} with "
            f"{len(usable)} usable protocols"
        )
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
    # A support whose ceiling (each protocol's lower bound at the rate it pays there, the
    # rest at the best such rate: rates do not rise with supply) is below a refined start
    # of another cannot win, and is not searched.
    starts: list[tuple[float, _Seed]] = []  # refined starts and their yields
    most = -math.inf
    for support in feasible:
        if not support:
            continue
        placed = min(total, sum(bounds[n].cap for n in support))
        if _ceiling(support, yields, bounds, placed) < most:
            continue
        for start in _seeds(support, yields, bounds, placed, kinked):
            refine(start.allocation, yields, bounds, start.step)
            value = _value(start.allocation, yields)
            starts.append((value, start))
            most = max(most, value)
    _, best = max(starts, key=lambda s: (s[0], *s[1].allocation.values()))
    return {name: amount for name, amount in best.allocation.items() if amount > 0}


def _ceiling(
    support: Sequence[str], yields: Yields, bounds: Mapping[str, Bounds], placed: int
) -> float:
    """At least the yearly yield of any allocation of ``placed`` over ``support`` within
    the bounds (see ``Yields.per_unit``)."""
    rates = [yields.per_unit(n, bounds[n].low) for n in support]
    floor = sum(bounds[n].low for n in support)
    lows = sum(bounds[n].low * rate for n, rate in zip(support, rates, strict=True))
    return (lows + (placed - floor) * max(rates)) * (1 + 1e-9)
