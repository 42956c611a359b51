"""Partner constraints: parsing every kind, reporting every malformed one, storing them."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from yieldagent.domain.constraints import (
    DEFAULT_MIN_FRACTION,
    KINDS,
    Constraints,
    RawConstraint,
    listed,
    parse_constraints,
)
from yieldagent.domain.errors import FieldViolation, InvalidInput

R = RawConstraint


def _violations(*raw: RawConstraint) -> tuple[FieldViolation, ...]:
    with pytest.raises(InvalidInput) as caught:
        parse_constraints(list(raw))
    return caught.value.violations


def _param(index: int, name: str) -> tuple[str | int, ...]:
    return ("constraints", index, "params", name)


# -- each kind ----------------------------------------------------------------------------------


def test_no_constraints_are_the_defaults() -> None:
    parsed = parse_constraints([])
    assert parsed == Constraints()
    assert parsed.min_protocols == 1
    assert parsed.min_fraction == DEFAULT_MIN_FRACTION == 0.05
    assert parsed.min_position == 0
    assert parsed.protocols() == set()


def test_the_six_kinds() -> None:
    assert set(KINDS) == {
        "min_protocols",
        "max_allocation_amount_per_protocol",
        "exclude_protocol",
        "max_amount_per_protocol",
        "min_amount",
        "min_allocation_amount_per_protocol",
    }


def test_min_protocols_defaults_its_fraction() -> None:
    parsed = parse_constraints([R("min_protocols", {"min_protocols": 3})])
    assert (parsed.min_protocols, parsed.min_fraction) == (3, 0.05)


@pytest.mark.parametrize("fraction", [0.01, 0.2, 1])
def test_min_protocols_with_a_fraction(fraction: float) -> None:
    parsed = parse_constraints(
        [R("min_protocols", {"min_protocols": 2, "min_fraction_per_protocol": fraction})]
    )
    assert (parsed.min_protocols, parsed.min_fraction) == (2, fraction)


@pytest.mark.parametrize("amount", ["0", "1000", str(2**200), 1000, 2**200])
def test_max_allocation_amount_per_protocol(amount: str | int) -> None:
    parsed = parse_constraints(
        [R("max_allocation_amount_per_protocol", {"protocol": "aave", "max_amount": amount})]
    )
    assert parsed.max_amount == {"aave": int(amount)}
    assert parsed == Constraints(max_amount={"aave": int(amount)})


def test_exclude_protocol() -> None:
    parsed = parse_constraints(
        [R("exclude_protocol", {"protocol": "aave"}), R("exclude_protocol", {"protocol": "x"})]
    )
    assert parsed.excluded == frozenset({"aave", "x"})
    assert parsed == Constraints(excluded=frozenset({"aave", "x"}))


@pytest.mark.parametrize("ratio", [0, 0.35, 1])
def test_max_amount_per_protocol(ratio: float) -> None:
    parsed = parse_constraints(
        [R("max_amount_per_protocol", {"protocol": "compound", "max_ratio": ratio})]
    )
    assert parsed == Constraints(max_ratio={"compound": ratio})


def test_min_amount_is_the_smallest_position() -> None:
    parsed = parse_constraints([R("min_amount", {"min_amount": "500"})])
    assert parsed == Constraints(min_position=500)


def test_min_allocation_amount_per_protocol() -> None:
    parsed = parse_constraints(
        [R("min_allocation_amount_per_protocol", {"protocol": "moonwell", "min_amount": "7"})]
    )
    assert parsed == Constraints(min_amount={"moonwell": 7})


def test_every_kind_together() -> None:
    parsed = parse_constraints(
        [
            R("min_protocols", {"min_protocols": 2, "min_fraction_per_protocol": 0.1}),
            R("max_allocation_amount_per_protocol", {"protocol": "aave", "max_amount": "10"}),
            R("max_allocation_amount_per_protocol", {"protocol": "morpho", "max_amount": "20"}),
            R("exclude_protocol", {"protocol": "euler"}),
            R("max_amount_per_protocol", {"protocol": "compound", "max_ratio": 0.5}),
            R("min_amount", {"min_amount": "3"}),
            R("min_allocation_amount_per_protocol", {"protocol": "moonwell", "min_amount": "4"}),
        ]
    )
    assert parsed == Constraints(
        min_protocols=2,
        min_fraction=0.1,
        excluded=frozenset({"euler"}),
        max_amount={"aave": 10, "morpho": 20},
        max_ratio={"compound": 0.5},
        min_position=3,
        min_amount={"moonwell": 4},
    )
    assert parsed.protocols() == {"aave", "morpho", "euler", "compound", "moonwell"}


def test_params_of_other_kinds_are_ignored() -> None:
    parsed = parse_constraints([R("exclude_protocol", {"protocol": "aave", "max_ratio": 7})])
    assert parsed == Constraints(excluded=frozenset({"aave"}))


# -- malformed constraints ---------------------------------------------------------------------


def test_an_unknown_kind() -> None:
    (violation,) = _violations(R("max_everything", {}))
    assert violation.loc == ("constraints", 0, "kind")
    assert violation.type == "literal_error"
    assert all(kind in violation.msg for kind in KINDS)


REQUIRED: dict[str, dict[str, Any]] = {
    "min_protocols": {"min_protocols": 2},
    "max_allocation_amount_per_protocol": {"protocol": "aave", "max_amount": "1"},
    "exclude_protocol": {"protocol": "aave"},
    "max_amount_per_protocol": {"protocol": "aave", "max_ratio": 0.5},
    "min_amount": {"min_amount": "1"},
    "min_allocation_amount_per_protocol": {"protocol": "aave", "min_amount": "1"},
}
MISSING = [(kind, name) for kind, params in REQUIRED.items() for name in params]


@pytest.mark.parametrize(("kind", "name"), MISSING, ids=[f"{k}-{n}" for k, n in MISSING])
@pytest.mark.parametrize("how", ["absent", "none"])
def test_a_missing_param(kind: str, name: str, how: str) -> None:
    params = dict(REQUIRED[kind])
    if how == "absent":
        del params[name]
    else:
        params[name] = None
    parse_constraints([R(kind, REQUIRED[kind])])  # complete, it is fine
    assert _violations(R(kind, params)) == (
        FieldViolation(_param(0, name), "Field required", "missing"),
    )


@pytest.mark.parametrize("kind", [k for k, params in REQUIRED.items() if len(params) == 2])
def test_every_missing_param_is_named(kind: str) -> None:
    names = tuple(REQUIRED[kind])
    assert _violations(R(kind, {})) == tuple(
        FieldViolation(_param(0, name), "Field required", "missing") for name in names
    )


@pytest.mark.parametrize(
    ("raw", "name", "message"),
    [
        (R("min_protocols", {"min_protocols": 0}), "min_protocols", "at least 1"),
        (R("min_protocols", {"min_protocols": -3}), "min_protocols", "at least 1"),
        *(
            (
                R("min_protocols", {"min_protocols": 2, "min_fraction_per_protocol": f}),
                "min_fraction_per_protocol",
                "between 0.01 and 1",
            )
            for f in (0.0, 0.009, 1.01, -1.0, math.nan, math.inf)
        ),
        *(
            (
                R("max_allocation_amount_per_protocol", {"protocol": "aave", "max_amount": a}),
                "max_amount",
                "non-negative integer",
            )
            for a in ("-1", -1, "1.5", 1.5, "abc", "", " 1", "1e6", "0x10", True)
        ),
        *(
            (
                R("max_amount_per_protocol", {"protocol": "aave", "max_ratio": r}),
                "max_ratio",
                "between 0 and 1",
            )
            for r in (-0.01, 1.01, math.nan, -math.inf)
        ),
        (R("min_amount", {"min_amount": "-5"}), "min_amount", "non-negative integer"),
        (R("min_amount", {"min_amount": "5.0"}), "min_amount", "non-negative integer"),
        (
            R("min_allocation_amount_per_protocol", {"protocol": "aave", "min_amount": "x"}),
            "min_amount",
            "non-negative integer",
        ),
    ],
)
def test_a_malformed_param(raw: RawConstraint, name: str, message: str) -> None:
    (violation,) = _violations(raw)
    assert violation.loc == _param(0, name)
    assert violation.type == "value_error"
    assert message in violation.msg


def test_both_min_protocols_params_can_be_wrong_at_once() -> None:
    violations = _violations(
        R("min_protocols", {"min_protocols": 0, "min_fraction_per_protocol": 2.0})
    )
    assert [v.loc for v in violations] == [
        _param(0, "min_protocols"),
        _param(0, "min_fraction_per_protocol"),
    ]


def test_several_errors_are_reported_together_with_their_index() -> None:
    violations = _violations(
        R("exclude_protocol", {"protocol": "aave"}),  # fine
        R("nope", {"protocol": "aave"}),
        R("max_amount_per_protocol", {"protocol": "aave", "max_ratio": 2}),
        R("min_amount", {}),
        R("min_protocols", {"min_protocols": 2}),  # fine
        R("max_allocation_amount_per_protocol", {"protocol": "x", "max_amount": "-2"}),
    )
    assert [(v.loc, v.type) for v in violations] == [
        (("constraints", 1, "kind"), "literal_error"),
        (_param(2, "max_ratio"), "value_error"),
        (_param(3, "min_amount"), "missing"),
        (_param(5, "max_amount"), "value_error"),
    ]


def test_the_error_detail_names_each_location() -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_constraints([R("min_amount", {}), R("bad", {})])
    error = caught.value
    assert error.detail == (
        "constraints.0.params.min_amount: Field required; "
        f"constraints.1.kind: Input should be one of {', '.join(KINDS)}"
    )


@pytest.mark.parametrize("amount", ["²", "1²", "①"])
def test_a_non_decimal_digit_amount_is_a_violation(amount: str) -> None:
    (violation,) = _violations(R("min_amount", {"min_amount": amount}))
    assert violation.loc == _param(0, "min_amount")


# -- storing ------------------------------------------------------------------------------------

NAMES = st.sampled_from(["aave", "compound", "moonwell", "morpho", "euler"])
AMOUNTS = st.integers(0, 2**200)
RATIOS = st.one_of(st.sampled_from([0.0, 0.05, 0.5, 1.0]), st.floats(0, 1))


def _raw() -> st.SearchStrategy[RawConstraint]:
    return st.one_of(
        st.builds(
            lambda n, f: R("min_protocols", {"min_protocols": n, "min_fraction_per_protocol": f}),
            st.integers(1, 10),
            st.one_of(st.none(), st.floats(0.01, 1)),
        ),
        st.builds(
            lambda p, a, s: R(
                "max_allocation_amount_per_protocol",
                {"protocol": p, "max_amount": str(a) if s else a},
            ),
            NAMES,
            AMOUNTS,
            st.booleans(),
        ),
        st.builds(lambda p: R("exclude_protocol", {"protocol": p}), NAMES),
        st.builds(
            lambda p, r: R("max_amount_per_protocol", {"protocol": p, "max_ratio": r}),
            NAMES,
            RATIOS,
        ),
        st.builds(lambda a: R("min_amount", {"min_amount": str(a)}), AMOUNTS),
        st.builds(
            lambda p, a: R(
                "min_allocation_amount_per_protocol", {"protocol": p, "min_amount": str(a)}
            ),
            NAMES,
            AMOUNTS,
        ),
    )


@given(st.lists(_raw(), max_size=12))
def test_any_valid_set_parses_and_round_trips_through_json(raw: list[RawConstraint]) -> None:
    parsed = parse_constraints(raw)
    text = parsed.to_json()
    restored = Constraints.from_json(text)
    assert restored == parsed
    assert restored.to_json() == text
    # what each constraint said is in the parsed set (later ones of a protocol win)
    for item in raw:
        params = item.params
        if item.kind == "exclude_protocol":
            assert params["protocol"] in parsed.excluded
        elif item.kind == "min_amount":
            assert parsed.min_position == int(
                next(r.params["min_amount"] for r in reversed(raw) if r.kind == "min_amount")
            )
    assert parsed.protocols() <= {"aave", "compound", "moonwell", "morpho", "euler"}


@given(
    st.builds(
        Constraints,
        min_protocols=st.integers(1, 50),
        min_fraction=st.floats(0.01, 1),
        excluded=st.frozensets(NAMES),
        max_amount=st.dictionaries(NAMES, AMOUNTS),
        max_ratio=st.dictionaries(NAMES, RATIOS),
        min_position=AMOUNTS,
        min_amount=st.dictionaries(NAMES, AMOUNTS),
    )
)
def test_constraints_round_trip_through_json(constraints: Constraints) -> None:
    restored = Constraints.from_json(constraints.to_json())
    assert restored == constraints
    assert restored.protocols() == (
        set(constraints.excluded)
        | set(constraints.max_amount)
        | set(constraints.max_ratio)
        | set(constraints.min_amount)
    )


def test_json_keeps_big_amounts_exact_as_strings() -> None:
    constraints = Constraints(max_amount={"aave": 2**200 + 1}, min_position=2**70 + 3)
    text = constraints.to_json()
    assert f'"{2**200 + 1}"' in text
    assert f'"{2**70 + 3}"' in text
    restored = Constraints.from_json(text)
    assert restored.max_amount["aave"] == 2**200 + 1
    assert restored.min_position == 2**70 + 3


def test_protocols_gathers_every_mentioned_name() -> None:
    constraints = Constraints(
        excluded=frozenset({"a"}),
        max_amount={"b": 1},
        max_ratio={"c": 0.5, "a": 0.1},
        min_amount={"d": 2},
        min_position=5,
    )
    assert constraints.protocols() == {"a", "b", "c", "d"}


_names = st.sampled_from(["aave", "compound", "moonwell"])
_amounts = st.integers(min_value=0, max_value=10**30)


@given(
    min_protocols=st.integers(min_value=1, max_value=4),
    fraction=st.sampled_from([0.01, 0.05, 0.1, 0.25, 1.0]),
    excluded=st.frozensets(_names),
    max_amount=st.dictionaries(_names, _amounts),
    max_ratio=st.dictionaries(_names, st.sampled_from([0.0, 0.3, 0.5, 1.0])),
    min_position=_amounts,
    min_amount=st.dictionaries(_names, _amounts),
)
def test_listed_constraints_read_back_as_the_same_rules(
    min_protocols: int,
    fraction: float,
    excluded: frozenset[str],
    max_amount: dict[str, int],
    max_ratio: dict[str, float],
    min_position: int,
    min_amount: dict[str, int],
) -> None:
    rules = Constraints(
        min_protocols, fraction, excluded, max_amount, max_ratio, min_position, min_amount
    )
    assert parse_constraints(listed(rules)) == rules


def test_no_constraints_list_as_none() -> None:
    assert listed(Constraints()) == []
    assert listed(parse_constraints([RawConstraint("min_protocols", {"min_protocols": 1})])) == []
