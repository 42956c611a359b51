"""Token amounts from requests: one strict parser, and no input that makes it crash."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from yieldagent.domain.amounts import MAX_AMOUNT, parse_amount
from yieldagent.domain.constraints import RawConstraint, parse_constraints
from yieldagent.domain.errors import InvalidInput


def _refusal(text: str, minimum: int = 1) -> tuple[tuple[str | int, ...], str]:
    with pytest.raises(InvalidInput) as caught:
        parse_amount(text, ("body", "amount"), minimum=minimum)
    (violation,) = caught.value.violations
    return violation.loc, violation.type


@pytest.mark.parametrize(
    ("text", "value"),
    [("1", 1), ("1000000", 10**6), ("007", 7), (str(MAX_AMOUNT), MAX_AMOUNT)],
)
def test_decimal_digits_up_to_uint256_are_amounts(text: str, value: int) -> None:
    assert parse_amount(text, ("amount",)) == value


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        pytest.param("", "missing", id="empty"),
        pytest.param("²", "int_parsing", id="superscript two"),
        pytest.param("٣", "int_parsing", id="arabic-indic three"),
        pytest.param("１２", "int_parsing", id="full-width digits"),
        pytest.param("-5", "int_parsing", id="negative"),
        pytest.param("1.5", "int_parsing", id="fraction"),
        pytest.param(" 1", "int_parsing", id="leading space"),
        pytest.param("1_000", "int_parsing", id="underscore"),
        pytest.param("0", "greater_than_equal", id="zero"),
        pytest.param(str(MAX_AMOUNT + 1), "less_than_equal", id="2**256"),
        pytest.param("10" + "0" * 400, "less_than_equal", id="10**401"),
        pytest.param("9" * 5000, "less_than_equal", id="beyond int()'s digit limit"),
    ],
)
def test_anything_else_is_a_422_naming_the_field(text: str, kind: str) -> None:
    assert _refusal(text) == (("body", "amount"), kind)


def test_holdings_may_be_zero_and_may_carry_leading_zeros() -> None:
    assert parse_amount("0", ("x",), minimum=0) == 0
    assert parse_amount("0" * 5000 + "12", ("x",), minimum=0) == 12


@given(st.text(max_size=120))
def test_any_text_is_an_amount_or_an_invalid_input(text: str) -> None:
    try:
        value = parse_amount(text, ("amount",), minimum=0)
    except InvalidInput:
        return
    assert 0 <= value <= MAX_AMOUNT
    assert text.isascii() and text.isdigit()


@pytest.mark.parametrize(
    "value",
    ["9" * 5000, str(MAX_AMOUNT + 1), MAX_AMOUNT + 1, 10**5000, "²"],
    ids=["5000 digits", "2**256 as text", "2**256", "10**5000", "superscript two"],
)
def test_constraint_amounts_use_the_same_parser(value: object) -> None:
    raw = RawConstraint(
        "max_allocation_amount_per_protocol", {"protocol": "aave", "max_amount": value}
    )
    with pytest.raises(InvalidInput) as caught:
        parse_constraints([raw])
    (violation,) = caught.value.violations
    assert violation.loc == ("constraints", 0, "params", "max_amount")


def test_a_constraint_amount_may_be_the_largest_one() -> None:
    raw = RawConstraint("min_amount", {"min_amount": str(MAX_AMOUNT)})
    assert parse_constraints([raw]).min_position == MAX_AMOUNT
