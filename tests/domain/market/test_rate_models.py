"""Interest rate models: hand-computed values, the Morpho adaptive curve, and properties."""

from __future__ import annotations

import math
from decimal import Context, Decimal, localcontext
from fractions import Fraction as F

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from yieldagent.domain.market.rate_models import (
    INITIAL_RATE_AT_TARGET,
    LN2_EXACT,
    MAX_RATE_AT_TARGET,
    MIN_RATE_AT_TARGET,
    RAY,
    SECONDS_PER_YEAR,
    AaveV3,
    CompoundV3,
    Moonwell,
    MorphoBlue,
    RateModel,
    Rates,
    apr_percent,
    apy_from_apr,
    model_for,
    percent,
    ray_div,
    ray_exp,
    ray_mul,
)

KINDS = ("aave_v3", "compound_v3", "morpho_blue", "moonwell")
SUPPLY = 1_000_000 * 10**6  # 1M USDC, in its smallest units
DAY = 86_400

amounts = st.integers(min_value=0, max_value=10**30)
rates_at_target = st.integers(min_value=MIN_RATE_AT_TARGET, max_value=MAX_RATE_AT_TARGET)


def _borrows(utilization: str) -> int:
    borrows = F(utilization) * SUPPLY
    assert borrows.denominator == 1
    return int(borrows)


def _assert_rates(actual: Rates, borrow: F | int, supply: F | int) -> None:
    assert abs(actual.borrow - F(borrow) * RAY) <= 2, (apr_percent(actual.borrow), float(borrow))
    assert abs(actual.supply - F(supply) * RAY) <= 2, (apr_percent(actual.supply), float(supply))


def _state(model: RateModel, rate_at_target: int) -> int:
    return rate_at_target if model.kind == "morpho_blue" else model.initial_rate_at_target()


# --- helpers ---------------------------------------------------------------------------------


def test_ray_mul_and_ray_div_round_half_up() -> None:
    assert ray_mul(3, RAY // 2) == 2  # 1.5 units
    assert ray_mul(1, RAY // 2 - 1) == 0
    assert ray_mul(2 * RAY, 3 * RAY) == 6 * RAY
    assert ray_div(1, 2 * RAY) == 1  # half a unit rounds up
    assert ray_div(2, 3) == 666_666_666_666_666_666_666_666_667
    assert ray_div(-9 * RAY // 10, 9 * RAY // 10) == -RAY


def test_percent_is_exact() -> None:
    assert percent("0.04") == percent(0.04) == 4 * RAY // 100
    assert percent("1.6") == 16 * RAY // 10
    assert percent("0.001") == RAY // 1000
    assert percent(0.1) == RAY // 10  # from the float's shortest repr, not its binary value
    assert percent("1e-27") == 1
    assert percent(1) == RAY


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_percent_rejects_non_finite(value: str) -> None:
    with pytest.raises(ValueError, match="finite"):
        percent(value)


def test_apr_and_apy_in_percent() -> None:
    assert apr_percent(percent("0.04")) == 4.0
    assert apr_percent(0) == 0.0
    assert apy_from_apr(0) == 0.0
    context = Context(prec=60)
    per_second = context.divide(Decimal("0.04"), SECONDS_PER_YEAR)
    exact = (context.power(1 + per_second, SECONDS_PER_YEAR) - 1) * 100
    assert apy_from_apr(percent("0.04")) == pytest.approx(float(exact), rel=1e-12)
    assert apy_from_apr(1000 * RAY) == math.inf


@given(st.integers(min_value=0, max_value=10**4 * RAY))
def test_apy_is_never_below_apr(rate: int) -> None:
    assert apy_from_apr(rate) >= apr_percent(rate)


def test_ln2_constant() -> None:
    with localcontext(Context(prec=80)):
        assert int(Decimal(2).ln().scaleb(45).to_integral_value()) == LN2_EXACT


def test_ray_exp_exact_points() -> None:
    assert ray_exp(0) == RAY
    assert ray_exp(-100 * RAY) == 0
    assert abs(ray_exp(RAY) - 2_718_281_828_459_045_235_360_287_471) <= 1


@given(st.integers(min_value=-60 * RAY, max_value=60 * RAY))
def test_ray_exp_matches_math_exp(x: int) -> None:
    expected = math.exp(x / RAY)
    if expected * RAY > 10**15:  # enough units for 1e-12 once rounded to RAY
        assert ray_exp(x) / RAY == pytest.approx(expected, rel=1e-12)


@given(st.integers(min_value=-40 * RAY, max_value=40 * RAY))
def test_ray_exp_is_accurate_to_the_last_ray_digit(x: int) -> None:
    with localcontext(Context(prec=100)):
        exact = Decimal(x).scaleb(-27).exp().scaleb(27)
        assert abs(ray_exp(x) - exact) <= 1 + exact * Decimal("1e-36")


def test_utilization() -> None:
    model = AaveV3.base_usdc()
    assert model.utilization(0, 0) == 0
    assert model.utilization(0, 5) == 0
    assert model.utilization(SUPPLY, 0) == 0
    assert model.utilization(SUPPLY, _borrows("0.5")) == RAY // 2
    assert model.utilization(3, 2) == 666_666_666_666_666_666_666_666_667
    assert model.utilization(SUPPLY, 2 * SUPPLY) == RAY  # capped


# --- hand-computed values --------------------------------------------------------------------

AAVE = [
    ("0", 0, 0),
    ("0.5", F("0.04") * F("0.5") / F("0.9"), F("0.04") * F("0.5") / F("0.9") * F("0.5") * F("0.9")),
    ("0.9", F("0.04"), F("0.04") * F("0.9") * F("0.9")),
    (
        "0.95",
        F("0.04") + F("0.60") * (F("0.95") - F("0.9")) / (1 - F("0.9")),
        (F("0.04") + F("0.60") * F("0.05") / F("0.1")) * F("0.95") * F("0.9"),
    ),
    ("1", F("0.04") + F("0.60"), (F("0.04") + F("0.60")) * 1 * F("0.9")),
]

COMPOUND = [
    ("0", F("0.015"), 0),
    ("0.5", F("0.015") + F("0.053") * F("0.5"), F("0.048") * F("0.5")),
    ("0.85", F("0.015") + F("0.053") * F("0.85"), F("0.048") * F("0.85")),
    (
        "0.95",
        F("0.015") + F("0.053") * F("0.85") + F("1.8") * (F("0.95") - F("0.85")),
        F("0.048") * F("0.85") + F("1.6") * (F("0.95") - F("0.85")),
    ),
    (
        "1",
        F("0.015") + F("0.053") * F("0.85") + F("1.8") * (1 - F("0.85")),
        F("0.048") * F("0.85") + F("1.6") * (1 - F("0.85")),
    ),
]

MOONWELL = [
    ("0", 0, 0),
    ("0.5", F("0.067") * F("0.5"), F("0.067") * F("0.5") * F("0.5") * F("0.9")),
    ("0.9", F("0.067") * F("0.9"), F("0.067") * F("0.9") * F("0.9") * F("0.9")),
    (
        "0.95",
        F("0.067") * F("0.9") + 9 * (F("0.95") - F("0.9")),
        (F("0.067") * F("0.9") + 9 * F("0.05")) * F("0.95") * F("0.9"),
    ),
    (
        "1",
        F("0.067") * F("0.9") + 9 * (1 - F("0.9")),
        (F("0.067") * F("0.9") + 9 * F("0.1")) * 1 * F("0.9"),
    ),
]

# rate at target 4%: err = (u - 0.9) / 0.9 below the target, (u - 0.9) / 0.1 above it
MORPHO = [
    ("0", F("0.04") * (F(3, 4) * -1 + 1), 0),
    ("0.45", F("0.04") * (F(3, 4) * F(-1, 2) + 1), F("0.04") * F(5, 8) * F("0.45")),
    ("0.9", F("0.04"), F("0.04") * F("0.9")),
    ("0.95", F("0.04") * (3 * F(1, 2) + 1), F("0.04") * F(5, 2) * F("0.95")),
    ("1", F("0.04") * (3 * 1 + 1), F("0.04") * 4 * 1),
]


@pytest.mark.parametrize(("utilization", "borrow", "supply"), AAVE)
def test_aave_v3(utilization: str, borrow: F, supply: F) -> None:
    rates = AaveV3.base_usdc().rates(SUPPLY, _borrows(utilization), 0)
    _assert_rates(rates, borrow, supply)


@pytest.mark.parametrize(("utilization", "borrow", "supply"), COMPOUND)
def test_compound_v3(utilization: str, borrow: F, supply: F) -> None:
    rates = CompoundV3.base_usdc().rates(SUPPLY, _borrows(utilization), 0)
    _assert_rates(rates, borrow, supply)


@pytest.mark.parametrize(("utilization", "borrow", "supply"), MOONWELL)
def test_moonwell(utilization: str, borrow: F, supply: F) -> None:
    rates = Moonwell.base_usdc().rates(SUPPLY, _borrows(utilization), 0)
    _assert_rates(rates, borrow, supply)


@pytest.mark.parametrize(("utilization", "borrow", "supply"), MORPHO)
def test_morpho_blue(utilization: str, borrow: F, supply: F) -> None:
    rates = MorphoBlue.base_usdc().rates(SUPPLY, _borrows(utilization), percent("0.04"))
    _assert_rates(rates, borrow, supply)


def test_morpho_blue_fee_is_taken_from_suppliers() -> None:
    rates = MorphoBlue(fee=percent("0.1")).rates(SUPPLY, _borrows("0.95"), percent("0.04"))
    _assert_rates(rates, F("0.1"), F("0.1") * F("0.95") * F("0.9"))


# --- Morpho Blue's adaptive curve ------------------------------------------------------------


@pytest.mark.parametrize("rate_at_target", [MIN_RATE_AT_TARGET, percent("0.073"), RAY])
def test_morpho_curve_around_the_rate_at_target(rate_at_target: int) -> None:
    model = MorphoBlue.base_usdc()
    assert model.rates(SUPPLY, _borrows("0.9"), rate_at_target).borrow == rate_at_target
    assert abs(model.rates(SUPPLY, 0, rate_at_target).borrow - F(rate_at_target, 4)) <= 1
    assert model.rates(SUPPLY, SUPPLY, rate_at_target).borrow == 4 * rate_at_target


def test_morpho_initial_state() -> None:
    model = MorphoBlue.base_usdc()
    assert model.initial_rate_at_target() == INITIAL_RATE_AT_TARGET == percent("0.04")
    # 0 is an uninitialized market, as on chain
    assert model.rates(SUPPLY, _borrows("0.9"), 0).borrow == INITIAL_RATE_AT_TARGET
    assert model.adapt(SUPPLY, _borrows("0.9"), 0, DAY) == INITIAL_RATE_AT_TARGET


def test_morpho_adapt_clamps_at_200_percent() -> None:
    model = MorphoBlue.base_usdc()
    assert model.error(SUPPLY, SUPPLY) == RAY
    # e^50 times 4% is far above 200% a year
    assert percent("0.04") * math.exp(50) > MAX_RATE_AT_TARGET
    assert model.adapt(SUPPLY, SUPPLY, percent("0.04"), SECONDS_PER_YEAR) == MAX_RATE_AT_TARGET
    assert model.adapt(SUPPLY, SUPPLY, MAX_RATE_AT_TARGET, 10**6 * SECONDS_PER_YEAR) == (
        MAX_RATE_AT_TARGET
    )


def test_morpho_adapt_clamps_at_a_tenth_of_a_percent() -> None:
    model = MorphoBlue.base_usdc()
    assert model.error(SUPPLY, 0) == -RAY
    assert model.adapt(SUPPLY, 0, percent("0.04"), SECONDS_PER_YEAR) == MIN_RATE_AT_TARGET


@given(rates_at_target, st.integers(min_value=0, max_value=100 * SECONDS_PER_YEAR))
def test_morpho_adapt_at_target_is_unchanged(rate_at_target: int, seconds: int) -> None:
    model = MorphoBlue.base_usdc()
    assert model.adapt(SUPPLY, _borrows("0.9"), rate_at_target, seconds) == rate_at_target


def test_morpho_adapt_without_time_is_unchanged() -> None:
    assert MorphoBlue.base_usdc().adapt(SUPPLY, 0, percent("0.04"), 0) == percent("0.04")


@pytest.mark.parametrize(
    ("utilization", "err", "seconds"),
    [("0", -1, DAY // 2), ("0.45", -0.5, DAY), ("1", 1, 3600), ("0.95", 0.5, 7 * DAY)],
)
def test_morpho_adapt_follows_exp(utilization: str, err: float, seconds: int) -> None:
    start = percent("0.04")
    adapted = MorphoBlue.base_usdc().adapt(SUPPLY, _borrows(utilization), start, seconds)
    expected = 0.04 * math.exp(50 / SECONDS_PER_YEAR * err * seconds)
    assert adapted / RAY == pytest.approx(expected, rel=1e-12)


# --- model_for ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_model_for_every_kind(kind: str) -> None:
    model = model_for(kind)
    assert model.kind == kind
    expected: dict[str, RateModel] = {
        "aave_v3": AaveV3.base_usdc(),
        "compound_v3": CompoundV3.base_usdc(),
        "morpho_blue": MorphoBlue.base_usdc(),
        "moonwell": Moonwell.base_usdc(),
    }
    assert model == expected[kind]


def test_model_for_an_unknown_kind() -> None:
    with pytest.raises(ValueError, match="euler"):
        model_for("euler")


@pytest.mark.parametrize("kind", ["aave_v3", "compound_v3", "moonwell"])
def test_static_models_do_not_adapt(kind: str) -> None:
    model = model_for(kind)
    assert model.initial_rate_at_target() == 0
    assert model.adapt(SUPPLY, SUPPLY, 0, SECONDS_PER_YEAR) == 0
    assert model.adapt(SUPPLY, 0, 123, DAY) == 123


# --- properties ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@given(supply=amounts, borrows=amounts)
def test_utilization_is_a_fraction(kind: str, supply: int, borrows: int) -> None:
    assert 0 <= model_for(kind).utilization(supply, borrows) <= RAY


@pytest.mark.parametrize("kind", KINDS)
@given(supply=amounts, borrows=amounts, rate_at_target=rates_at_target)
def test_supply_rate_is_at_most_the_borrow_rate(
    kind: str, supply: int, borrows: int, rate_at_target: int
) -> None:
    model = model_for(kind)
    rates = model.rates(supply, borrows, _state(model, rate_at_target))
    assert 0 <= rates.supply <= rates.borrow


@pytest.mark.parametrize("kind", KINDS)
@given(supply=amounts, borrows=amounts, more=amounts, rate_at_target=rates_at_target)
def test_rates_do_not_fall_as_borrows_grow(
    kind: str, supply: int, borrows: int, more: int, rate_at_target: int
) -> None:
    model = model_for(kind)
    state = _state(model, rate_at_target)
    before = model.rates(supply, borrows, state)
    after = model.rates(supply, borrows + more, state)
    assert after.borrow >= before.borrow
    assert after.supply >= before.supply


@pytest.mark.parametrize("kind", KINDS)
@given(supply=amounts, borrows=amounts, deposit=amounts, rate_at_target=rates_at_target)
def test_a_deposit_never_raises_the_rates(
    kind: str, supply: int, borrows: int, deposit: int, rate_at_target: int
) -> None:
    assume(supply > 0 or borrows == 0)  # borrows without supply: utilization 0 by convention
    model = model_for(kind)
    state = _state(model, rate_at_target)
    before = model.rates(supply, borrows, state)
    after = model.rates(supply + deposit, borrows, state)
    assert after.supply <= before.supply
    assert after.borrow <= before.borrow
