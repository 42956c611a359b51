"""The devnet mToken: Moonwell's jump rate model per second and Compound v2's accrual math."""

from __future__ import annotations

import pytest
from web3.contract import Contract

from support.devnet import Devnet
from support.devnet_time import frozen_time
from support.smart_account import USDC_UNIT
from yieldagent.devnet.anvil import rpc
from yieldagent.devnet.borrowing import borrow_to_utilization
from yieldagent.devnet.moonwell import JUMP_MULTIPLIER, KINK, MULTIPLIER, RESERVE_FACTOR
from yieldagent.devnet.tokens import mint_and_approve
from yieldagent.devnet.toolchain import compile_project
from yieldagent.domain.market.rate_models import SECONDS_PER_YEAR, Moonwell

pytestmark = pytest.mark.evm

WAD = 10**18


def _mtoken(net: Devnet) -> Contract:
    return net.d.at(compile_project()["MToken"], net.moonwell.address)


def _model(net: Devnet) -> Contract:
    return net.d.at(compile_project()["JumpRateModel"], net.moonwell.contracts["rate_model"])


def test_rate_model_parameters_are_yearly_over_the_year(net: Devnet) -> None:
    model = _model(net)
    assert model.functions.baseRatePerTimestamp().call() == 0
    assert model.functions.multiplierPerTimestamp().call() == MULTIPLIER // SECONDS_PER_YEAR
    jump = model.functions.jumpMultiplierPerTimestamp().call()
    assert jump == JUMP_MULTIPLIER // SECONDS_PER_YEAR
    assert model.functions.kink().call() == KINK
    mtoken = _mtoken(net)
    assert mtoken.functions.interestRateModel().call() == model.address
    assert mtoken.functions.reserveFactorMantissa().call() == RESERVE_FACTOR
    assert mtoken.functions.underlying().call() == net.usdc


def test_rates_follow_the_jump_model_and_the_domain_model(net: Devnet) -> None:
    model = _model(net)
    multiplier = model.functions.multiplierPerTimestamp().call()
    jump = model.functions.jumpMultiplierPerTimestamp().call()
    domain = Moonwell.base_usdc()
    cash_total = 10**13
    for borrows in (10**11, 5 * 10**12, 9 * 10**12, 95 * 10**11):
        cash, reserves = cash_total - borrows + 10**9, 10**9
        u = borrows * WAD // (cash + borrows - reserves)
        expected = (
            u * multiplier // WAD
            if u <= KINK
            else KINK * multiplier // WAD + (u - KINK) * jump // WAD
        )
        assert model.functions.getBorrowRate(cash, borrows, reserves).call() == expected
        supply = model.functions.getSupplyRate(cash, borrows, reserves, RESERVE_FACTOR).call()
        assert supply == u * (expected * (WAD - RESERVE_FACTOR) // WAD) // WAD
        rates = domain.rates(cash + borrows - reserves, borrows, 0)
        yearly = supply * SECONDS_PER_YEAR * 10**9
        assert abs(yearly - rates.supply) <= rates.supply // 10**6 + 10**18


def test_accrual_and_exchange_rate_follow_compound_v2(net: Devnet) -> None:
    d, mtoken = net.d, _mtoken(net)
    user = d.accounts[6]
    mint_and_approve(d, net.usdc, user, mtoken.address, 50_000 * USDC_UNIT)
    assert mtoken.functions.mint(50_000 * USDC_UNIT).call({"from": user}) == 0
    with frozen_time(net.url):
        d.transact(mtoken.functions.accrueInterest())
        exchange_rate = mtoken.functions.exchangeRateStored().call()
        d.transact(mtoken.functions.mint(50_000 * USDC_UNIT), sender=user)
    assert mtoken.functions.balanceOf(user).call() == 50_000 * USDC_UNIT * WAD // exchange_rate
    borrow_to_utilization(d, net.moonwell, net.usdc, 0.85)
    cash = mtoken.functions.getCash().call()
    borrows = mtoken.functions.totalBorrows().call()
    reserves = mtoken.functions.totalReserves().call()
    assert abs(borrows * WAD // (cash + borrows - reserves) - 85 * WAD // 100) < WAD // 10**6
    rate = mtoken.functions.borrowRatePerTimestamp().call()
    last = mtoken.functions.accrualBlockTimestamp().call()
    rpc(net.url, "evm_increaseTime", [7 * 86400])
    d.transact(mtoken.functions.accrueInterest())
    elapsed = mtoken.functions.accrualBlockTimestamp().call() - last
    interest = rate * elapsed * borrows // WAD
    assert mtoken.functions.totalBorrows().call() == borrows + interest
    assert mtoken.functions.totalReserves().call() == reserves + RESERVE_FACTOR * interest // WAD
    supply = mtoken.functions.totalSupply().call()
    expected_rate = (cash + borrows + interest - reserves - RESERVE_FACTOR * interest // WAD) * WAD
    assert mtoken.functions.exchangeRateStored().call() == expected_rate // supply
    underlying = mtoken.functions.balanceOfUnderlying(user).call()
    assert underlying > 50_000 * USDC_UNIT
    d.transact(mtoken.functions.redeemUnderlying(underlying), sender=user)
    # what is left is the interest of the block between the read and the redeem: dust
    left = mtoken.functions.balanceOf(user).call()
    assert left * mtoken.functions.exchangeRateStored().call() // WAD < USDC_UNIT // 100
