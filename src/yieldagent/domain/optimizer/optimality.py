"""A cheap check that a wallet is settled: ``optimize`` would certainly plan no moves.

The agent asks it before the full search (``optimizer.optimize``); True lets it skip the
search, False means only "not sure". It never says True when ``optimize`` with the same
arguments would move anything (or refuse the constraints).

``optimize`` plans moves when (a) a rule is broken (a position in an excluded, paused or
deselected protocol, above its cap, below its minimum, too few protocols), (b) idle funds
can go where its target wants more, or (c) a rebalance *pays*: its APR gain is at least
``min_apr_gain`` points, it pays back its gas within ``max_break_even_days`` and within
the horizon. The check proves (a) and (b) false exactly and (c) false by a bound:

**The gain bound.** A pool's supply rate never rises when more is supplied to it (every
rate model's supply rate grows with utilization, and a deposit lowers utilization; a vault
spreads a deposit over its markets in proportion). So no allocation of the wallet's funds
earns more than the best rate any usable pool pays on a position of one unit,
``max_q apr_q(1)``, on what the pools' caps let it place; the gain of any target over the
holdings is at most that less the holdings' APR. When funds sit where the marginal rates
after our own impact are equal, that difference is about our rate impact: far below the
threshold for all but wallets that move their pools' rates by a sizeable fraction of
``min_apr_gain`` (for those the check says False, and the full search decides). Gas can
settle it too: a gain that small may not pay back one move.

One rate quote per usable candidate and one per held position, remembered across calls
(equal quotes give equal rates).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from yieldagent.domain.constraints import Constraints, Thresholds, position_bounds
from yieldagent.domain.market.curves import Candidate
from yieldagent.domain.market.quotes import PoolQuote
from yieldagent.domain.market.rate_models import RAY
from yieldagent.domain.optimizer.rebalance import Costs, violations

MARGIN = 1e-9
"""Percentage points (and a relative share of gas) kept between the bound and the rule, for
float rounding in ``optimize``'s own arithmetic and integer rounding in the rate models."""


def _rate(quote: PoolQuote, delta: int) -> int:
    """``quote.rate(delta)``, remembered: the wallets of a cycle see the same pools (equal
    quotes), and a pool's rate on one unit is the same for every wallet that holds none."""
    try:
        return _remembered_rate(quote, delta)
    except TypeError:  # a quote that cannot be hashed (a model that is no frozen dataclass)
        return quote.rate(delta)


@functools.lru_cache(maxsize=4096)
def _remembered_rate(quote: PoolQuote, delta: int) -> int:
    return quote.rate(delta)


def is_settled(
    positions: Mapping[str, int],
    idle: int,
    candidates: Sequence[Candidate],
    constraints: Constraints,
    costs: Costs,
    thresholds: Thresholds,
) -> bool:
    """True only if ``optimize`` with the same arguments would plan no moves (see above);
    False when it would, or when this cheap check cannot tell."""
    held = {name: amount for name, amount in positions.items() if amount > 0}
    total = idle + sum(held.values())
    if total <= 0:
        return True
    if violations(held, total, candidates, constraints) is not None:
        return False
    excluded = constraints.excluded
    best = 0  # the best rate (RAY) any usable pool pays on a position of one unit
    room = 0  # what the usable pools can take in all
    for candidate in candidates:
        name = candidate.protocol
        if name in excluded:
            continue
        bounds = position_bounds(total, name, constraints)
        if bounds.cap <= 0 or bounds.low > bounds.cap:
            continue  # it can never hold anything
        if idle > 0 and held.get(name, 0) < bounds.cap:
            return False  # idle funds could go there
        room += bounds.cap
        if candidate.current >= candidate.quote.total_supply:
            return False  # holdings the pool does not show: its rates are no guide
        rate = _rate(candidate.quote, 1 - candidate.current)
        if rate > best:
            best = rate
    if not held:
        return True  # nothing held, and nowhere idle funds could go
    by_name = {c.protocol: c for c in candidates}
    earning = sum(_rate(by_name[name].quote, 0) * amount for name, amount in held.items())
    # the most a rebalance could gain, in percentage points (violations() checked that
    # every position is a candidate's)
    gain = (best * min(room, total) - earning) * 100 / (RAY * total)
    if gain + MARGIN < thresholds.min_apr_gain:
        return True
    if gain < -MARGIN:
        return True
    # a rebalance moves at least once; its daily gain is at most this
    gas = costs.gas_usd_per_move
    if gas <= 0:
        return False
    if thresholds.max_break_even_days <= 0:
        return True  # no move pays back in no time
    daily = costs.usd(total) * max(gain, 0.0) / 100 / 365
    if daily < gas / thresholds.max_break_even_days * (1 - MARGIN):
        return True
    return daily * thresholds.horizon_days < gas * (1 - MARGIN)
