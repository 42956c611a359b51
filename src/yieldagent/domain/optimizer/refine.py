"""Refinement, the allocation search's second phase (see ``search``): from a starting
allocation, ever smaller amounts move from the protocol where they earn least to the one
where they earn most, down to single units, within each protocol's bounds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from yieldagent.domain.constraints import Bounds
from yieldagent.domain.market.curves import Yields

MOVES_PER_STEP = 8
"""Refinement moves at one step size before halving it."""


def refine(
    allocation: dict[str, int],
    yields: Yields,
    bounds: Mapping[str, Bounds],
    chunk: int,
) -> None:
    """Moves ever smaller amounts from where they earn least to where they earn most, down
    to single units, so that caps and bounds are met exactly. The global search left the
    allocation within a grid step of the best one, so each step size gets a few moves
    (a flat stretch of a non-concave curve would otherwise be walked unit by unit).

    The taker is the protocol whose yield grows most with a step more (the last by name of
    equals), the giver the one whose yield shrinks least with a step less (the first by
    name). The giver is found first: a taker whose ceiling (``Yields.ceiling``) is below
    the best growth found, or below what a move must beat, is not asked: it cannot win.
    When nothing can move, a step size costs the givers' curves only.

    Only the protocols that hold something are scanned as givers and ranked as takers (a
    giver holds at least a step above its lower bound, so something); the others are
    asked, best ceiling first, only while their ceiling can beat the best taker found.
    Both choices are orders of (value, name), so the scan's order does not change them."""
    names = list(allocation)
    amounts = [allocation[n] for n in names]
    caps = [bounds[n].cap for n in names]
    lows = [bounds[n].low for n in names]
    curves = [yields.curve(n) for n in names]
    values = [curve(amount) for curve, amount in zip(curves, amounts, strict=True)]
    indices = range(len(names))
    # protocols that hold nothing, best ceiling first: a step there earns at most `first`
    first = [yields.per_unit(n, 0) for n in names]
    order = sorted(indices, key=lambda i: (first[i], names[i]), reverse=True)
    empty = [i for i in order if not amounts[i]]  # kept in this order
    holders = [i for i in indices if amounts[i] > 0]
    # each holder's yield per unit, with room (as ``Yields.per_unit``): its ceiling's rate
    rates = [math.inf] * len(names)

    def rate_of(i: int) -> float:
        per_unit = values[i] / amounts[i]
        return per_unit * (1 + 1e-9) if per_unit > 0 else math.inf

    for i in holders:
        rates[i] = rate_of(i)
    step = chunk
    while step >= 1:
        for _ in range(MOVES_PER_STEP):
            giver, least, given = -1, math.inf, 0.0  # given: the giver's yield after the move
            ranked = []  # (ceiling, name, index) of the takers that hold something
            for i in holders:
                held = amounts[i]
                if held - step >= lows[i]:
                    after = curves[i](held - step)
                    loss = values[i] - after
                    if loss < least or (loss == least and names[i] < names[giver]):
                        giver, least, given = i, loss, after
                if held + step <= caps[i]:
                    ranked.append(((step + 1e-12 * (held + step)) * rates[i], names[i], i))
            if giver < 0:
                break
            # a taker must beat `bar`: one whose ceiling is below it is not asked
            bar = least * (1 + 1e-12)
            ranked.sort(reverse=True)
            taker, most, taken = -1, -math.inf, 0.0  # taken: the taker's yield after the move
            for ceiling, name, i in ranked:
                if ceiling < most or ceiling < bar:
                    break
                after = curves[i](amounts[i] + step)
                gain = after - values[i]
                if gain > most or (gain == most and name > names[taker]):
                    taker, most, taken = i, gain, after
            for i in empty:
                if step > caps[i]:
                    continue
                ceiling = (step + 1e-12 * step) * first[i]
                if ceiling < most or ceiling < bar:
                    break
                gain = curves[i](step)
                if gain > most or (gain == most and names[i] > names[taker]):
                    taker, most, taken = i, gain, gain
            if taker < 0 or taker == giver or not most > bar:
                break
            if not amounts[taker]:
                holders.append(taker)
                empty.remove(taker)
            amounts[taker] += step
            amounts[giver] -= step
            values[taker], values[giver] = taken, given
            rates[taker] = rate_of(taker)
            if amounts[giver]:
                rates[giver] = rate_of(giver)
            else:
                holders.remove(giver)
                empty = [i for i in order if not amounts[i]]
        step //= 2
    allocation.update(zip(names, amounts, strict=True))
