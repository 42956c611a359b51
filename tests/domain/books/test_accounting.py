"""Money rules: how a withdrawal splits into principal, yield and fee, and where it is taken
from."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from yieldagent.domain.books.accounting import (
    BPS,
    Source,
    WithdrawalSplit,
    plan_withdrawal,
    split_withdrawal,
    withdrawable,
)
from yieldagent.domain.errors import InvalidRequest

BIG = 2**200

# -- split_withdrawal -------------------------------------------------------------------------


@st.composite
def withdrawals(draw: st.DrawFn) -> tuple[int, int, int, int]:
    """(amount, value, principal, fee_bps) with 0 < amount <= value."""
    value = draw(st.integers(1, BIG))
    amount = draw(st.integers(1, value))
    principal = draw(st.one_of(st.integers(0, 2 * value), st.integers(0, BIG)))
    fee_bps = draw(st.integers(0, BPS))
    return amount, value, principal, fee_bps


@given(withdrawals())
def test_split_properties(case: tuple[int, int, int, int]) -> None:
    amount, value, principal, fee_bps = case
    split = split_withdrawal(amount, value, principal, fee_bps)
    available = max(value - principal, 0)
    assert split.amount == amount
    assert split.principal + split.yield_ == amount
    assert 0 <= split.fee <= split.yield_
    assert split.fee == split.yield_ * fee_bps // BPS
    assert split.to_user == amount - split.fee
    assert 0 <= split.yield_ <= available
    assert split.principal >= 0
    # pro rata, rounded down: yield <= amount × available ÷ value < yield + 1
    exact = Fraction(amount * available, value)
    assert split.yield_ <= exact < split.yield_ + 1
    if value <= principal:  # a loss, or break-even: nothing counts as yield
        assert split.yield_ == 0
        assert split.fee == 0
        assert split.principal == amount
        assert split.to_user == amount


@given(value=st.integers(1, BIG), principal=st.integers(0, BIG), fee_bps=st.integers(0, BPS))
def test_withdrawing_everything_takes_all_the_yield(
    value: int, principal: int, fee_bps: int
) -> None:
    split = split_withdrawal(value, value, principal, fee_bps)
    assert split.yield_ == max(value - principal, 0)
    assert split.principal == min(principal, value)


@given(withdrawals())
def test_a_zero_fee_takes_nothing_and_a_full_fee_takes_all_the_yield(
    case: tuple[int, int, int, int],
) -> None:
    amount, value, principal, _ = case
    free = split_withdrawal(amount, value, principal, 0)
    assert free.fee == 0
    assert free.to_user == amount
    full = split_withdrawal(amount, value, principal, BPS)
    assert full.fee == full.yield_
    assert full.to_user == full.principal


@pytest.mark.parametrize(
    ("amount", "value", "principal", "fee_bps", "expected"),
    [
        # 50 of 1,050 is yield: 210 × 50 ÷ 1,050 = 10; 10 % of 10 = 1.
        (210, 1_050, 1_000, 1_000, WithdrawalSplit(210, 200, 10, 1)),
        # everything: all 50 of yield; 20 % of 50 = 10.
        (1_050, 1_050, 1_000, 2_000, WithdrawalSplit(1_050, 1_000, 50, 10)),
        # a loss: value 900 below principal 1,000, so no yield and no fee.
        (450, 900, 1_000, 1_000, WithdrawalSplit(450, 450, 0, 0)),
        # break-even: no yield either.
        (400, 1_000, 1_000, 10_000, WithdrawalSplit(400, 400, 0, 0)),
        # yield rounds down: 1 × 2 ÷ 3 = 0.67 → 0.
        (1, 3, 1, 5_000, WithdrawalSplit(1, 1, 0, 0)),
        # fee rounds down: 209 × 45 ÷ 1,045 = 9 of yield; 10 % of 9 = 0.9 → 0.
        (209, 1_045, 1_000, 1_000, WithdrawalSplit(209, 200, 9, 0)),
        # no principal at all (e.g. all withdrawn earlier): everything is yield.
        (300, 500, 0, 1_500, WithdrawalSplit(300, 0, 300, 45)),
    ],
)
def test_worked_examples(
    amount: int, value: int, principal: int, fee_bps: int, expected: WithdrawalSplit
) -> None:
    split = split_withdrawal(amount, value, principal, fee_bps)
    assert split == expected


def test_the_user_receives_the_amount_less_the_fee() -> None:
    assert split_withdrawal(210, 1_050, 1_000, 1_000).to_user == 209


def test_exact_with_amounts_beyond_floats() -> None:
    value, principal = 10**40 + 7, 10**40
    split = split_withdrawal(value, value, principal, 3_333)
    assert split.yield_ == 7
    assert split.fee == 7 * 3_333 // BPS == 2
    assert split.principal == 10**40


@pytest.mark.parametrize(
    ("amount", "value", "fee_bps", "message"),
    [
        (0, 100, 0, "amount must be positive"),
        (-1, 100, 0, "amount must be positive"),
        (101, 100, 0, "at most the value"),
        (1, 0, 0, "at most the value"),
        (10, 100, -1, "fee_bps must lie in 0..10000"),
        (10, 100, 10_001, "fee_bps must lie in 0..10000"),
    ],
)
def test_invalid_inputs_raise_value_error(
    amount: int, value: int, fee_bps: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        split_withdrawal(amount, value, 50, fee_bps)


# -- plan_withdrawal and withdrawable ---------------------------------------------------------


def _holding(protocol: str | None, value: int, apr: float = 0.0, liquidity: int = BIG) -> Source:
    return Source(protocol, value, apr, liquidity)


IDLE = _holding(None, 100)
AAVE = _holding("aave", 500, apr=5.0)
COMPOUND = _holding("compound", 500, apr=3.0)
MOONWELL = _holding("moonwell", 500, apr=4.0)


def test_withdrawable_sums_values_capped_by_liquidity() -> None:
    assert withdrawable([]) == 0
    assert withdrawable([IDLE, AAVE, COMPOUND]) == 1_100
    assert withdrawable([IDLE, _holding("aave", 500, liquidity=120)]) == 220
    assert withdrawable([_holding("aave", 500, liquidity=0)]) == 0


def test_idle_funds_go_first() -> None:
    assert plan_withdrawal(60, [AAVE, COMPOUND, IDLE]) == [(None, 60)]
    assert plan_withdrawal(100, [AAVE, IDLE]) == [(None, 100)]


def test_then_positions_from_the_lowest_apr_up() -> None:
    assert plan_withdrawal(1_200, [AAVE, IDLE, MOONWELL, COMPOUND]) == [
        (None, 100),
        ("compound", 500),
        ("moonwell", 500),
        ("aave", 100),
    ]


def test_a_pool_gives_no_more_than_its_liquidity() -> None:
    thin = _holding("compound", 500, apr=3.0, liquidity=200)
    assert plan_withdrawal(700, [IDLE, AAVE, thin]) == [
        (None, 100),
        ("compound", 200),
        ("aave", 400),
    ]


def test_equal_aprs_are_taken_in_name_order() -> None:
    b = _holding("b", 10, apr=2.0)
    a = _holding("a", 10, apr=2.0)
    assert plan_withdrawal(15, [b, a]) == [("a", 10), ("b", 5)]


def test_everything_withdrawable_can_be_withdrawn() -> None:
    thin = _holding("compound", 500, apr=3.0, liquidity=200)
    holdings = [IDLE, AAVE, thin]
    assert withdrawable(holdings) == 800
    plan = plan_withdrawal(800, holdings)
    assert plan == [(None, 100), ("compound", 200), ("aave", 500)]


def test_nothing_to_take_gives_an_empty_plan() -> None:
    assert plan_withdrawal(0, [IDLE, AAVE]) == []
    assert plan_withdrawal(0, []) == []


def test_more_than_withdrawable_is_refused_naming_the_balance() -> None:
    thin = _holding("compound", 500, apr=3.0, liquidity=200)
    with pytest.raises(InvalidRequest, match=r"Amount 801 exceeds the withdrawable balance of 800"):
        plan_withdrawal(801, [IDLE, AAVE, thin])
    with pytest.raises(InvalidRequest, match=r"withdrawable balance of 0"):
        plan_withdrawal(1, [])


@st.composite
def holdings_and_amount(draw: st.DrawFn) -> tuple[list[Source], int]:
    names = draw(st.lists(st.sampled_from("abcdefgh"), unique=True, max_size=6))
    holdings = [
        Source(
            name,
            draw(st.integers(0, 10**30)),
            draw(st.sampled_from([0.0, 1.5, 2.0, 3.25, 7.0])),
            draw(st.integers(0, 10**30)),
        )
        for name in names
    ]
    if draw(st.booleans()):
        holdings.append(Source(None, draw(st.integers(0, 10**30)), 0.0, draw(st.integers(0, BIG))))
    holdings = draw(st.permutations(holdings))
    amount = draw(st.integers(0, withdrawable(holdings)))
    return holdings, amount


def _order(holding: Source) -> tuple[bool, float, str]:
    return holding.protocol is not None, holding.apr, holding.protocol or ""


@given(holdings_and_amount())
def test_plans_take_exactly_the_amount_cheapest_first(case: tuple[list[Source], int]) -> None:
    holdings, amount = case
    plan = plan_withdrawal(amount, holdings)
    assert sum(take for _, take in plan) == amount
    assert all(take > 0 for _, take in plan)
    by_name = {h.protocol: h for h in holdings}
    assert len({name for name, _ in plan}) == len(plan)  # each holding once
    taken = dict(plan)
    for name, take in plan:
        assert take <= min(by_name[name].value, by_name[name].withdrawable)
    # Greedy: a holding is touched only once every cheaper one gave all it could.
    ordered = sorted(holdings, key=_order)
    touched = [i for i, h in enumerate(ordered) if h.protocol in taken]
    if touched:
        for holding in ordered[: touched[-1]]:
            assert taken.get(holding.protocol, 0) == min(holding.value, holding.withdrawable)
    # The plan lists idle funds first, then positions by rising APR.
    assert [_order(by_name[name]) for name, _ in plan] == sorted(
        _order(by_name[name]) for name, _ in plan
    )


@given(holdings_and_amount(), st.integers(1, 10**6))
def test_anything_beyond_withdrawable_is_refused(
    case: tuple[list[Source], int], excess: int
) -> None:
    holdings, _ = case
    available = withdrawable(holdings)
    with pytest.raises(InvalidRequest, match=f"withdrawable balance of {available}$"):
        plan_withdrawal(available + excess, holdings)
