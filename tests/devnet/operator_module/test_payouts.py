"""Payouts: only to the account's owner, with a fee within the bound to its collector."""

from __future__ import annotations

import pytest

from support.operator_module import Account
from support.safe_world import USDC

pytestmark = pytest.mark.evm


def test_pay_the_owner_with_a_fee_up_to_the_bound(acct: Account) -> None:
    world, a = acct.world, acct.address
    owner, collector = acct.owner.address, world.collector
    before = {h: acct.usdc.functions.balanceOf(h).call() for h in (a, owner, collector)}
    # fee * 10_000 <= 1_000 * (toOwner + fee): 100 of a 1,000 payment is exactly the bound
    world.operator.transact(world.module.functions.pay(a, 900 * USDC, 100 * USDC))
    after = {h: acct.usdc.functions.balanceOf(h).call() for h in (a, owner, collector)}
    assert after[owner] - before[owner] == 900 * USDC
    assert after[collector] - before[collector] == 100 * USDC
    assert before[a] - after[a] == 1_000 * USDC
    world.operator.transact(world.module.functions.pay(a, 5 * USDC, 0))  # no fee is fine


@pytest.mark.parametrize(
    ("to_owner", "fee"),
    [(900 * USDC, 100 * USDC + 1), (0, 1), (0, 0), (1, 1), (9 * USDC, 10 * USDC)],
)
def test_no_fee_above_the_bound_or_without_a_payment_to_the_owner(
    acct: Account, to_owner: int, fee: int
) -> None:
    world = acct.world
    before = {
        h: acct.usdc.functions.balanceOf(h).call() for h in (acct.owner.address, world.collector)
    }
    held = acct.holdings()
    fn = world.module.functions.pay(acct.address, to_owner, fee)
    reason = world.operator.refused(fn, world.module_abi)
    assert reason.startswith(("FeeAboveBound(", "NoOwnerPayment("))
    assert acct.holdings() == held
    assert before == {
        h: acct.usdc.functions.balanceOf(h).call() for h in (acct.owner.address, world.collector)
    }
