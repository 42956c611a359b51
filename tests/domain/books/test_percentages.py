"""Shares in percent for the statistics: two decimals that sum to exactly 100."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from yieldagent.domain.books.history import percentages

CENT = Decimal("0.01")


def _exact_sum(shares: list[float]) -> Decimal:
    return sum((Decimal(p).quantize(CENT) for p in shares), Decimal(0))


def _has_two_decimals(share: float) -> bool:
    exponent = Decimal(repr(share)).as_tuple().exponent
    return isinstance(exponent, int) and exponent >= -2


@pytest.mark.parametrize(
    ("amounts", "expected"),
    [
        ([1.0], [100.0]),
        ([3.0, 1.0], [75.0, 25.0]),
        ([2.0, 1.0, 1.0], [50.0, 25.0, 25.0]),
        ([1.0, 0.0], [100.0, 0.0]),
        # 33.333… and 66.666…: the larger remainder (.67) gets the missing cent
        ([1.0, 2.0], [33.33, 66.67]),
        # equal remainders: the first ones get the missing cents
        ([1.0, 1.0, 1.0], [33.34, 33.33, 33.33]),
        ([1.0] * 6, [16.67, 16.67, 16.67, 16.67, 16.66, 16.66]),
        ([0.1, 0.2, 0.7], [10.0, 20.0, 70.0]),
        ([1e-12, 1.0], [0.0, 100.0]),
    ],
)
def test_worked_examples(amounts: list[float], expected: list[float]) -> None:
    assert percentages(amounts) == expected


@pytest.mark.parametrize("amounts", [[], [0.0], [0.0, 0.0, 0.0]])
def test_a_zero_total_gives_zeros(amounts: list[float]) -> None:
    assert percentages(amounts) == [0.0] * len(amounts)


AMOUNTS = st.lists(
    st.one_of(st.just(0.0), st.floats(0, 1e15, allow_nan=False, allow_infinity=False)),
    min_size=1,
    max_size=40,
)


@given(AMOUNTS)
def test_shares_sum_to_exactly_one_hundred(amounts: list[float]) -> None:
    assume(sum(amounts) > 0)
    shares = percentages(amounts)
    assert len(shares) == len(amounts)
    assert _exact_sum(shares) == 100
    assert all(_has_two_decimals(p) for p in shares)
    assert all(0 <= p <= 100 for p in shares)


@given(AMOUNTS)
def test_shares_are_proportional_within_a_cent(amounts: list[float]) -> None:
    total = sum(amounts)
    assume(total > 0)
    for amount, share in zip(amounts, percentages(amounts), strict=True):
        exact = Decimal(amount) * 100 / Decimal(total)
        assert abs(Decimal(share) - exact) <= Decimal("0.01") + Decimal("1e-9")


@given(AMOUNTS)
def test_zero_amounts_get_zero_and_the_order_is_kept(amounts: list[float]) -> None:
    assume(sum(amounts) > 0)
    shares = percentages(amounts)
    for amount, share in zip(amounts, shares, strict=True):
        if amount == 0:
            assert share == 0.0
    # a larger amount never gets a smaller share (largest remainder keeps the order)
    for a, pa in zip(amounts, shares, strict=True):
        for b, pb in zip(amounts, shares, strict=True):
            if a > b:
                assert pa >= pb


@given(st.lists(st.just(0.0), max_size=10))
def test_all_zeros_give_all_zeros(amounts: list[float]) -> None:
    assert percentages(amounts) == [0.0] * len(amounts)
