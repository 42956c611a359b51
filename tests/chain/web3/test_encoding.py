"""ABI fragments and the operator module's calldata."""

from __future__ import annotations

from eth_abi.abi import decode, encode
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak

from yieldagent.chain.web3.abis import (
    AAVE_RESERVE_DATA,
    APPROVE,
    MODULE_EXECUTE,
    MODULE_PAY,
    TRANSFER,
    Fn,
)
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


def test_module_calls_carry_the_account_and_each_target_with_its_data() -> None:
    account = str(to_checksum_address("0x" + "ab" * 20))
    supply = Call(POOL, Fn("supply(address,uint256,address,uint16)"), (TOKEN, 10, account, 0))
    data = MODULE_EXECUTE.encode(account, [(supply.target, supply.data)])
    assert data[:4] == keccak(text="execute(address,(address,bytes)[])")[:4]
    decoded_account, calls = decode(["address", "(address,bytes)[]"], data[4:])
    assert to_checksum_address(decoded_account) == account
    assert [(to_checksum_address(t), d) for t, d in calls] == [(POOL, supply.data)]
    assert MODULE_PAY.encode(account, 9, 1)[4:] == encode(
        ["address", "uint256", "uint256"], [account, 9, 1]
    )
