"""A hostile contract a mistaken admin lists as a pool, written by the thief who holds the
operator key: what it can take (what the operator supplies to it, once the listing has waited
48 hours), what it cannot (anything else, by re-entering the module or the account, or by
pulling more), and the owner who refused the listing, whom it never reaches."""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum

import pytest
from eth_abi.abi import decode
from web3.contract import Contract
from web3.exceptions import ContractCustomError

from support.operator_module import (
    THIEF,
    Account,
    call,
    opt_out,
    other_account,
    propose,
    warp,
)
from support.safe_world import COMP, USDC, SafeWorld
from yieldagent.devnet.deployer import decode_custom_error
from yieldagent.devnet.safe import TIMELOCK_DELAY, Kind, Rule, rule_change, selector
from yieldagent.devnet.toolchain import compile_project

pytestmark = pytest.mark.evm

DEPOSIT = "deposit(address,uint256)"  # listed as a supply: amount word 1, token word 0
REDEEM = "redeem(address,uint256)"  # listed as a withdrawal: token word 0


class Attack(IntEnum):
    """``HostileTarget.Attack``."""

    NONE = 0
    REENTER_EXECUTE = 1
    REENTER_PAY = 2
    AS_MODULE = 3
    ADD_OWNER = 4
    TAKE_MORE = 5
    TAKE_OTHER = 6


REFUSED_WITH = {
    Attack.REENTER_EXECUTE: "NotOperator(",  # the target is not the operator
    Attack.REENTER_PAY: "NotOperator(",
    Attack.AS_MODULE: "GS104",  # Safe: not an enabled module
    Attack.ADD_OWNER: "GS031",  # Safe: only the Safe itself manages its owners
    Attack.TAKE_MORE: "ERC20: insufficient allowance",  # approved for the call's amount only
    Attack.TAKE_OTHER: "ERC20: insufficient allowance",  # nothing else is ever approved
}


@pytest.fixture
def hostile(acct: Account) -> tuple[Contract, Account]:
    """The thief's target, listed through the timelock (its deposit as a supply, its redeem
    as a withdrawal); the funded account's owner refused it meanwhile, another account (1,000
    USDC and 10 COMP idle) did not."""
    world, d = acct.world, acct.world.net.d
    thief = d.actor("hostile-target-author")
    artifact = compile_project()["HostileTarget"]
    target = d.deploy(artifact, world.module.address, THIEF, sender=thief)
    changes = [
        rule_change(target.address, DEPOSIT, Rule(Kind.SUPPLY, 2, 1, 0, (), (0,))),
        rule_change(target.address, REDEEM, Rule(Kind.WITHDRAW, 2, 0, 0, (), (0,))),
    ]
    ids = [propose(world, change) for change in changes]
    opt_out(acct, ids[0])  # the subject is the target: both its functions are refused
    other = other_account(world, usdc=1_000 * USDC, comp=10 * COMP)
    warp(world, TIMELOCK_DELAY)
    for change in changes:
        d.transact(world.module.functions.applyChange(change))
    return target, other


def inner_reason(world: SafeWorld, account: str, calls: Sequence[tuple[str, bytes]]) -> str:
    """Why the target's call failed: the revert data the module's CallFailed carries."""
    fn = world.execute(account, calls)
    try:
        world.w3.eth.call(
            {
                "from": world.operator.address,
                "to": fn.address,
                "data": fn._encode_transaction_data(),
            }
        )
    except ContractCustomError as error:
        raw = bytes.fromhex(str(error.data).removeprefix("0x"))
    else:
        raise AssertionError("the call did not revert")
    assert raw[:4] == selector("CallFailed(address,bytes)")
    _, inner = decode(["address", "bytes"], raw[4:])
    if inner[:4] == selector("Error(string)"):
        return str(decode(["string"], inner[4:])[0])
    return decode_custom_error(inner.hex(), world.module_abi) or inner.hex()


@pytest.mark.parametrize("attack", sorted(REFUSED_WITH), ids=lambda a: Attack(a).name.lower())
@pytest.mark.parametrize("through", [DEPOSIT, REDEEM])
def test_a_hostile_listed_target_gets_nothing_from_inside_its_call(
    acct: Account, hostile: tuple[Contract, Account], attack: Attack, through: str
) -> None:
    world = acct.world
    target, other = hostile
    world.net.d.transact(target.functions.arm(int(attack), other.comp.address))
    calls = [(target.address, call(through, other.usdc.address, 100 * USDC))]
    assert inner_reason(world, other.address, calls).startswith(REFUSED_WITH[attack])
    people = (THIEF, target.address, world.operator.address)
    before = {
        (t.address, h): t.functions.balanceOf(h).call()
        for t in (other.usdc, other.comp)
        for h in people
    }
    assert other.refused(calls).startswith("CallFailed(")
    assert {
        (t.address, h): t.functions.balanceOf(h).call()
        for t in (other.usdc, other.comp)
        for h in people
    } == before
    assert world.safe(other.address).functions.getOwners().call() == [other.owner.address]


def test_a_hostile_listed_target_keeps_what_the_operator_supplies_to_it(
    acct: Account, hostile: tuple[Contract, Account]
) -> None:
    """What a listing trusts a target with, as any pool: the whole of what the operator
    supplies to it, here every unit of the account's idle USDC, and nothing more (no
    allowance outlives the call). This is why a listing waits 48 hours and each owner may
    refuse it."""
    world = acct.world
    target, other = hostile
    usdc = other.usdc
    idle = usdc.functions.balanceOf(other.address).call()
    supply = [(target.address, call(DEPOSIT, usdc.address, idle))]
    world.operator.transact(world.execute(other.address, supply))
    assert usdc.functions.balanceOf(target.address).call() == idle
    assert usdc.functions.balanceOf(other.address).call() == 0
    assert usdc.functions.allowance(other.address, target.address).call() == 0
    assert other.comp.functions.balanceOf(other.address).call() == 10 * COMP


def test_the_owner_who_refused_the_listing_is_never_reached(
    acct: Account, hostile: tuple[Contract, Account]
) -> None:
    target, _ = hostile
    for signature in (DEPOSIT, REDEEM):
        calls = [(target.address, call(signature, acct.usdc.address, 100 * USDC))]
        assert acct.refused(calls).startswith("Refused(")
