"""The contracts' own integer math: Morpho's accrual and IRM, and the per-second models."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from yieldagent.chain.web3.protocols import morpho_math as mm
from yieldagent.chain.web3.protocols.onchain_models import (
    AdaptiveCurveModel,
    CometModel,
    JumpRateModel,
    annual,
)
from yieldagent.domain.market.rate_models import (
    CompoundV3,
    Moonwell,
    MorphoBlue,
    RateModel,
    percent,
)

YEAR = 31_536_000


@given(st.integers(min_value=-20 * mm.WAD, max_value=20 * mm.WAD))
def test_w_exp_approximates_exp(x: int) -> None:
    # a 2nd-order Taylor polynomial on |r| <= ln2/2 is off by (e^r - 1 - r - r²/2) / e^r < 1.1%
    assert mm.w_exp(x) == pytest.approx(math.exp(x / mm.WAD) * mm.WAD, rel=1.1e-2)


def test_w_exp_is_exact_where_the_taylor_term_vanishes() -> None:
    assert mm.w_exp(0) == mm.WAD
    assert mm.w_exp(mm.LN_2) == 2 * mm.WAD  # q = 1, r = 0
    assert mm.w_exp(mm.LN_WEI - 1) == 0


def _market(supply: int, borrows: int, last_update: int, fee: int = 0) -> mm.MarketState:
    return mm.MarketState(supply, supply * 10**6, borrows, borrows * 10**6, last_update, fee)


def test_a_market_at_its_last_update_is_unchanged() -> None:
    market = _market(1_000_000, 900_000, 50)
    assert mm.accrued(market, mm.INITIAL_RATE_AT_TARGET, 50) == (market, mm.INITIAL_RATE_AT_TARGET)


def test_accrual_at_target_adds_interest_at_the_rate_at_target() -> None:
    market = _market(10**12, 9 * 10**11, 0)  # at the target utilization: err = 0
    rate = 4 * mm.WAD // 100 // YEAR
    accrued, rate_at_target = mm.accrued(market, rate, 86_400)
    assert rate_at_target == rate  # no drift at target
    interest = accrued.total_borrow_assets - market.total_borrow_assets
    assert interest == pytest.approx(9 * 10**11 * math.expm1(rate * 86_400 / mm.WAD), rel=1e-6)
    assert accrued.total_supply_assets - market.total_supply_assets == interest
    assert accrued.last_update == 86_400


def test_the_rate_at_target_drifts_as_the_domain_model_adapts() -> None:
    market = _market(10**12, 5 * 10**11, 0)  # far below target: it falls
    start = 4 * mm.WAD // 100 // YEAR
    _, end = mm.accrued(market, start, 86_400)
    domain = MorphoBlue().adapt(10**12, 5 * 10**11, annual(start), 86_400)
    assert end < start
    # the IRM's exp is a 2nd-order Taylor polynomial: off by r³/6 with r = -0.06 here
    assert annual(end) == pytest.approx(domain, rel=1e-4)


def test_a_fee_mints_shares_to_the_fee_recipient() -> None:
    market = _market(10**12, 9 * 10**11, 0, fee=mm.WAD // 10)
    accrued, _ = mm.accrued(market, mm.INITIAL_RATE_AT_TARGET, 86_400)
    assert accrued.total_supply_shares > market.total_supply_shares


@given(
    supply=st.integers(min_value=10**6, max_value=10**15),
    share=st.floats(min_value=0.0, max_value=1.0),
)
def test_per_second_models_agree_with_the_domain_models(supply: int, share: float) -> None:
    borrows = int(supply * share)
    cases: list[tuple[RateModel, RateModel]] = [
        (_comet(), CompoundV3.base_usdc()),
        (_jump(), Moonwell.base_usdc()),
        (AdaptiveCurveModel(), MorphoBlue()),
    ]
    for exact, domain in cases:
        ours = exact.rates(supply, borrows, annual(mm.INITIAL_RATE_AT_TARGET))
        theirs = domain.rates(supply, borrows, percent("0.04"))
        for a, b in ((ours.borrow, theirs.borrow), (ours.supply, theirs.supply)):
            # the contracts truncate per second: a few units of 1e-18 a second apart
            assert a == pytest.approx(b, rel=1e-6, abs=4 * annual(1))
        assert exact.kinks == domain.kinks


def test_the_jump_rate_model_truncates_as_the_contract() -> None:
    model = _jump()
    supply, borrows = 5_000_000_005_378, 3_750_000_005_975
    u = borrows * mm.WAD // supply
    base, multiplier = 0, 67 * mm.WAD // 1000 // YEAR
    borrow = u * multiplier // mm.WAD + base
    supply_rate = u * (borrow * (mm.WAD - mm.WAD // 10) // mm.WAD) // mm.WAD
    assert model.rates(supply, borrows, 0).supply == annual(supply_rate)


def _ps(value: str) -> int:
    """A yearly rate as the contracts' constructors set it: per second, truncated."""
    return annual(percent(value) // 10**9 // YEAR)


def _comet() -> CometModel:
    supply = percent("0.85"), 0, _ps("0.048"), _ps("1.6")
    return CometModel(*supply, percent("0.85"), _ps("0.015"), _ps("0.053"), _ps("1.8"))


def _jump() -> JumpRateModel:
    return JumpRateModel(0, percent("0.9"), _ps("0.067"), _ps("9.0"), percent("0.1"))
