"""The optimizer against a brute-force optimum, its constraints, and its rebalancing decision.

Pools are Base USDC's at genesis (seed 7). A wallet's holdings are part of a pool's supply, as
``Candidate`` assumes: ``Candidate(p, quote, current).apr(a)`` is the pool's rate after the
wallet's change of position ``a - current``.

The brute force evaluates the yearly yield ``Σ a_p · apr_p(a_p) / 100`` on a grid of step
total/400, plus the holdings where a pool's market reaches a rate model's kink, over every
support the constraint semantics of ``search.py`` allow (every used protocol between its
lower bound and its cap, forced protocols used, at least ``min_protocols`` used, what the
support cannot take stays idle), then refines the best point on ever finer grids.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations

import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.genesis import genesis_pool
from yieldagent.chain.simulated.pools import quote_of
from yieldagent.domain.books.operations import Move, StepAction
from yieldagent.domain.constraints import Constraints, Thresholds
from yieldagent.domain.errors import InvalidRequest
from yieldagent.domain.market.curves import Candidate
from yieldagent.domain.market.readings import RiskState
from yieldagent.domain.optimizer.rebalance import Costs, Plan, optimize
from yieldagent.domain.optimizer.search import allocate
from yieldagent.domain.risk.guards import OK, Rule, Trip, Verdict
from yieldagent.domain.risk.limits import guarded, wallet_cap
from yieldagent.domain.risk.settings import RiskSettings

BASE = 8453
SEED = 7
GENESIS = 1_767_225_600
UNIT = 10**6  # one USDC
TOKEN = load_catalog().chain(BASE).tokens[0]
PROTOCOLS = tuple(p.name for p in TOKEN.protocols)
MORPHO = "morpho_gauntlet_usdc_prime"
MIN_TOTAL, MAX_TOTAL = 1_000 * UNIT, 500_000_000 * UNIT
GRID = 400
CHEAP = Costs(gas_usd_per_move=0.01, token_price_usd=1.0, decimals=6)


def _pool_supply(name: str) -> int:
    info = TOKEN.protocol(name)
    assert info is not None
    return genesis_pool(BASE, TOKEN, info, SEED, GENESIS).total_supply()


POOL_SUPPLY = {name: _pool_supply(name) for name in PROTOCOLS}


def _candidate(name: str, current: int = 0) -> Candidate:
    info = TOKEN.protocol(name)
    assert info is not None
    pool = genesis_pool(BASE, TOKEN, info, SEED, GENESIS)
    return Candidate(name, quote_of(pool), current)


def _candidates(names: Sequence[str], current: Mapping[str, int]) -> list[Candidate]:
    return [_candidate(name, current.get(name, 0)) for name in names]


def _yield(allocation: Mapping[str, int], candidates: Sequence[Candidate]) -> float:
    by_name = {c.protocol: c for c in candidates}
    return sum(by_name[name].yearly_yield(amount) for name, amount in allocation.items())


# -- an independent reading of the constraint semantics -------------------------------------------


def _bounds(total: int, name: str, rules: Constraints) -> tuple[int, int]:
    """(lower bound if used, cap) of one protocol, as ``search.py``'s docstring states."""
    cap = total
    if name in rules.max_amount:
        cap = min(cap, rules.max_amount[name])
    if name in rules.max_ratio:
        cap = min(cap, math.floor(total * Fraction(str(rules.max_ratio[name]))))
    low = max(rules.min_position, rules.min_amount.get(name, 0))
    if rules.min_protocols > 1:
        low = max(low, math.ceil(total * Fraction(str(rules.min_fraction))))
    return low, cap


def _supports(total: int, names: Sequence[str], rules: Constraints) -> list[tuple[str, ...]]:
    """Every set of protocols whose minimums fit within the caps and the total."""
    usable = sorted(n for n in names if n not in rules.excluded)
    forced = {n for n, amount in rules.min_amount.items() if amount > 0}
    if not forced <= set(usable):
        return []
    out = []
    for size in range(len(usable) + 1):
        for support in combinations(usable, size):
            if not forced <= set(support):
                continue
            if rules.min_protocols > 1 and size < rules.min_protocols:
                continue
            limits = [_bounds(total, n, rules) for n in support]
            if all(low <= cap for low, cap in limits) and sum(low for low, _ in limits) <= total:
                out.append(support)
    return out


def _check(
    total: int, allocation: Mapping[str, int], names: Sequence[str], rules: Constraints
) -> None:
    """Asserts that ``allocation`` of ``total`` over ``names`` keeps every constraint."""
    assert set(allocation) <= set(names) - rules.excluded, "an excluded or unknown protocol"
    assert all(amount > 0 for amount in allocation.values()), "zeros are left out"
    assert sum(allocation.values()) <= total
    for name, amount in allocation.items():
        low, cap = _bounds(total, name, rules)
        assert low <= amount <= cap, (name, low, amount, cap)  # caps, min_position, fraction
        assert amount >= rules.min_position  # min_amount
        if name in rules.max_amount:  # max_allocation_amount_per_protocol
            assert amount <= rules.max_amount[name]
        if name in rules.max_ratio:  # max_amount_per_protocol
            assert Fraction(amount, total) <= Fraction(str(rules.max_ratio[name]))
    for name, minimum in rules.min_amount.items():  # min_allocation_amount_per_protocol
        if minimum > 0:
            assert allocation.get(name, 0) >= minimum, f"{name} below its min_allocation_amount"
    if rules.min_protocols > 1:  # min_protocols and min_fraction_per_protocol
        assert len(allocation) >= rules.min_protocols
        share = Fraction(str(rules.min_fraction))
        assert all(Fraction(amount, total) >= share for amount in allocation.values())


# -- brute force -----------------------------------------------------------------------------------


# Utilizations where each model's supply rate bends (Aave's optimal utilization, Comet's supply
# kink, Moonwell's kink, Morpho's target), besides a full market.
KINKS = {"aave_v3": (0.9,), "compound_v3": (0.85,), "moonwell": (0.9,), "morpho_blue": (0.9,)}


def _kink_points(candidate: Candidate) -> list[int]:
    """Holdings at which one of the pool's markets reaches a kink or fills up (a deposit
    spreads over a vault's markets in proportion to their supply): a yield curve's narrow
    peaks lie there, where a plain grid can miss them."""
    quote = candidate.quote
    total = quote.total_supply
    points = []
    for market in quote.markets:
        if market.held <= 0 or market.borrows <= 0:
            continue
        for kink in (*KINKS[quote.model.kind], 1.0):
            needed = Fraction(market.borrows) / Fraction(str(kink)) - market.supply
            middle = candidate.current + math.floor(needed * total / market.held)
            points += [middle + offset for offset in (-1, 0, 1, 2) if middle + offset > 0]
    return points


def _points(low: int, high: int, step: int, marks: Sequence[int] = ()) -> list[int]:
    """``low``, ``high``, the multiples of ``step`` between them, and ``marks`` within."""
    if low > high:
        return []
    first = -(-low // step) * step
    within = (m for m in marks if low <= m <= high)
    return sorted({low, high, *range(first, high + 1, step), *within})


YieldOf = Callable[[str, int], float]


def _grid_best(
    names: Sequence[str],
    lows: Sequence[int],
    caps: Sequence[int],
    placed: int,
    value: YieldOf,
    step: int,
    marks: Sequence[Sequence[int]] = ((), (), ()),
) -> tuple[float, tuple[int, ...] | None]:
    """The best grid point with Σ a = placed and lows ≤ a ≤ caps, each protocol also at its
    ``marks`` (the last one is implied, or at one of its marks)."""
    if len(names) == 1:
        return value(names[0], placed), (placed,)
    best: tuple[float, tuple[int, ...] | None] = (-math.inf, None)

    def consider(point: tuple[int, ...]) -> None:
        nonlocal best
        if all(low <= a <= cap for low, a, cap in zip(lows, point, caps, strict=True)):
            total = sum(value(name, a) for name, a in zip(names, point, strict=True))
            if total > best[0]:
                best = (total, point)

    rest = sum(caps[1:]), sum(lows[1:])  # what the others can take, and must
    firsts = _points(max(lows[0], placed - rest[0]), min(caps[0], placed - rest[1]), step, marks[0])
    if len(names) == 2:
        for a in firsts:
            consider((a, placed - a))
        for b in marks[1]:
            consider((placed - b, b))
        return best
    for a in firsts:
        seconds = max(lows[1], placed - a - caps[2]), min(caps[1], placed - a - lows[2])
        for b in _points(*seconds, step):
            consider((a, b, placed - a - b))
        for b in marks[1]:
            consider((a, b, placed - a - b))
        for c in marks[2]:
            consider((a, placed - a - c, c))
    return best


def brute_force(
    total: int,
    candidates: Sequence[Candidate],
    rules: Constraints,
    start: Mapping[str, int] | None = None,
) -> tuple[float, dict[str, int]] | None:
    """The best yearly yield and its allocation; None when no support is feasible. Each
    support's grid is refined down to single units around its best point and, when
    ``start`` has that support, around ``start`` too: a sharp peak of a kinked curve can
    fall between the coarse grid's points."""
    by_name = {c.protocol: c for c in candidates}
    cache: dict[tuple[str, int], float] = {}

    def value(name: str, amount: int) -> float:
        key = (name, amount)
        if key not in cache:
            cache[key] = by_name[name].yearly_yield(amount)
        return cache[key]

    step = max(total // GRID, 1)
    best: tuple[float, dict[str, int]] | None = None
    for support in _supports(total, list(by_name), rules):
        if not support:
            found: tuple[float, dict[str, int]] = (0.0, {})
        else:
            lows = [_bounds(total, n, rules)[0] for n in support]
            caps = [_bounds(total, n, rules)[1] for n in support]
            placed = min(total, sum(caps))
            marks = [_kink_points(by_name[n]) for n in support]
            coarse, point = _grid_best(support, lows, caps, placed, value, step, marks)
            assert point is not None
            score, top = _refine(support, lows, caps, placed, value, step, coarse, point)
            if start is not None and {n for n, a in start.items() if a} == set(support):
                there = [start[n] for n in support]
                at_start = sum(value(n, a) for n, a in start.items() if a)
                if at_start > score:  # a peak the coarse grid missed: search around it too
                    score, top = _refine(support, lows, caps, placed, value, step, at_start, there)
            found = (score, dict(zip(support, top, strict=True)))
        if best is None or found[0] > best[0]:
            best = found
    return best


def _refine(
    support: Sequence[str],
    lows: list[int],
    caps: list[int],
    placed: int,
    value: YieldOf,
    width: int,
    score: float,
    point: Sequence[int],
) -> tuple[float, Sequence[int]]:
    """Finer and finer grids around ``point``, down to single units."""
    while width > 1:
        finer = max(width // 40, 1)
        box_lows = [max(low, p - width) for low, p in zip(lows, point, strict=True)]
        box_caps = [min(cap, p + width) for cap, p in zip(caps, point, strict=True)]
        refined, there = _grid_best(support, box_lows, box_caps, placed, value, finer)
        if there is not None and refined >= score:
            score, point = refined, there
        width = finer
    return score, point


def _concave(candidate: Candidate, total: int, points: int = 200) -> bool:
    """Whether the candidate's yearly yield is concave over [0, total] (no kink crossed)."""
    values = [candidate.yearly_yield(total * i // points) for i in range(points + 1)]
    tolerance = 1e-9 * max(abs(v) for v in values)
    return all(values[i - 1] - 2 * values[i] + values[i + 1] <= tolerance for i in range(1, points))


# -- strategies ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Instance:
    """A wallet's total, its holdings per protocol, the candidates and the rules."""

    total: int
    current: dict[str, int]
    names: tuple[str, ...]
    rules: Constraints

    @property
    def idle(self) -> int:
        return self.total - sum(self.current.values())

    def candidates(self) -> list[Candidate]:
        return _candidates(self.names, self.current)


@st.composite
def totals(draw: st.DrawFn) -> int:
    """1,000 to 500,000,000 USDC, spread evenly over the orders of magnitude."""
    exponent = draw(st.integers(9, 14))
    return draw(st.integers(10**exponent, min(10 ** (exponent + 1), MAX_TOTAL)))


@st.composite
def holdings(draw: st.DrawFn, total: int, names: Sequence[str]) -> dict[str, int]:
    """A random split of part of ``total`` over ``names``; a position is at most half its pool."""
    held = draw(st.sampled_from([0, total // 3, total, draw(st.integers(0, total))]))
    weights = draw(st.lists(st.integers(0, 100), min_size=len(names), max_size=len(names)))
    if held == 0 or sum(weights) == 0:
        return {}
    split = {
        n: min(held * w // sum(weights), POOL_SUPPLY[n] // 2)
        for n, w in zip(names, weights, strict=True)
    }
    return {n: a for n, a in split.items() if a > 0}


@st.composite
def rule_sets(draw: st.DrawFn, total: int, names: Sequence[str]) -> Constraints:
    """Random constraints of every kind, mostly feasible."""
    name = st.sampled_from(list(names))
    share = st.integers(0, 100).map(lambda pct: total * pct // 100)
    return Constraints(
        min_protocols=draw(st.integers(1, len(names))),
        min_fraction=draw(st.sampled_from([0.01, 0.05, 0.1, 0.2, 0.3, 0.5])),
        excluded=draw(st.frozensets(name, max_size=1)),
        max_amount=draw(st.dictionaries(name, share, max_size=2)),
        max_ratio=draw(
            st.dictionaries(name, st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.9, 1.0]), max_size=2)
        ),
        min_position=draw(st.sampled_from([0, 0, 0, total // 20, total // 4])),
        min_amount=draw(st.dictionaries(name, share.map(lambda a: a // 2), max_size=1)),
    )


@st.composite
def instances(draw: st.DrawFn, sizes: tuple[int, int] = (2, 3)) -> Instance:
    names = tuple(
        draw(
            st.lists(st.sampled_from(PROTOCOLS), min_size=sizes[0], max_size=sizes[1], unique=True)
        )
    )
    total = draw(totals())
    return Instance(total, draw(holdings(total, names)), names, draw(rule_sets(total, names)))


# -- the optimum -----------------------------------------------------------------------------------


def _assert_near_optimum(instance: Instance) -> None:
    candidates = instance.candidates()
    allocation = allocate(instance.total, candidates, instance.rules)
    best = brute_force(instance.total, candidates, instance.rules, allocation)
    assert best is not None
    _check(instance.total, allocation, instance.names, instance.rules)
    found = _yield(allocation, candidates)
    assert found >= best[0] * (1 - 1e-4), (found, best)
    # At a sharp peak (a bend of a kinked curve) the brute force's grid can stop short of
    # the top; beyond 0.01% it would no longer be a reference
    assert found <= best[0] * (1 + 1e-4), "the brute force missed a better allocation"


def _count_shapes(instance: Instance) -> None:
    """Notes, for --hypothesis-show-statistics, whether the instance's curves are kinked."""
    kinked = not all(_concave(c, instance.total) for c in instance.candidates())
    event("kinked (non-concave) yield curves" if kinked else "concave yield curves")


@settings(max_examples=300, deadline=None)
@given(instances(sizes=(2, 2)))
def test_two_protocols_are_within_a_hundredth_of_a_percent_of_brute_force(
    instance: Instance,
) -> None:
    """Whatever the curves' shapes: a wallet's holdings and a total up to ten times a pool
    push pools across the kinks of their rate models, where yield curves are not concave."""
    assume(_supports(instance.total, instance.names, instance.rules))
    _count_shapes(instance)
    _assert_near_optimum(instance)


@settings(max_examples=150, deadline=None)
@given(instances(sizes=(3, 3)))
def test_three_protocols_are_within_a_hundredth_of_a_percent_of_brute_force(
    instance: Instance,
) -> None:
    """Whatever the curves' shapes: a wallet's holdings and a total up to ten times a pool
    push pools across the kinks of their rate models, where yield curves are not concave."""
    assume(_supports(instance.total, instance.names, instance.rules))
    _count_shapes(instance)
    _assert_near_optimum(instance)


_VERDICTS = {
    RiskState.OK: OK,
    RiskState.NO_NEW_FUNDS: Verdict(
        RiskState.NO_NEW_FUNDS, (Trip(Rule.UTILISATION, RiskState.NO_NEW_FUNDS, "full"),)
    ),
    RiskState.EXIT: Verdict(RiskState.EXIT, (Trip(Rule.LOSS, RiskState.EXIT, "a loss"),)),
}


@st.composite
def guarded_instances(draw: st.DrawFn) -> tuple[Instance, dict[str, Verdict], dict[str, int]]:
    """An instance whose rules carry the guards: each pool's verdict, and what the share
    and size rules let the wallet hold given what the rest of the service holds there."""
    instance = draw(instances(sizes=(2, 3)))
    verdicts: dict[str, Verdict] = {}
    caps: dict[str, int] = {}
    for name in instance.names:
        held = instance.current.get(name, 0)
        others = draw(st.integers(0, POOL_SUPPLY[name] // 5))
        verdicts[name] = _VERDICTS[draw(st.sampled_from(list(RiskState)))]
        caps[name] = wallet_cap(
            POOL_SUPPLY[name], held + others, held, verdicts[name], RiskSettings()
        )
    rules = guarded(instance.rules, verdicts, caps)
    return Instance(instance.total, instance.current, instance.names, rules), verdicts, caps


@settings(max_examples=150, deadline=None)
@given(guarded_instances())
def test_the_optimum_holds_with_the_risk_guards_as_constraints(
    guarded_instance: tuple[Instance, dict[str, Verdict], dict[str, int]],
) -> None:
    """The guards are constraints like a partner's: the search stays within 0.01% of brute
    force with them, and its allocation leaves every pool to exit, adds nothing to a pool
    that takes no new funds, and keeps within the share and size caps."""
    instance, verdicts, caps = guarded_instance
    assume(_supports(instance.total, instance.names, instance.rules))
    _assert_near_optimum(instance)
    allocation = allocate(instance.total, instance.candidates(), instance.rules)
    for name, amount in allocation.items():
        assert not verdicts[name].exit
        assert amount <= caps[name]
        if not verdicts[name].takes_funds:
            assert amount <= instance.current.get(name, 0)


def test_the_brute_force_finds_the_known_optimum_of_a_simple_case() -> None:
    """The oracle itself: one pool capped, the rest goes to the other, nothing else fits."""
    total = 1_000 * UNIT
    rules = Constraints(max_amount={"compound": 300 * UNIT})
    candidates = _candidates(("aave", "compound"), {})
    best = brute_force(total, candidates, rules)
    assert best is not None
    assert best[1] == {"aave": 700 * UNIT, "compound": 300 * UNIT}
    assert best[0] == pytest.approx(_yield(best[1], candidates))
    assert brute_force(total, candidates, Constraints(min_protocols=3)) is None


@pytest.mark.parametrize(
    ("total", "names", "current", "rules"),
    [
        pytest.param(400_000 * UNIT, ("compound", MORPHO), {}, Constraints(), id="fresh-400k"),
        pytest.param(5_000_000 * UNIT, ("moonwell", MORPHO), {}, Constraints(), id="fresh-5M"),
        pytest.param(
            4_000_000 * UNIT,
            ("compound", MORPHO),
            {MORPHO: 3_000_000 * UNIT, "compound": 1_000_000 * UNIT},
            Constraints(),
            id="held-4M",
        ),
        pytest.param(
            8_000_000 * UNIT,
            ("moonwell", MORPHO),
            {MORPHO: 2_000_000 * UNIT, "moonwell": 6_000_000 * UNIT},
            Constraints(max_ratio={MORPHO: 0.9}),
            id="held-8M-max-ratio",
        ),
        pytest.param(
            400_000 * UNIT,
            ("aave", "compound", MORPHO),
            {},
            Constraints(max_ratio={"aave": 0.5}),
            id="three-protocols-400k",
        ),
    ],
)
def test_non_concave_yield_curves_reach_the_optimum(
    total: int, names: tuple[str, ...], current: dict[str, int], rules: Constraints
) -> None:
    instance = Instance(total, current, names, rules)
    assert not all(_concave(c, total) for c in instance.candidates())
    _assert_near_optimum(instance)


# -- constraints -----------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(instances(sizes=(1, 4)))
def test_no_constraint_is_ever_violated_and_infeasible_ones_are_refused(
    instance: Instance,
) -> None:
    if not _supports(instance.total, instance.names, instance.rules):
        event("refused")
        with pytest.raises(InvalidRequest, match="Constraints cannot be met"):
            allocate(instance.total, instance.candidates(), instance.rules)
        return
    allocation = allocate(instance.total, instance.candidates(), instance.rules)
    _check(instance.total, allocation, instance.names, instance.rules)
    usable = [n for n in instance.names if n not in instance.rules.excluded]
    placed = sum(allocation.values())
    if placed < instance.total:  # what stays idle is what the chosen protocols cannot take
        assert all(
            amount == _bounds(instance.total, n, instance.rules)[1]
            for n, amount in allocation.items()
        ), "funds left idle below a used protocol's cap"
        for name in usable:
            if name not in allocation:  # it could not have taken any of them
                low, cap = _bounds(instance.total, name, instance.rules)
                assert low > 0 or cap == 0, f"funds left idle while {name} could take them"


TOTAL = 1_000 * UNIT


@pytest.mark.parametrize(
    ("rules", "check"),
    [
        (Constraints(min_protocols=3, min_fraction=0.2), lambda a: len(a) >= 3),
        (
            Constraints(max_amount={"compound": 123 * UNIT}),
            lambda a: a["compound"] == 123 * UNIT,
        ),
        (
            Constraints(excluded=frozenset({"compound", MORPHO})),
            lambda a: "compound" not in a and MORPHO not in a,
        ),
        (Constraints(max_ratio={"compound": 0.3}), lambda a: a["compound"] == 300 * UNIT),
        (
            Constraints(min_position=400 * UNIT, max_amount={"compound": 700 * UNIT}),
            lambda a: len(a) == 2 and min(a.values()) == 400 * UNIT,
        ),
        (
            Constraints(min_amount={"aave": 250 * UNIT}),
            lambda a: a["aave"] == 250 * UNIT,
        ),
    ],
    ids=[
        "min_protocols",
        "max_allocation_amount_per_protocol",
        "exclude_protocol",
        "max_amount_per_protocol",
        "min_amount",
        "min_allocation_amount_per_protocol",
    ],
)
def test_each_constraint_kind_binds(
    rules: Constraints, check: Callable[[dict[str, int]], bool]
) -> None:
    """Each kind moves the answer away from the unconstrained one (all to compound)."""
    candidates = _candidates(PROTOCOLS, {})
    assert allocate(TOTAL, candidates, Constraints()) == {"compound": TOTAL}
    allocation = allocate(TOTAL, candidates, rules)
    _check(TOTAL, allocation, PROTOCOLS, rules)
    assert sum(allocation.values()) == TOTAL
    assert check(allocation)


@pytest.mark.parametrize(
    "rules",
    [
        Constraints(min_protocols=5),
        Constraints(min_protocols=3, min_fraction=0.4),
        Constraints(max_amount={"aave": 10 * UNIT}, min_amount={"aave": 20 * UNIT}),
        Constraints(max_ratio={"aave": 0.1}, min_amount={"aave": 200 * UNIT}),
        Constraints(excluded=frozenset({"aave"}), min_amount={"aave": 1}),
        Constraints(min_amount={"aave": 600 * UNIT, "compound": 600 * UNIT}),
        Constraints(
            min_position=300 * UNIT,
            min_amount={"aave": 100 * UNIT},
            max_amount={"aave": 200 * UNIT},
        ),
    ],
    ids=[
        "more-protocols-than-exist",
        "fractions-above-the-whole",
        "minimum-above-cap",
        "minimum-above-ratio",
        "forced-but-excluded",
        "minimums-above-total",
        "min-position-above-cap",
    ],
)
def test_infeasible_constraints_are_refused_clearly(rules: Constraints) -> None:
    candidates = _candidates(PROTOCOLS, {})
    assert not _supports(TOTAL, PROTOCOLS, rules)
    with pytest.raises(InvalidRequest, match="Constraints cannot be met"):
        allocate(TOTAL, candidates, rules)
    with pytest.raises(InvalidRequest, match="Constraints cannot be met"):
        optimize({"compound": TOTAL}, 0, _candidates(PROTOCOLS, {"compound": TOTAL}), rules, CHEAP)


# -- optimize: the plan ----------------------------------------------------------------------------


def _withdrawals(plan: Plan) -> dict[str, int]:
    return {m.protocol: m.amount for m in plan.moves if m.action == "withdraw"}


def _deposits(plan: Plan) -> dict[str, int]:
    return {m.protocol: m.amount for m in plan.moves if m.action == "deposit"}


def _assert_moves_reach_the_target(plan: Plan, current: Mapping[str, int], idle: int) -> None:
    actions = [m.action for m in plan.moves]
    assert set(actions) <= {"withdraw", "deposit"}
    assert actions == sorted(actions, key=lambda a: a != "withdraw"), "withdrawals come first"
    assert all(m.amount > 0 for m in plan.moves)
    protocols = [m.protocol for m in plan.moves]
    assert len(protocols) == len(set(protocols)), "a protocol is moved once, one way"
    out, into = _withdrawals(plan), _deposits(plan)
    for name in set(current) | set(plan.target) | set(out) | set(into):
        reached = current.get(name, 0) - out.get(name, 0) + into.get(name, 0)
        assert reached == plan.target.get(name, 0), name
    assert sum(into.values()) <= idle + sum(out.values())
    assert all(amount >= 0 for amount in plan.target.values())


@st.composite
def plans(draw: st.DrawFn) -> tuple[Instance, Costs, Thresholds]:
    """An instance whose holdings may sit in a protocol that is no longer a candidate."""
    instance = draw(instances(sizes=(1, 4)))
    others = [n for n in PROTOCOLS if n not in instance.names]
    current = dict(instance.current)
    exits = draw(st.booleans())
    if others and exits:
        gone = draw(st.sampled_from(others))
        room = instance.idle
        current[gone] = min(draw(st.integers(0, room)), POOL_SUPPLY[gone] // 2)
    costs = Costs(
        gas_usd_per_move=draw(st.sampled_from([0.0, 0.01, 1.0, 100.0, 1e6])),
        token_price_usd=draw(st.sampled_from([1.0, 0.9998, 2.5])),
        decimals=6,
    )
    thresholds = Thresholds(
        horizon_days=draw(st.sampled_from([1.0, 30.0, 365.0])),
        min_apr_gain=draw(st.sampled_from([0.0, 0.25, 1.0, 5.0])),
        max_break_even_days=draw(st.sampled_from([1.0, 10.0, 1000.0])),
    )
    return Instance(instance.total, current, instance.names, instance.rules), costs, thresholds


@settings(max_examples=150, deadline=None)
@given(plans())
def test_plans_net_to_their_target_and_decide_consistently(
    drawn: tuple[Instance, Costs, Thresholds],
) -> None:
    instance, costs, thresholds = drawn
    current, idle = instance.current, instance.idle
    candidates = instance.candidates()
    if not _supports(instance.total, instance.names, instance.rules):
        event("refused")
        with pytest.raises(InvalidRequest, match="Constraints cannot be met"):
            optimize(current, idle, candidates, instance.rules, costs, thresholds)
        return
    plan = optimize(current, idle, candidates, instance.rules, costs, thresholds)
    event("rebalance" if plan.rebalance else "kept" if plan.moves == () else "idle placed")
    _assert_moves_reach_the_target(plan, current, idle)
    assert plan.gas_usd == pytest.approx(costs.gas_usd_per_move * len(plan.moves))
    assert plan.apr_improvement == pytest.approx(plan.apr_after - plan.apr_before)
    allowed = set(instance.names) - instance.rules.excluded
    leaving = {n for n, a in current.items() if a > 0 and n not in allowed}
    if leaving:  # a required exit always happens, whatever it costs
        assert plan.rebalance
        assert leaving <= set(_withdrawals(plan))
        assert all(name in plan.reason for name in leaving)
    if plan.rebalance:
        assert plan.target == allocate(instance.total, candidates, instance.rules)
        _check(instance.total, plan.target, instance.names, instance.rules)
        if plan.reason.startswith("APR +"):  # not required by a rule: it must pay
            assert plan.apr_improvement >= thresholds.min_apr_gain
            assert plan.break_even_days is not None
            assert plan.break_even_days <= thresholds.max_break_even_days
    else:
        assert not _withdrawals(plan), "no rebalance withdraws nothing"
        assert sum(_deposits(plan).values()) <= idle
        assert set(plan.target) <= allowed | set(current)
    # deterministic: fresh pools, the same inputs, the same plan; the pools are not touched
    quotes = [c.quote for c in candidates]
    again = optimize(dict(current), idle, instance.candidates(), instance.rules, costs, thresholds)
    assert again == plan
    assert [c.quote for c in candidates] == quotes


# -- optimize: the decision ------------------------------------------------------------------------


def _hand_break_even(total: int, before: float, after: float, gas: float, price: float) -> float:
    daily = total / UNIT * price * (after - before) / 100 / 365
    return gas / daily


def test_figures_match_a_hand_computation() -> None:
    current = {"aave": 600 * UNIT, "moonwell": 300 * UNIT}
    idle = 100 * UNIT
    total = idle + sum(current.values())
    candidates = _candidates(PROTOCOLS, current)
    by_name = {c.protocol: c for c in candidates}
    costs = Costs(gas_usd_per_move=0.05, token_price_usd=2.0, decimals=6)
    plan = optimize(current, idle, candidates, Constraints(), costs)
    before = sum(by_name[n].quote.apr(0) * a for n, a in current.items()) / total
    assert plan.apr_before == pytest.approx(before, rel=1e-12)
    target = allocate(total, candidates, Constraints())
    assert plan.target == target == {"compound": total}
    after = sum(by_name[n].apr(a) * a for n, a in target.items()) / total
    assert plan.apr_after == pytest.approx(after, rel=1e-12)
    assert plan.moves == (
        Move(StepAction.WITHDRAW, "aave", 600 * UNIT),
        Move(StepAction.WITHDRAW, "moonwell", 300 * UNIT),
        Move(StepAction.DEPOSIT, "compound", total),
    )
    assert plan.gas_usd == pytest.approx(0.15)
    # The gain is measured against staying put with the idle funds placed (in compound,
    # where the target wants more): that much the move itself adds.
    baseline = {**current, "compound": 100 * UNIT}
    staying = sum(by_name[n].apr(a) * a for n, a in baseline.items()) / total
    assert plan.break_even_days == pytest.approx(
        _hand_break_even(total, staying, after, 0.15, 2.0), rel=1e-9
    )
    assert plan.rebalance
    assert "APR +" in plan.reason


def test_nothing_to_move_is_a_no_op() -> None:
    current = {"compound": TOTAL}
    plan = optimize(current, 0, _candidates(PROTOCOLS, current), Constraints(), CHEAP)
    assert plan.moves == ()
    assert not plan.rebalance
    assert plan.target == current
    assert plan.apr_after == plan.apr_before
    empty = optimize({}, 0, _candidates(PROTOCOLS, {}), Constraints(), CHEAP)
    assert empty.moves == () and empty.target == {} and empty.apr_before == 0.0


@pytest.mark.parametrize(
    ("current", "rules", "names"),
    [
        ({"moonwell": TOTAL}, Constraints(), ("aave", "compound")),  # deselected or paused
        ({"compound": TOTAL}, Constraints(excluded=frozenset({"compound"})), PROTOCOLS),
        ({"compound": TOTAL}, Constraints(max_amount={"compound": 100 * UNIT}), PROTOCOLS),
    ],
    ids=["not-a-candidate", "excluded", "above-max-allocation-amount"],
)
def test_a_required_exit_always_rebalances(
    current: dict[str, int], rules: Constraints, names: tuple[str, ...]
) -> None:
    prohibitive = Costs(gas_usd_per_move=1e9, token_price_usd=1.0, decimals=6)
    never = Thresholds(min_apr_gain=100.0, max_break_even_days=0.0, horizon_days=0.0)
    plan = optimize(current, 0, _candidates(names, current), rules, prohibitive, never)
    assert plan.rebalance
    [(name, held)] = current.items()
    assert plan.moves[0] == Move(StepAction.WITHDRAW, name, held - plan.target.get(name, 0))
    assert name in plan.reason
    _check(TOTAL, plan.target, names, rules)
    assert sum(plan.target.values()) == TOTAL


def test_a_position_without_a_quote_counts_as_earning_nothing() -> None:
    plan = optimize({"moonwell": TOTAL}, 0, _candidates(("compound",), {}), Constraints(), CHEAP)
    assert plan.apr_before == 0.0  # no quote for it among the candidates: counted as earning 0
    assert plan.moves == (
        Move(StepAction.WITHDRAW, "moonwell", TOTAL),
        Move(StepAction.DEPOSIT, "compound", TOTAL),
    )


def _morpho_to_compound(
    thresholds: Thresholds, costs: Costs = CHEAP, idle: int = 0
) -> tuple[Plan, dict[str, int]]:
    """1,000 USDC in the morpho vault; compound pays about 0.13 points more."""
    current = {MORPHO: TOTAL}
    return (
        optimize(
            current,
            idle,
            _candidates(("compound", MORPHO), current),
            Constraints(),
            costs,
            thresholds,
        ),
        current,
    )


def test_a_gain_below_the_threshold_does_not_rebalance() -> None:
    plan, current = _morpho_to_compound(Thresholds())
    assert not plan.rebalance
    assert plan.moves == () and plan.target == current
    assert plan.apr_after == plan.apr_before  # nothing changes
    assert "does not clear the threshold" in plan.reason
    lower, _ = _morpho_to_compound(Thresholds(min_apr_gain=0.1))
    assert 0.1 <= lower.apr_improvement < Thresholds().min_apr_gain
    assert lower.rebalance  # the same move clears a lower threshold
    assert lower.moves == (
        Move(StepAction.WITHDRAW, MORPHO, TOTAL),
        Move(StepAction.DEPOSIT, "compound", TOTAL),
    )


def test_below_the_threshold_only_idle_funds_are_deposited() -> None:
    idle = 5 * UNIT
    plan, current = _morpho_to_compound(Thresholds(), idle=idle)
    assert not plan.rebalance
    assert plan.moves == (Move(StepAction.DEPOSIT, "compound", idle),)
    assert plan.target == {MORPHO: TOTAL, "compound": idle}
    _assert_moves_reach_the_target(plan, current, idle)
    assert plan.gas_usd == pytest.approx(CHEAP.gas_usd_per_move)
    assert plan.apr_after > plan.apr_before


def test_idle_funds_do_not_carry_a_move_below_the_threshold_over_it() -> None:
    idle = 100 * UNIT
    moving, _ = _morpho_to_compound(Thresholds(min_apr_gain=0.0), idle=idle)
    staying, _ = _morpho_to_compound(Thresholds(min_apr_gain=100.0), idle=idle)
    assert moving.rebalance and not staying.rebalance
    assert moving.apr_after - staying.apr_after < Thresholds().min_apr_gain  # what moving adds
    plan, _ = _morpho_to_compound(Thresholds(), idle=idle)
    assert not _withdrawals(plan)
    assert plan.moves == (Move(StepAction.DEPOSIT, "compound", idle),)


def _aave_to_compound(thresholds: Thresholds, gas: float) -> Plan:
    """1,000 USDC in aave; compound pays about 1.75 points more: 0.048 USD a day."""
    current = {"aave": TOTAL}
    costs = Costs(gas_usd_per_move=gas, token_price_usd=1.0, decimals=6)
    return optimize(
        current, 0, _candidates(("aave", "compound"), current), Constraints(), costs, thresholds
    )


def test_a_gain_above_the_threshold_that_pays_back_in_time_rebalances() -> None:
    plan = _aave_to_compound(Thresholds(), gas=0.01)
    assert plan.apr_improvement > 1.5
    assert plan.rebalance
    assert plan.moves == (
        Move(StepAction.WITHDRAW, "aave", TOTAL),
        Move(StepAction.DEPOSIT, "compound", TOTAL),
    )
    assert plan.target == {"compound": TOTAL}
    expected = _hand_break_even(TOTAL, plan.apr_before, plan.apr_after, 0.02, 1.0)
    assert plan.break_even_days == pytest.approx(expected)
    assert plan.break_even_days is not None and plan.break_even_days < 1


def test_huge_gas_blocks_a_rebalance() -> None:
    plan = _aave_to_compound(Thresholds(), gas=1_000.0)
    assert not plan.rebalance
    assert plan.moves == () and plan.target == {"aave": TOTAL}
    assert plan.gas_usd == 0.0
    # the figures of the move it declined: its break-even is far beyond max_break_even_days
    paying = _aave_to_compound(Thresholds(), gas=0.01)
    expected = _hand_break_even(TOTAL, paying.apr_before, paying.apr_after, 2_000.0, 1.0)
    assert plan.break_even_days == pytest.approx(expected)
    assert plan.break_even_days is not None and plan.break_even_days > 10_000


def test_break_even_and_horizon_limits() -> None:
    paying = _aave_to_compound(Thresholds(), gas=0.01)
    daily = TOTAL / UNIT * paying.apr_improvement / 100 / 365
    gas = 5 * daily / 2  # two moves that pay back in five days
    assert _aave_to_compound(Thresholds(), gas).rebalance
    late = _aave_to_compound(Thresholds(max_break_even_days=4.0), gas)
    assert not late.rebalance
    assert late.break_even_days == pytest.approx(5.0)
    short = _aave_to_compound(Thresholds(horizon_days=2.0), gas)
    assert not short.rebalance, "the horizon's yield does not cover the gas"
    assert _aave_to_compound(Thresholds(horizon_days=6.0), gas).rebalance


def test_the_same_inputs_give_the_same_plan() -> None:
    current = {"aave": 300_000_000 * UNIT // 10, "moonwell": 20_000_000 * UNIT}
    idle = 7_654_321 * UNIT
    rules = Constraints(min_protocols=2, max_ratio={"compound": 0.5})
    plans = [
        optimize(dict(current), idle, _candidates(PROTOCOLS, current), rules, CHEAP)
        for _ in range(3)
    ]
    assert plans[0] == plans[1] == plans[2]
    assert plans[0].rebalance
    _assert_moves_reach_the_target(plans[0], current, idle)


# -- optimize: plans that keep positions -----------------------------------------------------------

KEPT_REASON = (
    "BUG: optimize() treats only positions in a protocol that is no longer allowed or above its "
    "max_allocation_amount as a required exit; holdings breaking any other rule are kept when "
    "moving does not pay, so the plan's target violates the constraint"
)


@pytest.mark.parametrize(
    ("current", "rules"),
    [
        pytest.param(
            {"compound": TOTAL},
            Constraints(excluded=frozenset({"compound"})),
            id="exclude_protocol",
        ),
        pytest.param(
            {"compound": TOTAL},
            Constraints(max_amount={"compound": 500 * UNIT}),
            id="max_allocation_amount_per_protocol",
        ),
        pytest.param(
            {"compound": TOTAL},
            Constraints(max_ratio={"compound": 0.5}),
            id="max_amount_per_protocol",
        ),
        pytest.param(
            {"compound": TOTAL},
            Constraints(min_protocols=2),
            id="min_protocols",
        ),
        pytest.param(
            {"compound": TOTAL},
            Constraints(min_amount={"aave": 100 * UNIT}),
            id="min_allocation_amount_per_protocol",
        ),
        pytest.param(
            {"compound": 950 * UNIT, MORPHO: 50 * UNIT},
            Constraints(min_position=100 * UNIT),
            id="min_amount",
        ),
    ],
)
def test_held_positions_that_break_a_rule_are_moved(
    current: dict[str, int], rules: Constraints
) -> None:
    candidates = _candidates(PROTOCOLS, current)
    # moving does not pay by itself: the unconstrained best is compound
    assert allocate(TOTAL, candidates, Constraints()) == {"compound": TOTAL}
    plan = optimize(current, 0, candidates, rules, CHEAP)
    _check(TOTAL, plan.target, PROTOCOLS, rules)
    assert plan.rebalance


def test_placing_idle_funds_opens_no_position_below_min_position() -> None:
    rules = Constraints(max_amount={"compound": TOTAL}, min_position=100 * UNIT)
    current, idle = {"compound": TOTAL}, 50 * UNIT
    candidates = _candidates(PROTOCOLS, current)
    target = allocate(TOTAL + idle, candidates, rules)
    assert target["compound"] < TOTAL and len(target) == 2  # the target moves out of compound
    plan = optimize(current, idle, candidates, rules, CHEAP)
    # Placing the 50 idle USDC alone would open a position below the minimum, so the plan
    # moves to the target, which respects every rule.
    assert plan.rebalance and "less than its minimum" in plan.reason
    _check(TOTAL + idle, plan.target, PROTOCOLS, rules)
