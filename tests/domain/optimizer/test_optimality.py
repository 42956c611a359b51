"""The optimality check: ``is_settled`` says True only when ``optimize`` would plan no moves,
and it does say True for a wallet whose funds sit where ``optimize`` put them.

Pools are Base USDC's at genesis (seed 7). A settled wallet's pools are quoted after its
own deposits (the holdings are part of the pools' supply), as the chain would show them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.genesis import genesis_pool
from yieldagent.chain.simulated.pools import copy_pool, deposit, quote_of
from yieldagent.domain.constraints import Constraints, Thresholds
from yieldagent.domain.errors import InvalidRequest
from yieldagent.domain.market.curves import Candidate
from yieldagent.domain.market.quotes import PoolQuote
from yieldagent.domain.optimizer.optimality import is_settled
from yieldagent.domain.optimizer.rebalance import Costs, optimize
from yieldagent.simulated_world.state import PoolState

BASE = 8453
SEED = 7
GENESIS = 1_767_225_600
UNIT = 10**6  # one USDC
TOKEN = load_catalog().chain(BASE).tokens[0]
PROTOCOLS = tuple(p.name for p in TOKEN.protocols)
MORPHO = "morpho_gauntlet_usdc_prime"
CHEAP = Costs(gas_usd_per_move=0.01, token_price_usd=1.0, decimals=6)


def _pool(name: str) -> PoolState:
    info = TOKEN.protocol(name)
    assert info is not None
    return genesis_pool(BASE, TOKEN, info, SEED, GENESIS)


POOLS = {name: _pool(name) for name in PROTOCOLS}


def _quote_holding(name: str, amount: int) -> PoolQuote:
    """The pool's quote once the wallet has deposited ``amount`` into it."""
    pool = copy_pool(POOLS[name])
    if amount > 0:
        deposit(pool, amount)
    return quote_of(pool)


def _drift(quote: PoolQuote, factor: float) -> PoolQuote:
    """The pool with every market's borrows scaled by ``factor`` (its rates moved)."""
    markets = tuple(
        dataclasses.replace(m, borrows=min(int(m.borrows * factor), m.supply))
        for m in quote.markets
    )
    return dataclasses.replace(quote, markets=markets)


def _settled(
    names: Sequence[str], total: int, rules: Constraints, costs: Costs, thresholds: Thresholds
) -> tuple[dict[str, int], list[Candidate]]:
    """Where ``optimize`` puts ``total`` idle funds, and the candidates after the deposits."""
    fresh = [Candidate(n, quote_of(POOLS[n])) for n in names]
    plan = optimize({}, total, fresh, rules, costs, thresholds)
    target = dict(plan.target)
    return target, [
        Candidate(n, _quote_holding(n, target.get(n, 0)), target.get(n, 0)) for n in names
    ]


def _assert_implies_no_moves(
    positions: Mapping[str, int],
    idle: int,
    candidates: Sequence[Candidate],
    rules: Constraints,
    costs: Costs,
    thresholds: Thresholds,
) -> bool:
    settled = is_settled(positions, idle, candidates, rules, costs, thresholds)
    if settled:
        plan = optimize(positions, idle, candidates, rules, costs, thresholds)
        assert plan.moves == (), plan
        assert not plan.rebalance
    return settled


# -- strategies ------------------------------------------------------------------------------------


@st.composite
def totals(draw: st.DrawFn) -> int:
    """1,000 to 500,000,000 USDC: the large ones push pools across their kinks."""
    exponent = draw(st.integers(9, 14))
    return draw(st.integers(10**exponent, min(10 ** (exponent + 1), 500_000_000 * UNIT)))


@st.composite
def rule_sets(draw: st.DrawFn, total: int, names: Sequence[str]) -> Constraints:
    """Random constraints of every kind, often none."""
    if draw(st.booleans()):
        return Constraints()
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


costs_drawn = st.builds(
    Costs,
    gas_usd_per_move=st.sampled_from([0.0, 0.01, 1.0, 100.0, 1e6]),
    token_price_usd=st.sampled_from([1.0, 0.9998, 2.5]),
    decimals=st.just(6),
)
thresholds_drawn = st.builds(
    Thresholds,
    horizon_days=st.sampled_from([0.0, 1.0, 30.0, 365.0]),
    min_apr_gain=st.sampled_from([0.0, 0.001, 0.01, 0.05, 0.25, 1.0]),
    max_break_even_days=st.sampled_from([0.0, 1.0, 10.0, 1000.0]),
)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_settled_wallet_plans_no_moves(data: st.DataObject) -> None:
    """Wallets placed by ``optimize`` (then perhaps moved by the pools' drift, a deposit of
    idle funds, a withdrawn position or new rules): whenever the check says settled, the
    full search moves nothing."""
    names = data.draw(st.lists(st.sampled_from(PROTOCOLS), min_size=1, max_size=4, unique=True))
    total = data.draw(totals())
    placing_rules = data.draw(rule_sets(total, names))
    costs = data.draw(costs_drawn)
    thresholds = data.draw(thresholds_drawn)
    try:
        positions, candidates = _settled(names, total, placing_rules, costs, thresholds)
    except InvalidRequest:
        return
    rules = data.draw(st.sampled_from([placing_rules, data.draw(rule_sets(total, names))]))
    drift = data.draw(st.sampled_from([1.0, 1.0, 0.999, 1.001, 0.99, 1.01, 0.9, 1.05]))
    if drift != 1.0:
        candidates = [Candidate(c.protocol, _drift(c.quote, drift), c.current) for c in candidates]
    idle = data.draw(st.sampled_from([0, 0, 0, 1, total // 100]))
    if positions and data.draw(st.integers(0, 4)) == 0:  # part of a position withdrawn
        name = data.draw(st.sampled_from(sorted(positions)))
        positions[name] -= data.draw(st.integers(0, positions[name]))
    try:
        settled = _assert_implies_no_moves(positions, idle, candidates, rules, costs, thresholds)
    except InvalidRequest:
        settled = is_settled(positions, idle, candidates, rules, costs, thresholds)
        assert not settled, "settled, although optimize refuses the rules"
    event("settled" if settled else "not settled")


@st.composite
def holdings(draw: st.DrawFn, total: int, names: Sequence[str]) -> dict[str, int]:
    """A random split of part of ``total`` over ``names``; a position is at most half its pool."""
    held = draw(st.sampled_from([0, total // 3, total, draw(st.integers(0, total))]))
    weights = draw(st.lists(st.integers(0, 100), min_size=len(names), max_size=len(names)))
    if held == 0 or sum(weights) == 0:
        return {}
    split = {
        n: min(held * w // sum(weights), POOLS[n].total_supply() // 2)
        for n, w in zip(names, weights, strict=True)
    }
    return {n: a for n, a in split.items() if a > 0}


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_random_holdings_settled_only_when_nothing_moves(data: st.DataObject) -> None:
    """Arbitrary holdings (some in a protocol that is no longer a candidate), rules, costs
    and thresholds."""
    names = data.draw(st.lists(st.sampled_from(PROTOCOLS), min_size=1, max_size=4, unique=True))
    total = data.draw(totals())
    current = data.draw(holdings(total, names))
    others = [n for n in PROTOCOLS if n not in names]
    exits = data.draw(st.booleans())
    if others and exits:
        gone = data.draw(st.sampled_from(others))
        room = total - sum(current.values())
        current[gone] = min(data.draw(st.integers(0, room)), POOLS[gone].total_supply() // 2)
    idle = total - sum(current.values())
    candidates = [Candidate(n, quote_of(POOLS[n]), current.get(n, 0)) for n in names]
    rules = data.draw(rule_sets(total, names))
    costs, thresholds = data.draw(costs_drawn), data.draw(thresholds_drawn)
    try:
        settled = _assert_implies_no_moves(current, idle, candidates, rules, costs, thresholds)
    except InvalidRequest:
        settled = is_settled(current, idle, candidates, rules, costs, thresholds)
        assert not settled, "settled, although optimize refuses the rules"
    event("settled" if settled else "not settled")


# -- examples -------------------------------------------------------------------------------------


@pytest.mark.parametrize("usdc", [1, 1_000, 10_000, 100_000])
def test_a_wallet_where_optimize_put_it_is_settled(usdc: int) -> None:
    total = usdc * UNIT
    positions, candidates = _settled(PROTOCOLS, total, Constraints(), CHEAP, Thresholds())
    assert sum(positions.values()) == total
    assert is_settled(positions, 0, candidates, Constraints(), CHEAP, Thresholds())
    assert optimize(positions, 0, candidates, Constraints(), CHEAP).moves == ()


@pytest.mark.parametrize(
    "rules",
    [
        Constraints(min_protocols=3),
        Constraints(max_ratio={"compound": 0.5}),
        Constraints(excluded=frozenset({"compound"})),
        Constraints(min_amount={"aave": 100 * UNIT}, max_amount={MORPHO: 300 * UNIT}),
    ],
    ids=["min_protocols", "max_ratio", "excluded", "min_and_max_amount"],
)
def test_a_constrained_wallet_where_optimize_put_it_is_settled(rules: Constraints) -> None:
    total = 10_000 * UNIT
    positions, candidates = _settled(PROTOCOLS, total, rules, CHEAP, Thresholds())
    assert is_settled(positions, 0, candidates, rules, CHEAP, Thresholds())


def test_a_settled_wallet_stays_settled_while_rates_drift_a_little() -> None:
    total = 10_000 * UNIT
    positions, candidates = _settled(PROTOCOLS, total, Constraints(), CHEAP, Thresholds())
    for factor in (0.99, 1.01):
        drifted = [Candidate(c.protocol, _drift(c.quote, factor), c.current) for c in candidates]
        assert is_settled(positions, 0, drifted, Constraints(), CHEAP, Thresholds())


def test_an_empty_wallet_is_settled() -> None:
    candidates = [Candidate(n, quote_of(POOLS[n])) for n in PROTOCOLS]
    assert is_settled({}, 0, candidates, Constraints(), CHEAP, Thresholds())


@pytest.mark.parametrize(
    ("positions", "idle", "rules", "names"),
    [
        ({}, 1_000 * UNIT, Constraints(), PROTOCOLS),  # idle funds to place
        ({"compound": 1_000 * UNIT}, 1, Constraints(), PROTOCOLS),  # even one unit
        ({"compound": 1_000 * UNIT}, 0, Constraints(excluded=frozenset({"compound"})), PROTOCOLS),
        ({"moonwell": 1_000 * UNIT}, 0, Constraints(), ("aave", "compound")),  # deselected
        ({"compound": 1_000 * UNIT}, 0, Constraints(max_ratio={"compound": 0.5}), PROTOCOLS),
        ({"compound": 1_000 * UNIT}, 0, Constraints(min_protocols=2), PROTOCOLS),
        ({"aave": 1_000 * UNIT}, 0, Constraints(), PROTOCOLS),  # compound pays 1.75 points more
    ],
    ids=["idle", "one-idle-unit", "excluded", "deselected", "above-cap", "min-protocols", "pays"],
)
def test_a_wallet_with_something_to_do_is_not_settled(
    positions: dict[str, int], idle: int, rules: Constraints, names: tuple[str, ...]
) -> None:
    candidates = [
        Candidate(n, _quote_holding(n, positions.get(n, 0)), positions.get(n, 0)) for n in names
    ]
    assert not is_settled(positions, idle, candidates, rules, CHEAP, Thresholds())
    assert optimize(positions, idle, candidates, rules, CHEAP).moves != ()


def test_idle_funds_no_protocol_may_take_leave_a_wallet_settled() -> None:
    rules = Constraints(
        excluded=frozenset(PROTOCOLS) - {"compound"}, max_amount={"compound": 500 * UNIT}
    )
    positions, idle = {"compound": 500 * UNIT}, 500 * UNIT
    candidates = [Candidate("compound", _quote_holding("compound", 500 * UNIT), 500 * UNIT)]
    assert is_settled(positions, idle, candidates, rules, CHEAP, Thresholds())
    assert optimize(positions, idle, candidates, rules, CHEAP).moves == ()


def test_a_whale_is_left_to_the_full_search() -> None:
    """Its own rate impact exceeds what the bound can rule out: not sure, so not settled."""
    total = 100_000_000 * UNIT
    thresholds = Thresholds(min_apr_gain=0.01)
    positions, candidates = _settled(PROTOCOLS, total, Constraints(), CHEAP, thresholds)
    assert not is_settled(positions, 0, candidates, Constraints(), CHEAP, thresholds)
    assert optimize(positions, 0, candidates, Constraints(), CHEAP, thresholds).moves == ()
