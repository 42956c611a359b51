"""The funded account each test module of the attacker suite attacks, undone after each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.devnet import Devnet
from support.operator_module import FUNDED, OWNER_KEY, POSITION, REWARDS, Account, fresh_owner
from support.safe_world import SafeWorld, safe_world
from yieldagent.devnet.anvil import rpc


@pytest.fixture(scope="module")
def funded(devnet: Devnet) -> Iterator[tuple[SafeWorld, Account, dict[str, int]]]:
    """The funded account on the session's devnet (undone when the module's tests end), and
    the gas its deployment and first supply took."""
    snapshot = rpc(devnet.url, "evm_snapshot")
    d = devnet.d
    world = safe_world(devnet, collector=d.accounts[5])
    owner = fresh_owner(world, OWNER_KEY)
    address, deployed = world.deploy_account(owner.address)
    account = Account(world, owner, address)
    d.transact(account.usdc.functions.mint(account.address, FUNDED))
    d.transact(account.comp.functions.mint(account.address, REWARDS))
    calls = account.supply_calls(POSITION)
    first = world.operator.transact(world.execute(address, calls[:1]))
    world.operator.transact(world.execute(address, calls[1:]))
    gas = {"deploy": int(deployed["gasUsed"]), "first_supply": int(first["gasUsed"])}
    yield world, account, gas
    assert rpc(devnet.url, "evm_revert", [snapshot]) is True


@pytest.fixture
def acct(net: Devnet, funded: tuple[SafeWorld, Account, dict[str, int]]) -> Account:
    """The funded account, every change of a test reverted after it."""
    return funded[1]


@pytest.fixture
def world(acct: Account) -> SafeWorld:
    return acct.world
