"""The owner's powers: revoking the operator in one transaction, refusing a pending change."""

from __future__ import annotations

import pytest

from support.operator_module import SECOND_OWNER_KEY, Account, call, fresh_owner, warp
from support.safe_world import SENTINEL, USDC
from yieldagent.devnet.safe import TIMELOCK_DELAY, Kind, Rule, rule_change

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
    receipt = d.transact(m.proposeChange(change))
    (event,) = world.module.events.ChangeProposed().process_receipt(receipt)
    change_id = event["args"]["id"]
    world.owner_safe_tx(
        acct.owner,
        acct.address,
        world.module.address,
        m.optOut(change_id)._encode_transaction_data(),
    )
    assert m.refused(acct.address, acct.comet.address).call()
    # a second account, which did not opt out, keeps using Comet
    other_owner = fresh_owner(world, SECOND_OWNER_KEY)
    other, _ = world.deploy_account(other_owner.address, "other")
    d.transact(acct.usdc.functions.mint(other, 1_000 * USDC))
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
