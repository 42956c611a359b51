"""Aave v3 on the devnet: the real Pool from @aave/core-v3, with Base's USDC reserve."""

from __future__ import annotations

from fractions import Fraction

import pytest
from web3.contract import Contract

from support.devnet import Devnet
from yieldagent.devnet.aave import RAY, borrow_to_utilization_aave
from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.toolchain import aave_artifact
from yieldagent.devnet.usdc import ONE_USDC, mint, usdc_artifact

pytestmark = pytest.mark.evm

MAX_UINT = 2**256 - 1


def _data_provider(d: Deployer, devnet: Devnet) -> Contract:
    aave = devnet.manifest.protocol("aave")
    return d.at(aave_artifact("AaveProtocolDataProvider"), aave.contracts["data_provider"])


def _utilization(d: Deployer, devnet: Devnet) -> Fraction:
    reserve = _data_provider(d, devnet).functions.getReserveData(devnet.manifest.token).call()
    total_a_token, stable_debt, variable_debt = reserve[2], reserve[3], reserve[4]
    return Fraction(stable_debt + variable_debt, total_a_token)


def test_usdc_reserve_is_configured_like_bases(devnet: Devnet) -> None:
    d = Deployer(devnet.url)
    aave = devnet.manifest.protocol("aave")
    assert aave.kind == "aave_v3"
    provider = d.at(aave_artifact("PoolAddressesProvider"), aave.contracts["addresses_provider"])
    assert provider.functions.getPool().call() == aave.address  # the proxy, not the impl
    config = _data_provider(d, devnet).functions.getReserveConfigurationData(devnet.manifest.token)
    # decimals, LTV, threshold, bonus, reserve factor, collateral, borrowing, stable, active, frozen
    assert config.call() == [6, 7500, 7800, 10500, 1000, True, True, False, True, False]
    strategy = d.at(
        aave_artifact("DefaultReserveInterestRateStrategy"), aave.contracts["rate_strategy"]
    )
    assert strategy.functions.OPTIMAL_USAGE_RATIO().call() == 9 * RAY // 10
    assert strategy.functions.getBaseVariableBorrowRate().call() == 0
    assert strategy.functions.getVariableRateSlope1().call() == 4 * RAY // 100
    assert strategy.functions.getVariableRateSlope2().call() == 60 * RAY // 100
    pool = d.at(aave_artifact("Pool"), aave.address)
    reserve = pool.functions.getReserveData(devnet.manifest.token).call()
    assert reserve[8] == aave.contracts["a_token"]  # aTokenAddress
    assert reserve[10] == aave.contracts["variable_debt_token"]
    assert reserve[11] == aave.contracts["rate_strategy"]


def test_borrower_gives_the_reserve_its_utilization_and_a_supply_rate(devnet: Devnet) -> None:
    d = Deployer(devnet.url)
    assert abs(_utilization(d, devnet) - Fraction(4, 5)) < Fraction(1, 10**6)
    reserve = _data_provider(d, devnet).functions.getReserveData(devnet.manifest.token).call()
    liquidity_rate, variable_rate = reserve[5], reserve[6]
    assert liquidity_rate > 0
    # Aave's own model, below the kink: borrow = slope1 * U / optimal; supply = borrow * U * 0.9
    usage = Fraction(reserve[3] + reserve[4], reserve[2])
    borrow = Fraction(4, 100) * usage / Fraction(9, 10)
    assert abs(Fraction(variable_rate, RAY) / borrow - 1) < Fraction(1, 10**9)
    assert abs(Fraction(liquidity_rate, RAY) / (borrow * usage * Fraction(9, 10)) - 1) < Fraction(
        1, 10**9
    )


def test_supply_and_withdraw_round_trip_for_a_plain_account(devnet_snapshot: Devnet) -> None:
    d = Deployer(devnet_snapshot.url)
    manifest = devnet_snapshot.manifest
    aave = manifest.protocol("aave")
    user = d.accounts[3]
    amount = 2_500 * ONE_USDC
    token = d.at(usdc_artifact(), manifest.token)
    before = token.functions.balanceOf(user).call()
    mint(d, manifest.token, user, amount)
    pool = d.at(aave_artifact("Pool"), aave.address)
    a_token = d.at(aave_artifact("AToken"), aave.contracts["a_token"])

    d.transact(token.functions.approve(aave.address, amount), user)
    d.transact(pool.functions.supply(manifest.token, amount, user, 0), user)
    supplied = a_token.functions.balanceOf(user).call()
    assert amount - 1 <= supplied <= amount + 1  # ray rounding, one block of interest
    assert token.functions.balanceOf(user).call() == before

    d.transact(pool.functions.withdraw(manifest.token, MAX_UINT, user), user)
    assert a_token.functions.balanceOf(user).call() == 0
    assert token.functions.balanceOf(user).call() - before >= amount - 1


def test_borrower_repays_down_to_a_lower_target(devnet_snapshot: Devnet) -> None:
    d = Deployer(devnet_snapshot.url)
    aave = devnet_snapshot.manifest.protocol("aave")
    borrow_to_utilization_aave(d, aave, devnet_snapshot.manifest.token, 0.5)
    assert abs(_utilization(d, devnet_snapshot) - Fraction(1, 2)) < Fraction(1, 10**6)
    borrow_to_utilization_aave(d, aave, devnet_snapshot.manifest.token, 0.9)
    assert abs(_utilization(d, devnet_snapshot) - Fraction(9, 10)) < Fraction(1, 10**6)


def test_utilization_outside_zero_one_is_refused(devnet: Devnet) -> None:
    d = Deployer(devnet.url)
    with pytest.raises(ValueError, match="utilization"):
        borrow_to_utilization_aave(d, devnet.manifest.protocol("aave"), devnet.manifest.token, 1.2)
