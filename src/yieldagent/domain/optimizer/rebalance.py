"""The optimizer: where a wallet's funds should be, and whether moving them pays.

Pure and deterministic: the same holdings, pools and rules give the same plan.

1. **Target.** ``search.allocate`` gives the allocation that earns the most after our
   own rate impact, within the constraints.
2. **Value of moving.** The target's APR minus the current holdings' APR (idle funds
   earn nothing), over the horizon, against the gas of the moves.
3. **Decision.** The baseline is staying put, idle funds placed where the target wants
   more. A rebalance happens when it is *required* (the baseline breaks a rule: a
   position in a paused, excluded or deselected protocol, above its cap, below its
   minimum, too few protocols) or when it *pays*: the target beats the baseline by at
   least ``min_apr_gain`` percentage points and the moves pay for themselves within
   ``max_break_even_days``. Otherwise only the idle funds are placed.
4. **Plan.** Withdrawals first (they fund the deposits), then deposits.

The defaults follow the peers in ``reference-facts.md``: ZyFAI moves for a gain of at
least 1 percentage point paid back within 10 days; we take 0.25 points, because our
quotes already price in our own rate impact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from yieldagent.domain.books.operations import Move, StepAction
from yieldagent.domain.constraints import Constraints, Thresholds, position_bounds
from yieldagent.domain.market.curves import Candidate, Yields
from yieldagent.domain.optimizer.search import allocate

_DEFAULT_THRESHOLDS = Thresholds()


@dataclass(frozen=True, slots=True)
class Costs:
    """What moving costs, and what a token unit is worth."""

    gas_usd_per_move: float
    token_price_usd: float
    decimals: int

    def usd(self, amount: float) -> float:
        """US dollars of ``amount`` token units."""
        return float(amount) / float(10**self.decimals) * self.token_price_usd


@dataclass(frozen=True, slots=True)
class Plan:
    """The optimizer's answer."""

    target: dict[str, int]
    apr_before: float
    apr_after: float
    moves: tuple[Move, ...]
    gas_usd: float
    break_even_days: float | None
    rebalance: bool
    reason: str

    @property
    def apr_improvement(self) -> float:
        """Percentage points gained."""
        return self.apr_after - self.apr_before


def current_apr(current: Mapping[str, int], idle: int, candidates: Sequence[Candidate]) -> float:
    """APR of the holdings as they are, in percent; idle funds and unknown pools earn 0."""
    total = idle + sum(current.values())
    if total == 0:
        return 0.0
    by_name = {c.protocol: c for c in candidates}
    earning = sum(
        by_name[p].quote.apr() * amount
        for p, amount in current.items()
        if p in by_name and amount > 0
    )
    return earning / total


def _moves(current: Mapping[str, int], target: Mapping[str, int]) -> tuple[Move, ...]:
    names = sorted(set(current) | set(target))
    out = [
        Move(StepAction.WITHDRAW, n, current.get(n, 0) - target.get(n, 0))
        for n in names
        if current.get(n, 0) > target.get(n, 0)
    ]
    into = [
        Move(StepAction.DEPOSIT, n, target.get(n, 0) - current.get(n, 0))
        for n in names
        if target.get(n, 0) > current.get(n, 0)
    ]
    return (*out, *into)


def _idle_only(current: Mapping[str, int], idle: int, target: Mapping[str, int]) -> dict[str, int]:
    """Current positions plus idle funds placed where the target wants more."""
    placed = dict(current)
    left = idle
    gaps = sorted(((target.get(n, 0) - current.get(n, 0), n) for n in target), reverse=True)
    for gap, name in gaps:
        amount = min(gap, left)
        if amount > 0:
            placed[name] = placed.get(name, 0) + amount
            left -= amount
    return {n: a for n, a in placed.items() if a > 0}


def violations(
    holdings: Mapping[str, int], total: int, candidates: Sequence[Candidate], rules: Constraints
) -> str | None:
    """The first rule ``holdings`` (of a wallet worth ``total``) break, if any."""
    allowed = {c.protocol for c in candidates} - set(rules.excluded)
    used = {name: amount for name, amount in holdings.items() if amount > 0}
    leaving = sorted(set(used) - allowed)
    if leaving:
        return f"positions in {', '.join(leaving)} are no longer allowed"
    for name in sorted(used):
        bounds = position_bounds(total, name, rules)
        if used[name] > bounds.cap:
            return f"{name} holds more than its cap"
        if used[name] < bounds.low:
            return f"{name} holds less than its minimum"
    for name, minimum in sorted(rules.min_amount.items()):
        if minimum > 0 and used.get(name, 0) < minimum:
            return f"{name} holds less than its min_allocation_amount"
    if rules.min_protocols > 1 and len(used) < rules.min_protocols:
        return f"fewer than {rules.min_protocols} protocols hold funds"
    return None


def _weighted(holdings: Mapping[str, int], total: int, yields: Yields) -> float:
    """APR of ``holdings`` over ``total``: what is not placed, or sits in a protocol that is
    no candidate (it must leave anyway), earns nothing here. Each pool is priced after the
    holdings' own change (``curves.weighted_apr``, the same float)."""
    priced = {name: amount for name, amount in holdings.items() if name in yields}
    placed = sum(priced.values())
    if not total or not placed:
        return 0.0
    earning = sum(amount * yields.apr(name, amount) for name, amount in priced.items())
    return earning / placed * placed / total


def optimize(
    current: Mapping[str, int],
    idle: int,
    candidates: Sequence[Candidate],
    rules: Constraints,
    costs: Costs,
    thresholds: Thresholds = _DEFAULT_THRESHOLDS,
) -> Plan:
    """The plan for holdings ``current`` (per protocol) plus ``idle`` funds.

    ``candidates`` are the protocols the funds may go to, each with ``current`` set to
    what is held there. InvalidRequest when the constraints cannot be met.
    """
    total = idle + sum(current.values())
    yields = Yields({c.protocol: c for c in candidates})  # rates the figures share
    target = allocate(total, candidates, rules, yields)
    before = current_apr(current, idle, candidates)
    after = _weighted(target, total, yields)
    moves = _moves(current, target)
    gas = costs.gas_usd_per_move * len(moves)
    baseline = _idle_only(current, idle, target) if idle > 0 else dict(current)
    required = violations(baseline, total, candidates, rules)
    # A rebalance must beat both keeping things as they are and placing idle funds only:
    # placing a large idle amount can lower a pool's rate below doing nothing at all.
    settled = _weighted(baseline, total, yields)  # the baseline's APR
    gain = after - max(before, settled)
    daily_gain = costs.usd(total) * gain / 100 / 365
    break_even = gas / daily_gain if daily_gain > 0 else None
    pays = (
        gain >= thresholds.min_apr_gain
        and break_even is not None
        and break_even <= thresholds.max_break_even_days
        and daily_gain * thresholds.horizon_days > gas
    )
    if moves and (required or pays):
        reason = required or f"APR +{gain:.2f} points, paid back in {break_even:.1f} days"
        return Plan(target, before, after, moves, gas, break_even, True, reason)
    # placing idle funds where the target wants more often reaches the target itself
    idle_moves = moves if baseline == target else _moves(current, baseline)
    if idle_moves:
        return Plan(
            baseline,
            before,
            settled,
            idle_moves,
            costs.gas_usd_per_move * len(idle_moves),
            None,
            False,
            "idle funds placed; moving positions does not pay",
        )
    reason = (
        "nothing to move" if not moves else (f"APR +{gain:.2f} points does not clear the threshold")
    )
    return Plan(dict(current), before, before, (), 0.0, break_even, False, reason)
