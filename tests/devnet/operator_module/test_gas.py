"""The gas of an account's deployment, activation and rebalance, measured from receipts."""

from __future__ import annotations

import pytest

from support.operator_module import Account, call
from support.safe_world import USDC, SafeWorld

pytestmark = pytest.mark.evm


def test_gas_of_deployment_activation_and_rebalance(
    acct: Account, funded: tuple[SafeWorld, Account, dict[str, int]]
) -> None:
    """Measured from receipts: printed for the docs, bounded so a regression shows."""
    world, a, usdc = acct.world, acct.address, acct.usdc.address
    gas = dict(funded[2])
    rebalance = [
        (acct.aave, call("withdraw(address,uint256,address)", usdc, 5_000 * USDC, a)),
        (acct.vault.address, call("deposit(uint256,address)", 5_000 * USDC, a)),
    ]
    gas["rebalance"] = int(world.operator.transact(world.execute(a, rebalance))["gasUsed"])
    gas["activation"] = gas["deploy"] + gas["first_supply"]
    fee = world.operator.transact(world.module.functions.pay(a, 900 * USDC, 100 * USDC))
    gas["pay_with_fee"] = int(fee["gasUsed"])
    print("gas:", gas)
    assert gas["deploy"] < 400_000
    assert gas["first_supply"] < 400_000
    assert gas["rebalance"] < 800_000
