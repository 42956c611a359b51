"""The deployer and the devnet USDC: transactions, revert reasons, actors, minting."""

from __future__ import annotations

import pytest
from eth_abi.abi import encode
from eth_utils.abi import function_signature_to_4byte_selector

from support.devnet import Devnet
from yieldagent.devnet.deployer import Deployer, DeployError, decode_custom_error
from yieldagent.devnet.usdc import ONE_USDC, deploy_usdc, ensure_balance, mint, usdc_artifact

ERROR_ABI = [
    {
        "type": "error",
        "name": "SessionKeyForbidden",
        "inputs": [{"name": "target", "type": "address"}, {"name": "selector", "type": "bytes4"}],
    }
]


def test_custom_errors_decode_by_name() -> None:
    target = "0x" + "12" * 20
    data = function_signature_to_4byte_selector("SessionKeyForbidden(address,bytes4)") + encode(
        ["address", "bytes4"], [target, bytes.fromhex("a9059cbb")]
    )
    decoded = decode_custom_error("0x" + data.hex(), ERROR_ABI)
    assert decoded == f"SessionKeyForbidden({target}, {bytes.fromhex('a9059cbb')!r})"
    assert decode_custom_error("0xdeadbeef", ERROR_ABI) is None


@pytest.mark.evm
def test_usdc_is_a_six_decimal_erc20_anyone_mints(devnet_snapshot: Devnet) -> None:
    d = Deployer(devnet_snapshot.url)
    usdc = d.at(usdc_artifact(), devnet_snapshot.manifest.token)
    assert (usdc.functions.name().call(), usdc.functions.symbol().call()) == ("USD Coin", "USDC")
    assert usdc.functions.decimals().call() == 6
    alice, bob = d.accounts[5], d.accounts[6]
    supply = usdc.functions.totalSupply().call()
    receipt = d.transact(usdc.functions.mint(alice, 7 * ONE_USDC), sender=bob)
    [minted] = usdc.events.Transfer().process_receipt(receipt)
    assert (minted.args["from"], minted.args["to"], minted.args["value"]) == (
        "0x" + "00" * 20,
        alice,
        7 * ONE_USDC,
    )
    assert usdc.functions.totalSupply().call() == supply + 7 * ONE_USDC
    d.transact(usdc.functions.approve(bob, 3 * ONE_USDC), alice)
    d.transact(usdc.functions.transferFrom(alice, bob, 3 * ONE_USDC), bob)
    assert usdc.functions.allowance(alice, bob).call() == 0
    with pytest.raises(DeployError, match="insufficient allowance"):
        d.transact(usdc.functions.transferFrom(alice, bob, 1), bob)
    with pytest.raises(DeployError, match="exceeds balance"):
        d.transact(usdc.functions.transfer(bob, 5 * ONE_USDC), alice)


@pytest.mark.evm
def test_actors_are_fixed_funded_and_can_send(devnet_snapshot: Devnet) -> None:
    d = Deployer(devnet_snapshot.url)
    actor = d.actor("a test actor")
    assert actor == Deployer(devnet_snapshot.url).actor("a test actor")
    assert actor not in d.accounts
    assert d.w3.eth.get_balance(actor) >= 10**24 // 2
    token = devnet_snapshot.manifest.token
    ensure_balance(d, token, actor, 10 * ONE_USDC)
    ensure_balance(d, token, actor, 4 * ONE_USDC)  # already has it: mints nothing
    usdc = d.at(usdc_artifact(), token)
    assert usdc.functions.balanceOf(actor).call() == 10 * ONE_USDC
    d.transact(usdc.functions.transfer(d.admin, 10 * ONE_USDC), actor)
    assert usdc.functions.balanceOf(actor).call() == 0


@pytest.mark.evm
def test_deploys_fresh_contracts_and_funds(devnet_snapshot: Devnet) -> None:
    d = Deployer(devnet_snapshot.url)
    fresh = deploy_usdc(d)
    assert fresh.address != devnet_snapshot.manifest.token
    mint(d, fresh.address, d.accounts[7], 1)
    assert fresh.functions.balanceOf(d.accounts[7]).call() == 1
    d.fund(d.accounts[7], 12345)
    assert Deployer(d.w3).admin == d.admin  # over an existing Web3 too
    assert d.w3.eth.get_balance(d.w3.to_checksum_address(d.accounts[7])) == 12345
