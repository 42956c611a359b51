"""Comet rewards (COMP, pro rata to supply per second) and the COMP/USDC swap router, directly
and through the smart account's session key."""

from __future__ import annotations

import pytest
from web3 import Web3
from web3.contract import Contract

from support.devnet import Devnet
from support.devnet_time import advance
from support.smart_account import USDC_UNIT, Wallet, install_wallet, revert_data, selector
from yieldagent.devnet.borrowing import borrow_to_utilization
from yieldagent.devnet.compound import SECONDS_PER_YEAR
from yieldagent.devnet.toolchain import compile_project

pytestmark = pytest.mark.evm

ACCOUNT = Web3.to_checksum_address("0x" + "5a" * 20)
FORBIDDEN = selector("SessionKeyForbidden(address,bytes4)")
COMP_PER_YEAR = 1000 * 10**18


def _at(net: Devnet, name: str, address: str) -> Contract:
    return net.d.at(compile_project()[name], address)


@pytest.fixture
def supplying(net: Devnet) -> Wallet:
    """An account with 1,000,000 USDC in the Comet (5,000,000 supplied by others, 80% lent)."""
    d = net.d
    borrow_to_utilization(d, net.compound, net.usdc, 0.8)
    wallet = install_wallet(net, ACCOUNT)
    usdc = _at(net, "DevToken", net.usdc)
    comet = _at(net, "Comet", net.compound.address)
    amount = 1_000_000 * USDC_UNIT
    d.transact(usdc.functions.mint(ACCOUNT, amount))
    calls = [
        (net.usdc, 0, usdc.encode_abi("approve", [comet.address, amount])),
        (comet.address, 0, comet.encode_abi("supply", [net.usdc, amount])),
    ]
    d.transact(wallet.execute_batch(calls), sender=wallet.session_key)
    return wallet


def test_rewards_accrue_pro_rata_and_the_session_key_claims_them(
    net: Devnet, supplying: Wallet
) -> None:
    d, wallet = net.d, supplying
    rewards = _at(net, "CometRewards", net.compound.contracts["rewards"])
    comet = _at(net, "Comet", net.compound.address)
    comp = _at(net, "DevToken", net.compound.contracts["reward_token"])
    advance(net.url, 86400)
    token, owed = rewards.functions.getRewardOwed(comet.address, ACCOUNT).call()
    assert token == comp.address
    share = comet.functions.userBasic(ACCOUNT).call()[0] / comet.functions.totalSupplyBase().call()
    expected = COMP_PER_YEAR * 86400 // SECONDS_PER_YEAR * share
    assert abs(owed - expected) < expected / 100
    claim = rewards.encode_abi("claim", [comet.address, ACCOUNT, True])
    d.transact(wallet.execute(rewards.address, claim), sender=wallet.session_key)
    assert comp.functions.balanceOf(ACCOUNT).call() >= owed
    assert rewards.functions.getRewardOwed(comet.address, ACCOUNT).call()[1] == 0
    for_owner = rewards.encode_abi("claim", [comet.address, wallet.owner, True])
    data = revert_data(wallet.execute(rewards.address, for_owner), wallet.session_key)
    assert data.startswith(FORBIDDEN)


def test_the_session_key_swaps_rewards_into_usdc_for_the_account(
    net: Devnet, supplying: Wallet
) -> None:
    d, wallet = net.d, supplying
    assert net.router is not None
    router = _at(net, "SwapRouter", net.router)
    comp = _at(net, "DevToken", net.compound.contracts["reward_token"])
    usdc = _at(net, "DevToken", net.usdc)
    amount = 10 * 10**18
    d.transact(comp.functions.mint(ACCOUNT, amount))
    quote = router.functions.getAmountOut(comp.address, net.usdc, amount).call()
    assert 490 * USDC_UNIT < quote < 500 * USDC_UNIT  # 1 COMP ~ 50 USDC, less 0.3% and impact
    before = usdc.functions.balanceOf(ACCOUNT).call()
    approve = comp.encode_abi("approve", [router.address, amount])
    too_greedy = router.encode_abi("swap", [comp.address, net.usdc, amount, quote + 1, ACCOUNT])
    swap = router.encode_abi("swap", [comp.address, net.usdc, amount, quote, ACCOUNT])
    batch = wallet.execute_batch([(comp.address, 0, approve), (router.address, 0, too_greedy)])
    assert "slippage" in revert_data(batch, wallet.session_key)
    elsewhere = router.encode_abi("swap", [comp.address, net.usdc, amount, 0, wallet.owner])
    data = revert_data(wallet.execute(router.address, elsewhere), wallet.session_key)
    assert data.startswith(FORBIDDEN)
    calls = [(comp.address, 0, approve), (router.address, 0, swap)]
    d.transact(wallet.execute_batch(calls), sender=wallet.session_key)
    assert usdc.functions.balanceOf(ACCOUNT).call() == before + quote
    assert comp.functions.balanceOf(ACCOUNT).call() == 0
