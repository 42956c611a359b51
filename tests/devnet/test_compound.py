"""The devnet Comet: Base's launch curves per second, Comet's accrual rule, borrowing."""

from __future__ import annotations

import pytest
from web3.contract import Contract

from support.devnet import Devnet
from support.devnet_time import advance
from support.smart_account import USDC_UNIT, revert_data, selector
from yieldagent.devnet.borrowing import borrow_to_utilization
from yieldagent.devnet.compound import RATES
from yieldagent.devnet.tokens import mint_and_approve
from yieldagent.devnet.toolchain import compile_project
from yieldagent.domain.market.rate_models import SECONDS_PER_YEAR, CompoundV3

pytestmark = pytest.mark.evm

WAD = 10**18
GETTERS = (
    "supplyKink",
    "supplyPerSecondInterestRateSlopeLow",
    "supplyPerSecondInterestRateSlopeHigh",
    "supplyPerSecondInterestRateBase",
    "borrowKink",
    "borrowPerSecondInterestRateSlopeLow",
    "borrowPerSecondInterestRateSlopeHigh",
    "borrowPerSecondInterestRateBase",
)


def _comet(net: Devnet) -> Contract:
    return net.d.at(compile_project()["Comet"], net.compound.address)


def _kinked(u: int, kink: int, base: int, low: int, high: int) -> int:
    if u <= kink:
        return base + low * u // WAD
    return base + low * kink // WAD + high * (u - kink) // WAD


def test_curve_parameters_are_the_yearly_launch_values_per_second(net: Devnet) -> None:
    comet = _comet(net)
    for name, yearly in zip(GETTERS, RATES, strict=True):
        expected = yearly if name.endswith("Kink") else yearly // SECONDS_PER_YEAR
        assert getattr(comet.functions, name)().call() == expected, name
    assert comet.functions.baseToken().call() == net.usdc


def test_rates_follow_the_curves_and_the_domain_model(net: Devnet) -> None:
    comet = _comet(net)
    p = [getattr(comet.functions, name)().call() for name in GETTERS]
    model = CompoundV3.base_usdc()
    for u in (0, WAD // 2, 85 * WAD // 100, 9 * WAD // 10, WAD):
        supply = comet.functions.getSupplyRate(u).call()
        borrow = comet.functions.getBorrowRate(u).call()
        assert supply == _kinked(u, p[0], p[3], p[1], p[2])
        assert borrow == _kinked(u, p[4], p[7], p[5], p[6])
        rates = model.rates(WAD, u, 0)  # supply WAD, borrows u: utilization u
        for got, expected in ((supply, rates.supply), (borrow, rates.borrow)):
            yearly = got * SECONDS_PER_YEAR * 10**9
            assert abs(yearly - expected) <= expected // 10**7 + 10**18


def test_supply_accrues_by_comets_index_rule(net: Devnet) -> None:
    d, comet = net.d, _comet(net)
    user = d.accounts[6]
    mint_and_approve(d, net.usdc, user, comet.address, 100_000 * USDC_UNIT)
    d.transact(comet.functions.supply(net.usdc, 100_000 * USDC_UNIT), sender=user)
    borrow_to_utilization(d, net.compound, net.usdc, 0.8)
    utilization = comet.functions.getUtilization().call()
    assert abs(utilization - 8 * WAD // 10) < WAD // 10**6
    assert comet.functions.totalSupply().call() >= 5_000_000 * USDC_UNIT
    index = comet.functions.baseSupplyIndex().call()
    principal = comet.functions.userBasic(user).call()[0]
    advance(net.url, 86400)
    now = net.w3.eth.get_block("latest")["timestamp"]
    elapsed = now - comet.functions.lastAccrualTime().call()
    rate = comet.functions.getSupplyRate(utilization).call()
    accrued = index + index * (rate * elapsed) // WAD
    assert comet.functions.balanceOf(user).call() == principal * accrued // 10**15
    assert comet.functions.balanceOf(user).call() > 100_000 * USDC_UNIT
    d.transact(comet.functions.accrueAccount(user))
    assert comet.functions.baseSupplyIndex().call() > index


def test_borrowing_needs_collateral_and_withdraw_max_takes_everything(net: Devnet) -> None:
    d, comet = net.d, _comet(net)
    borrow_to_utilization(d, net.compound, net.usdc, 0.5)
    stranger = d.accounts[7]
    data = revert_data(comet.functions.withdraw(net.usdc, 1), stranger)
    assert data.startswith(selector("NotCollateralized()"))
    user = d.accounts[6]
    mint_and_approve(d, net.usdc, user, comet.address, 1_000 * USDC_UNIT)
    d.transact(comet.functions.supply(net.usdc, 1_000 * USDC_UNIT), sender=user)
    d.transact(comet.functions.withdraw(net.usdc, 2**256 - 1), sender=user)
    assert comet.functions.balanceOf(user).call() == 0
    assert comet.functions.borrowBalanceOf(user).call() == 0
    borrower = d.accounts[2]
    assert comet.functions.borrowBalanceOf(borrower).call() > 0
