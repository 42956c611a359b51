"""The domain's errors: InvalidInput and its field violations."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from yieldagent.domain.errors import (
    AccessDenied,
    AuthenticationFailed,
    Conflict,
    FieldViolation,
    InvalidInput,
    InvalidRequest,
    NotFound,
    NotImplementedYet,
    YieldAgentError,
)


def test_invalid_input_needs_a_violation() -> None:
    with pytest.raises(ValueError, match="at least one violation"):
        InvalidInput([])


def test_field_builds_a_single_violation() -> None:
    error = InvalidInput.field(("body", "eoa"), "is bad", "value_error.address")
    assert error.violations == (FieldViolation(("body", "eoa"), "is bad", "value_error.address"),)
    assert error.detail == "body.eoa: is bad"


def test_field_defaults_the_type_to_value_error() -> None:
    (violation,) = InvalidInput.field(("x",), "nope").violations
    assert violation.type == "value_error"


def test_detail_joins_locations_with_dots_and_violations_with_semicolons() -> None:
    error = InvalidInput(
        [
            FieldViolation(("body", "items", 0, "amount"), "must be positive", "value_error"),
            FieldViolation(("query", "chain"), "Field required", "missing"),
        ]
    )
    assert error.detail == ("body.items.0.amount: must be positive; query.chain: Field required")
    assert str(error) == error.detail


def test_violations_are_kept_as_an_immutable_copy() -> None:
    violations = [FieldViolation(("a",), "m", "t")]
    error = InvalidInput(violations)
    violations.append(FieldViolation(("b",), "m", "t"))
    assert len(error.violations) == 1
    assert isinstance(error.violations, tuple)


@given(
    violations=st.lists(
        st.builds(
            FieldViolation,
            loc=st.lists(st.one_of(st.text(max_size=6), st.integers()), max_size=4).map(tuple),
            msg=st.text(max_size=20),
            type=st.text(max_size=10),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_detail_has_one_part_per_violation(violations: list[FieldViolation]) -> None:
    error = InvalidInput(violations)
    expected = "; ".join(f"{'.'.join(map(str, v.loc))}: {v.msg}" for v in violations)
    assert error.detail == expected
    assert error.violations == tuple(violations)


@pytest.mark.parametrize(
    "kind",
    [InvalidRequest, AuthenticationFailed, AccessDenied, NotFound, Conflict, NotImplementedYet],
)
def test_every_error_keeps_its_detail(kind: type[YieldAgentError]) -> None:
    error = kind("what went wrong")
    assert isinstance(error, YieldAgentError)
    assert error.detail == str(error) == "what went wrong"
