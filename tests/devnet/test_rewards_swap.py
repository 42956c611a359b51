"""Comet rewards (COMP, pro rata to supply per second) and the COMP/USDC swap router, directly
and for a Safe account through the operator module, with the operator's key."""

from __future__ import annotations

import pytest
from eth_account import Account
from web3.contract import Contract

from support.devnet import Devnet
from support.devnet_time import advance
from support.safe_world import SafeWorld, safe_world
from support.smart_account import USDC_UNIT
from yieldagent.devnet.borrowing import borrow_to_utilization
from yieldagent.devnet.compound import SECONDS_PER_YEAR
from yieldagent.devnet.toolchain import compile_project

pytestmark = pytest.mark.evm

COMP_PER_YEAR = 1000 * 10**18


def _at(net: Devnet, name: str, address: str) -> Contract:
    return net.d.at(compile_project()[name], address)


@pytest.fixture
def supplying(net: Devnet) -> tuple[SafeWorld, str, str]:
    """A Safe account with 1,000,000 USDC in the Comet (5,000,000 supplied by others, 80%
    lent), supplied by the operator through the module; the world, the account, its owner."""
    d = net.d
    borrow_to_utilization(d, net.compound, net.usdc, 0.8)
    world = safe_world(net, net.manifest.extras["fee_collector"])
    owner = Account.create().address
    account, _ = world.deploy_account(owner)
    usdc = _at(net, "DevToken", net.usdc)
    comet = _at(net, "Comet", net.compound.address)
    amount = 1_000_000 * USDC_UNIT
    d.transact(usdc.functions.mint(account, amount))
    supply = comet.encode_abi("supply", [net.usdc, amount])
    world.operator.transact(world.execute(account, [(comet.address, supply)]))
    return world, account, owner


def test_rewards_accrue_pro_rata_and_the_operator_claims_them_to_the_account(
    net: Devnet, supplying: tuple[SafeWorld, str, str]
) -> None:
    world, account, owner = supplying
    rewards = _at(net, "CometRewards", net.compound.contracts["rewards"])
    comet = _at(net, "Comet", net.compound.address)
    comp = _at(net, "DevToken", net.compound.contracts["reward_token"])
    advance(net.url, 86400)
    token, owed = rewards.functions.getRewardOwed(comet.address, account).call()
    assert token == comp.address
    share = comet.functions.userBasic(account).call()[0] / comet.functions.totalSupplyBase().call()
    expected = COMP_PER_YEAR * 86400 // SECONDS_PER_YEAR * share
    assert abs(owed - expected) < expected / 100
    claim = rewards.encode_abi("claim", [comet.address, account, True])
    world.operator.transact(world.execute(account, [(rewards.address, claim)]))
    assert comp.functions.balanceOf(account).call() >= owed
    assert rewards.functions.getRewardOwed(comet.address, account).call()[1] == 0
    for_owner = rewards.encode_abi("claim", [comet.address, owner, True])
    reason = world.operator.refused(
        world.execute(account, [(rewards.address, for_owner)]), world.module_abi
    )
    assert reason.startswith("NotAccount(")


def test_the_operator_swaps_rewards_into_usdc_for_the_account_only(
    net: Devnet, supplying: tuple[SafeWorld, str, str]
) -> None:
    world, account, owner = supplying
    assert net.router is not None
    router = _at(net, "SwapRouter", net.router)
    comp = _at(net, "DevToken", net.compound.contracts["reward_token"])
    usdc = _at(net, "DevToken", net.usdc)
    amount = 10 * 10**18
    net.d.transact(comp.functions.mint(account, amount))
    quote = router.functions.getAmountOut(comp.address, net.usdc, amount).call()
    assert 490 * USDC_UNIT < quote < 500 * USDC_UNIT  # 1 COMP ~ 50 USDC, less 0.3% and impact
    before = usdc.functions.balanceOf(account).call()
    too_greedy = router.encode_abi("swap", [comp.address, net.usdc, amount, quote + 1, account])
    refused = world.operator.refused(
        world.execute(account, [(router.address, too_greedy)]), world.module_abi
    )
    assert refused.startswith("CallFailed(")  # the router's slippage check
    elsewhere = router.encode_abi("swap", [comp.address, net.usdc, amount, 0, owner])
    refused = world.operator.refused(
        world.execute(account, [(router.address, elsewhere)]), world.module_abi
    )
    assert refused.startswith("NotAccount(")
    swap = router.encode_abi("swap", [comp.address, net.usdc, amount, quote, account])
    world.operator.transact(world.execute(account, [(router.address, swap)]))
    assert usdc.functions.balanceOf(account).call() == before + quote
    assert comp.functions.balanceOf(account).call() == 0
    assert comp.functions.allowance(account, router.address).call() == 0
