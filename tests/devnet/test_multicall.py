"""Multicall3 on the devnet: at its canonical address from its presigned deployment, and
aggregating reads as production chains' Multicall3 does."""

from __future__ import annotations

from typing import Any

import pytest
from eth_abi.abi import decode, encode
from eth_account import Account
from eth_typing import HexStr
from eth_utils.crypto import keccak

from support.devnet import Devnet
from yieldagent.devnet import multicall
from yieldagent.devnet.deployer import Deployer, DeployError
from yieldagent.devnet.multicall import DEPLOYER, MULTICALL3, deploy_multicall3

AGGREGATE3 = keccak(text="aggregate3((address,bool,bytes)[])")[:4]
BALANCE_OF = keccak(text="balanceOf(address)")[:4]
DECIMALS = keccak(text="decimals()")[:4]
BLOCK_NUMBER = keccak(text="getBlockNumber()")[:4]
NO_SUCH_FUNCTION = keccak(text="noSuchFunction()")[:4]


def _aggregate3(net: Devnet, calls: list[tuple[str, bool, bytes]], block: int) -> list[Any]:
    data = AGGREGATE3 + encode(["(address,bool,bytes)[]"], [calls])
    raw = net.w3.eth.call({"to": MULTICALL3, "data": data}, block)
    [results] = decode(["(bool,bytes)[]"], bytes(raw))
    return list(results)


def test_the_presigned_transaction_is_the_one_base_mined() -> None:
    raw = multicall.presigned_transaction()
    assert raw[:4].hex() == "f90f5380"  # a list of 0xf53 bytes; nonce 0
    assert Account.recover_transaction(raw) == DEPLOYER
    assert "0x" + keccak(raw).hex() == multicall.DEPLOYMENT_HASH


def test_one_byte_off_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    code = bytearray(multicall.runtime_code())
    code[100] ^= 1
    monkeypatch.setattr(multicall, "runtime_code", lambda: bytes(code))
    with pytest.raises(DeployError, match="does not hold the Multicall3"):
        multicall.presigned_transaction()


@pytest.mark.evm
def test_deployed_at_its_address_by_its_deployer(devnet: Devnet) -> None:
    w3 = devnet.w3
    assert bytes(w3.eth.get_code(MULTICALL3)) == multicall.runtime_code()
    assert w3.eth.get_transaction_count(DEPLOYER) == 1  # its nonce 0, spent as on Base
    mined = w3.eth.get_transaction(HexStr(multicall.DEPLOYMENT_HASH))
    assert mined["from"] == DEPLOYER and mined["to"] is None
    assert deploy_multicall3(Deployer(devnet.url)) == MULTICALL3  # there already: left alone


@pytest.mark.evm
def test_aggregate3_answers_each_read_and_lets_one_fail(devnet: Devnet) -> None:
    net, w3 = devnet, devnet.w3
    usdc, aave = net.usdc, net.manifest.protocol("aave").contracts["a_token"]
    block = w3.eth.block_number
    results = _aggregate3(
        net,
        [
            (usdc, False, BALANCE_OF + encode(["address"], [aave])),
            (usdc, False, DECIMALS),
            (MULTICALL3, False, BLOCK_NUMBER),
            (usdc, True, NO_SUCH_FUNCTION),
        ],
        block,
    )
    assert [ok for ok, _ in results] == [True, True, True, False]
    balance = w3.eth.call({"to": usdc, "data": BALANCE_OF + encode(["address"], [aave])}, block)
    assert results[0][1] == bytes(balance) and int.from_bytes(balance, "big") > 0
    assert decode(["uint8"], results[1][1]) == (6,)
    assert decode(["uint256"], results[2][1]) == (block,)


@pytest.mark.evm
def test_a_failure_not_allowed_reverts_the_whole_read(devnet: Devnet) -> None:
    data = AGGREGATE3 + encode(
        ["(address,bool,bytes)[]"], [[(devnet.usdc, False, NO_SUCH_FUNCTION)]]
    )
    with pytest.raises(Exception, match="Multicall3: call failed"):
        devnet.w3.eth.call({"to": MULTICALL3, "data": data})
