"""The admin's side: the module's configuration out of the operator's reach, listing changes
through the timelock, the operator key's change, cancellation, the two-step handover, pause."""

from __future__ import annotations

import pytest

from support.operator_module import THIEF, Account, admin_refused, call, warp
from support.safe_world import SENTINEL, USDC
from yieldagent.devnet.safe import (
    TIMELOCK_DELAY,
    Kind,
    Rule,
    operator_change,
    rule_change,
    selector,
)

pytestmark = pytest.mark.evm


def test_no_call_to_the_module_configuration(acct: Account) -> None:
    world = acct.world
    m = world.module.functions
    change = rule_change(THIEF, "steal()", Rule(Kind.WITHDRAW, 0))
    attempts = {
        "proposeChange": (m.proposeChange(change), "NotAdmin("),
        "applyChange": (m.applyChange(change), "NotAdmin("),
        "cancelChange": (m.cancelChange(bytes(32)), "NotAdmin("),
        "seal": (m.seal(), "NotAdmin("),
        "setPaused": (m.setPaused(True), "NotAdmin("),
        "transferAdmin": (m.transferAdmin(world.operator.address), "NotAdmin("),
        "acceptAdmin": (m.acceptAdmin(), "NotPendingAdmin("),
        "optOut": (m.optOut(bytes(32)), "NotRegistered("),
        "optIn": (m.optIn(THIEF), "NotRegistered("),
    }
    for name, (fn, expected) in attempts.items():
        before = acct.holdings()
        assert world.operator.refused(fn, world.module_abi).startswith(expected), name
        assert acct.holdings() == before
    # nor through the account: the module is never a target
    data = m.applyChange(change)._encode_transaction_data()
    assert acct.refused([(world.module.address, data)]).startswith("NotListed(")


def test_no_listing_change_without_the_timelock(acct: Account) -> None:
    world, d = acct.world, acct.world.net.d
    m = world.module.functions
    # a rogue listing: Aave's borrow as a "withdrawal" (beneficiary word = the account)
    rogue = rule_change(
        acct.aave,
        "borrow(address,uint256,uint256,uint16,address)",
        Rule(Kind.WITHDRAW, 5, 0, 0, (4,)),
    )
    assert admin_refused(world, m.applyChange(rogue)).startswith("UnknownChange(")
    d.transact(m.proposeChange(rogue))
    borrow = call(
        "borrow(address,uint256,uint256,uint16,address)", acct.usdc.address, 1, 2, 0, acct.address
    )
    warp(world, TIMELOCK_DELAY - 60)
    assert admin_refused(world, m.applyChange(rogue)).startswith("TooEarly(")
    assert acct.refused([(acct.aave, borrow)]).startswith("NotListed(")
    warp(world, 120)
    d.transact(m.applyChange(rogue))
    listed = m.rules(acct.aave, selector("borrow(address,uint256,uint256,uint16,address)")).call()
    assert listed[0] == int(Kind.WITHDRAW)


def test_a_listing_naming_a_token_or_a_transfer_is_refused(acct: Account) -> None:
    world = acct.world
    m = world.module.functions
    for bad in (
        rule_change(acct.usdc.address, "mint(uint256)", Rule(Kind.SUPPLY, 1, 0)),
        rule_change(acct.vault.address, "transfer(address,uint256)", Rule(Kind.WITHDRAW, 2)),
        rule_change(acct.aave, "approve(address,uint256)", Rule(Kind.WITHDRAW, 2)),
        rule_change(world.module.address, "seal()", Rule(Kind.CLAIM, 0)),
        # a debt view belongs to a withdrawal only
        rule_change(
            acct.comet.address,
            "supply(address,uint256)",
            Rule(Kind.SUPPLY, 2, 1, 0, (), (0,), "borrowBalanceOf(address)"),
        ),
        rule_change(
            acct.router,
            "swap(address,address,uint256,uint256,address)",
            Rule(Kind.SWAP, 5, 2, 0, (), (1,)),
        ),
    ):
        assert admin_refused(world, m.proposeChange(bad)).startswith(("BadRule(", "BadConfig("))


def test_the_operator_key_changes_only_through_the_timelock(acct: Account) -> None:
    world, d = acct.world, acct.world.net.d
    m = world.module.functions
    new_operator = d.accounts[6]
    change = operator_change(new_operator)
    d.transact(m.proposeChange(change))
    warp(world, TIMELOCK_DELAY // 2)
    assert admin_refused(world, m.applyChange(change)).startswith("TooEarly(")
    warp(world, TIMELOCK_DELAY // 2)
    d.transact(m.applyChange(change))
    assert world.operator.refused(
        world.execute(acct.address, acct.supply_calls(USDC)[:1]), world.module_abi
    ).startswith("NotOperator(")
    d.transact(world.execute(acct.address, acct.supply_calls(USDC)[:1]), sender=new_operator)
    # the admin may never be the operator
    assert admin_refused(world, m.proposeChange(operator_change(d.admin))).startswith(
        "AdminIsOperator("
    )


def test_a_change_can_be_cancelled_and_the_admin_hands_over_in_two_steps(acct: Account) -> None:
    world, d = acct.world, acct.world.net.d
    m = world.module.functions
    change = rule_change(THIEF, "steal(address)", Rule(Kind.WITHDRAW, 1, 0, 0, (0,)))
    receipt = d.transact(m.proposeChange(change))
    (event,) = world.module.events.ChangeProposed().process_receipt(receipt)
    d.transact(m.cancelChange(event["args"]["id"]))
    warp(world, TIMELOCK_DELAY)
    assert admin_refused(world, m.applyChange(change)).startswith("UnknownChange(")
    old, new = d.admin, d.accounts[7]
    d.transact(m.transferAdmin(new))
    assert m.admin().call() == old and m.pendingAdmin().call() == new
    assert admin_refused(world, m.acceptAdmin(), d.accounts[8]).startswith("NotPendingAdmin(")
    d.transact(m.acceptAdmin(), sender=new)
    assert m.admin().call() == new
    assert admin_refused(world, m.proposeChange(change), old).startswith("NotAdmin(")


def test_a_handover_to_the_next_operator_is_refused_whichever_step_comes_first(
    acct: Account,
) -> None:
    """The mistaken admin hands the module over to X and makes X the operator: one key would
    then list targets and use them at once. Each ordering of the two steps is refused."""
    world, d = acct.world, acct.world.net.d
    m = world.module.functions
    operator, x = world.operator.address, d.accounts[7]
    # the handover first: X may not be proposed as the operator while it is the pending admin
    d.transact(m.transferAdmin(x))
    assert admin_refused(world, m.proposeChange(operator_change(x))).startswith("AdminIsOperator(")
    d.transact(m.acceptAdmin(), sender=x)
    assert admin_refused(world, m.proposeChange(operator_change(x)), x).startswith(
        "AdminIsOperator("
    )
    assert (m.admin().call(), m.operator().call()) == (x, operator)


def test_an_operator_change_to_the_pending_admin_is_refused_when_applied(acct: Account) -> None:
    """The reverse ordering: the operator change to X is proposed first, then the handover to
    X; the change cannot be applied while X is the pending admin, nor once X is the admin."""
    world, d = acct.world, acct.world.net.d
    m = world.module.functions
    operator, x = world.operator.address, d.accounts[7]
    change = operator_change(x)
    d.transact(m.proposeChange(change))
    d.transact(m.transferAdmin(x))  # X is not the operator yet
    warp(world, TIMELOCK_DELAY)
    assert admin_refused(world, m.applyChange(change)).startswith("AdminIsOperator(")
    d.transact(m.acceptAdmin(), sender=x)
    assert admin_refused(world, m.applyChange(change), x).startswith("AdminIsOperator(")
    assert (m.admin().call(), m.operator().call()) == (x, operator)
    # and once X is the operator, no handover can make it the admin
    y = d.accounts[8]
    d.transact(m.proposeChange(operator_change(y)), sender=x)
    warp(world, TIMELOCK_DELAY)
    d.transact(m.applyChange(operator_change(y)), sender=x)
    assert admin_refused(world, m.transferAdmin(y), x).startswith("AdminIsOperator(")


def test_the_admin_pauses_every_operator_call_at_once(acct: Account) -> None:
    world, d = acct.world, acct.world.net.d
    d.transact(world.module.functions.setPaused(True))
    assert acct.refused(acct.supply_calls(USDC)[:1]).startswith("Paused(")
    assert not world.module.functions.isActive(acct.address).call()
    # the owner keeps every power of its Safe meanwhile
    disable = call("disableModule(address,address)", SENTINEL, world.module.address)
    world.owner_safe_tx(acct.owner, acct.address, acct.address, disable)
