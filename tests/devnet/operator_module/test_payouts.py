"""Payouts: only to the account's registered owner while it alone holds the Safe, with a fee
within the bound to its collector."""

from __future__ import annotations

import pytest
from eth_utils.crypto import keccak

from support.operator_module import Account, call, fresh_owner
from support.safe_world import SENTINEL, USDC

pytestmark = pytest.mark.evm

NEW_OWNER_KEY = keccak(text="yieldagent.tests:rotated-safe-owner")


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


def owner_changes(acct: Account, new: str) -> dict[str, bytes]:
    """What an owner may do to its Safe's owners, as Safe calldata."""
    old = acct.owner.address
    return {
        # the old key leaked, say: the owner moves its Safe to a new one
        "rotated": call("swapOwner(address,address,address)", SENTINEL, old, new),
        # a second signature is now needed to move the funds
        "co_signer_required": call("addOwnerWithThreshold(address,uint256)", new, 2),
    }


@pytest.mark.parametrize("change", ["rotated", "co_signer_required"])
def test_no_payout_once_the_registered_owner_no_longer_holds_the_safe_alone(
    acct: Account, change: str
) -> None:
    """The operator pays out after the owner changed its Safe: the registered address (an
    abandoned key, or one signer of two) must not receive what it could not take alone."""
    world, a = acct.world, acct.address
    new = fresh_owner(world, NEW_OWNER_KEY)
    world.owner_safe_tx(acct.owner, a, a, owner_changes(acct, new.address)[change])
    people = (acct.owner.address, new.address, world.collector)
    before = {h: acct.usdc.functions.balanceOf(h).call() for h in people}
    held = acct.holdings()
    for to_owner, fee in ((USDC, 0), (900 * USDC, 100 * USDC)):
        fn = world.module.functions.pay(a, to_owner, fee)
        assert world.operator.refused(fn, world.module_abi).startswith("OwnerChanged(")
    assert acct.holdings() == held
    assert {h: acct.usdc.functions.balanceOf(h).call() for h in people} == before
    # the funds still move between the pools and the account, in its name: an exit brings
    # them home to the Safe, which its owners hold
    withdraw = call("withdraw(address,uint256,address)", acct.usdc.address, 100 * USDC, a)
    world.operator.transact(world.execute(a, [(acct.aave, withdraw)]))
    if change == "rotated":  # rotated back, the registered owner is paid again
        back = call("swapOwner(address,address,address)", SENTINEL, new.address, acct.owner.address)
        world.owner_safe_tx(new, a, a, back)
        world.operator.transact(world.module.functions.pay(a, USDC, 0))
        assert acct.usdc.functions.balanceOf(acct.owner.address).call() == before[people[0]] + USDC


def test_a_co_owner_at_threshold_one_leaves_the_registered_owner_paid(acct: Account) -> None:
    """With a second owner and threshold 1, the registered owner can still take everything
    alone, so paying it gives it nothing it could not take."""
    world, a = acct.world, acct.address
    new = fresh_owner(world, NEW_OWNER_KEY)
    add = call("addOwnerWithThreshold(address,uint256)", new.address, 1)
    world.owner_safe_tx(acct.owner, a, a, add)
    before = acct.usdc.functions.balanceOf(acct.owner.address).call()
    world.operator.transact(world.module.functions.pay(a, 900 * USDC, 100 * USDC))
    assert acct.usdc.functions.balanceOf(acct.owner.address).call() == before + 900 * USDC
    assert acct.usdc.functions.balanceOf(new.address).call() == 0
