"""ABI fragments and the smart account's ERC-7579 execute calldata."""

from __future__ import annotations

from eth_abi.abi import decode, encode
from eth_utils.address import to_checksum_address

from yieldagent.chain.web3.abis import AAVE_RESERVE_DATA, ACCOUNT_EXECUTE, APPROVE, TRANSFER, Fn
from yieldagent.chain.web3.account import execute_calldata
from yieldagent.chain.web3.protocols.base import Call

TOKEN = str(to_checksum_address("0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"))
POOL = str(to_checksum_address("0xa238dd80c259a72e81d7e4664a9801593f98d1c5"))


def test_functions_encode_with_their_selector_and_decode_checksummed() -> None:
    assert TRANSFER.selector.hex() == "a9059cbb"
    assert APPROVE.encode(POOL, 5)[:4].hex() == "095ea7b3"
    assert AAVE_RESERVE_DATA.selector.hex() == "35ea6a75"
    pair = Fn("pair()", "(address,uint256),address[]")
    data = encode(["(address,uint256)", "address[]"], [(TOKEN.lower(), 7), [POOL.lower()]])
    assert pair.decode(data) == ((TOKEN, 7), [POOL])


def test_calls_render_their_arguments_as_abi_text() -> None:
    call = Call(POOL, Fn("f(address,uint256,bool,bytes32)"), (TOKEN, 7, True, b"\xab" * 32))
    assert call.arguments() == (TOKEN, "7", "true", "0x" + "ab" * 32)
    assert call.data == call.fn.encode(TOKEN, 7, True, b"\xab" * 32)


def test_one_call_is_a_single_execution() -> None:
    call = Call(TOKEN, TRANSFER, (POOL, 10))
    data = execute_calldata([call])
    assert data[:4] == ACCOUNT_EXECUTE.selector
    mode, packed = decode(["bytes32", "bytes"], data[4:])
    assert mode == bytes(32)
    assert packed == bytes.fromhex(TOKEN[2:]) + (0).to_bytes(32, "big") + call.data


def test_several_calls_are_one_batch() -> None:
    calls = [Call(TOKEN, APPROVE, (POOL, 10)), Call(POOL, Fn("ping(bytes2)"), (b"\x01\x02",), 3)]
    mode, batch = decode(["bytes32", "bytes"], execute_calldata(calls)[4:])
    assert mode == b"\x01" + bytes(31)
    [executions] = decode(["(address,uint256,bytes)[]"], batch)
    assert [(to_checksum_address(t), v, d) for t, v, d in executions] == [
        (c.target, c.value, c.data) for c in calls
    ]
