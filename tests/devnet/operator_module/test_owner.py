"""The owner's powers: revoking the operator in one transaction, and refusing a pending
change for its account: a listing, a token's feed, a new operator key."""

from __future__ import annotations

import pytest

from support.operator_module import (
    Account,
    admin_refused,
    call,
    dump_reward,
    opt_out,
    other_account,
    propose,
    swap_call,
    warp,
)
from support.safe_world import COMP, SENTINEL, USDC
from yieldagent.devnet.safe import (
    DEVNET_FEED_MAX_AGE,
    TIMELOCK_DELAY,
    Kind,
    Rule,
    deploy_feed,
    operator_change,
    rule_change,
    token_change,
)

pytestmark = pytest.mark.evm


def test_the_owner_revokes_the_operator_in_one_transaction(acct: Account) -> None:
    world, a = acct.world, acct.address
    disable = call("disableModule(address,address)", SENTINEL, world.module.address)
    world.owner_safe_tx(acct.owner, a, a, disable)
    assert not world.safe(a).functions.isModuleEnabled(world.module.address).call()
    assert not world.module.functions.isActive(a).call()
    reason = acct.refused(acct.supply_calls(USDC)[:1])
    assert "GS104" in reason  # Safe: the module is not enabled
    assert "GS104" in world.operator.refused(
        world.module.functions.pay(a, USDC, 0), world.module_abi
    )
    # re-enabling is the owner's call too, and the account's registration still holds
    world.owner_safe_tx(acct.owner, a, a, call("enableModule(address)", world.module.address))
    assert world.module.functions.isActive(a).call()
    world.operator.transact(world.execute(a, acct.supply_calls(USDC)[:1]))


def test_the_owner_refuses_a_pending_listing_for_its_account(acct: Account) -> None:
    world, d = acct.world, acct.world.net.d
    m = world.module.functions
    # the admin proposes a change of Comet's listing; the owner opts out of it
    change = rule_change(
        acct.comet.address, "supply(address,uint256)", Rule(Kind.SUPPLY, 2, 1, 0, (), (0,))
    )
    opt_out(acct, propose(world, change))
    assert m.refused(acct.address, acct.comet.address).call()
    # a second account, which did not opt out, keeps using Comet
    other = other_account(world, usdc=1_000 * USDC).address
    comet_supply = (
        acct.comet.address,
        call("supply(address,uint256)", acct.usdc.address, 100 * USDC),
    )
    warp(world, TIMELOCK_DELAY)
    d.transact(m.applyChange(change))
    world.operator.transact(world.execute(other, [comet_supply]))
    assert acct.refused([comet_supply]).startswith("Refused(")
    # the other pools still work for the account that opted out; it can also opt back in
    world.operator.transact(world.execute(acct.address, acct.supply_calls(USDC)[:1]))
    world.owner_safe_tx(
        acct.owner,
        acct.address,
        world.module.address,
        m.optIn(acct.comet.address)._encode_transaction_data(),
    )
    world.operator.transact(world.execute(acct.address, [comet_supply]))


@pytest.mark.parametrize("priced", ["reward", "base"])
def test_the_owner_refuses_a_pending_feed_for_its_account(acct: Account, priced: str) -> None:
    """The admin (mistaken, or its key stolen) proposes a feed that prices COMP at 1 USD, or
    USDC at 4: a reward swap's floor falls to a fraction of the rewards' worth. The owner who
    refuses the change keeps its rewards; another account's are sold at half their worth."""
    world, d = acct.world, acct.world.net.d
    m = world.module.functions
    comp, usdc = acct.comp.address, acct.usdc.address
    token, answer = (comp, 10**8) if priced == "reward" else (usdc, 4 * 10**8)
    change = token_change(
        token, deploy_feed(d, "rogue", answer), DEVNET_FEED_MAX_AGE, reward=token == comp
    )
    opt_out(acct, propose(world, change))
    assert m.refused(acct.address, token).call()
    other = other_account(world, comp=10 * COMP)
    warp(world, TIMELOCK_DELAY)
    d.transact(m.applyChange(change))
    dump_reward(acct, 42_000 * COMP)  # the thief halves COMP's price in the pool
    worth = m.swapFloor(comp, usdc, 10 * COMP).call()
    assert worth < 130 * USDC  # 9.9 or 123.75 USDC, where 495 was the floor
    sell = swap_call(other, comp, usdc, 10 * COMP, other.address)
    world.operator.transact(world.execute(other.address, [(acct.router, sell)]))
    assert worth <= other.usdc.functions.balanceOf(other.address).call() < 260 * USDC
    mine = swap_call(acct, comp, usdc, 10 * COMP, acct.address)
    assert acct.refused([(acct.router, mine)]).startswith("Refused(")


def test_the_owner_refuses_a_pending_operator_key_for_its_account(acct: Account) -> None:
    """The admin proposes a new operator key (one a thief holds, say). The owner who refuses
    it is never acted for by that key, for calls or payouts; another account is."""
    world, d = acct.world, acct.world.net.d
    m = world.module.functions
    new = d.accounts[6]
    change = operator_change(new)
    opt_out(acct, propose(world, change))
    other = other_account(world, usdc=1_000 * USDC)
    warp(world, TIMELOCK_DELAY)
    d.transact(m.applyChange(change))
    supply = call(
        "supply(address,uint256,address,uint16)", acct.usdc.address, USDC, other.address, 0
    )
    d.transact(world.execute(other.address, [(acct.aave, supply)]), sender=new)
    held = acct.holdings()
    for fn in (
        world.execute(acct.address, acct.supply_calls(USDC)[:1]),
        m.pay(acct.address, USDC, 0),
    ):
        assert admin_refused(world, fn, new).startswith("Refused(")
    assert acct.holdings() == held
    assert not m.isActive(acct.address).call() and m.isActive(other.address).call()
