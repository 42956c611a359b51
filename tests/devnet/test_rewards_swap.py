"""Comet rewards (COMP, pro rata to supply per second) and the COMP/USDC swap router, directly
and through the smart account's session key."""

from __future__ import annotations

import pytest
from web3 import Web3
from web3.contract import Contract
from web3.types import RPCEndpoint

from support.devnet import USDC_UNIT, Devnet, Wallet, install_wallet, revert_data, selector
from yieldagent.devnet.borrowing import borrow_to_utilization
from yieldagent.devnet.compound import SECONDS_PER_YEAR
from yieldagent.devnet.toolchain import compile_project

pytestmark = pytest.mark.evm

ACCOUNT = Web3.to_checksum_address("0x" + "5a" * 20)
FORBIDDEN = selector("SessionKeyForbidden(address,bytes4)")
COMP_PER_YEAR = 1000 * 10**18


def _at(devnet: Devnet, name: str, address: str) -> Contract:
    return devnet.d.at(compile_project()[name], address)


def _advance(devnet: Devnet, seconds: int) -> None:
    devnet.w3.provider.make_request(RPCEndpoint("evm_increaseTime"), [seconds])
    devnet.w3.provider.make_request(RPCEndpoint("evm_mine"), [])


@pytest.fixture
def supplying(devnet: Devnet) -> Wallet:
    """An account with 1,000,000 USDC in the Comet (5,000,000 supplied by others, 80% lent)."""
    d = devnet.d
    borrow_to_utilization(d, devnet.compound, devnet.usdc, 0.8)
    wallet = install_wallet(devnet, ACCOUNT)
    usdc = _at(devnet, "DevToken", devnet.usdc)
    comet = _at(devnet, "Comet", devnet.compound.address)
    amount = 1_000_000 * USDC_UNIT
    d.transact(usdc.functions.mint(ACCOUNT, amount))
    calls = [
        (devnet.usdc, 0, usdc.encode_abi("approve", [comet.address, amount])),
        (comet.address, 0, comet.encode_abi("supply", [devnet.usdc, amount])),
    ]
    d.transact(wallet.execute_batch(calls), sender=wallet.session_key)
    return wallet


def test_rewards_accrue_pro_rata_and_the_session_key_claims_them(
    devnet: Devnet, supplying: Wallet
) -> None:
    d, wallet = devnet.d, supplying
    rewards = _at(devnet, "CometRewards", devnet.compound.contracts["rewards"])
    comet = _at(devnet, "Comet", devnet.compound.address)
    comp = _at(devnet, "DevToken", devnet.compound.contracts["reward_token"])
    _advance(devnet, 86400)
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
    devnet: Devnet, supplying: Wallet
) -> None:
    d, wallet = devnet.d, supplying
    router = _at(devnet, "SwapRouter", devnet.router)
    comp = _at(devnet, "DevToken", devnet.compound.contracts["reward_token"])
    usdc = _at(devnet, "DevToken", devnet.usdc)
    amount = 10 * 10**18
    d.transact(comp.functions.mint(ACCOUNT, amount))
    quote = router.functions.getAmountOut(comp.address, devnet.usdc, amount).call()
    assert 490 * USDC_UNIT < quote < 500 * USDC_UNIT  # 1 COMP ~ 50 USDC, less 0.3% and impact
    before = usdc.functions.balanceOf(ACCOUNT).call()
    approve = comp.encode_abi("approve", [router.address, amount])
    too_greedy = router.encode_abi("swap", [comp.address, devnet.usdc, amount, quote + 1, ACCOUNT])
    swap = router.encode_abi("swap", [comp.address, devnet.usdc, amount, quote, ACCOUNT])
    batch = wallet.execute_batch([(comp.address, 0, approve), (router.address, 0, too_greedy)])
    assert "slippage" in revert_data(batch, wallet.session_key)
    elsewhere = router.encode_abi("swap", [comp.address, devnet.usdc, amount, 0, wallet.owner])
    data = revert_data(wallet.execute(router.address, elsewhere), wallet.session_key)
    assert data.startswith(FORBIDDEN)
    calls = [(comp.address, 0, approve), (router.address, 0, swap)]
    d.transact(wallet.execute_batch(calls), sender=wallet.session_key)
    assert usdc.functions.balanceOf(ACCOUNT).call() == before + quote
    assert comp.functions.balanceOf(ACCOUNT).call() == 0
