"""Revert reasons and what a node's answer to a broadcast means."""

from __future__ import annotations

import pytest
from eth_abi.abi import encode
from web3.exceptions import Web3RPCError
from web3.types import RPCResponse

from yieldagent.chain.web3.node_answers import Broadcast, classify_refusal, node_message
from yieldagent.chain.web3.reverts import revert_data, revert_reason


def test_error_strings_panics_and_custom_errors_are_named() -> None:
    error = bytes.fromhex("08c379a0") + encode(["string"], ["not enough cash"])
    assert revert_reason(error) == "not enough cash"
    panic = bytes.fromhex("4e487b71") + encode(["uint256"], [0x11])
    assert revert_reason(panic) == "Panic(0x11): arithmetic overflow or underflow"
    unknown_panic = bytes.fromhex("4e487b71") + encode(["uint256"], [0x99])
    assert revert_reason(unknown_panic) == "Panic(0x99): unknown panic code"
    custom = bytes.fromhex("deadbeef") + encode(["uint256"], [7])
    assert revert_reason(custom) == "custom error 0xdeadbeef"
    assert revert_reason(bytes.fromhex("08c379a0") + b"\x01") == "custom error 0x08c379a0"
    assert revert_reason(b"\x01\x02") == "reverted with data 0x0102"
    assert revert_reason(b"") == "reverted without a reason"
    assert revert_reason(None) == "reverted without a reason"


def test_revert_data_comes_as_hex_or_nested() -> None:
    assert revert_data("0x0102") == b"\x01\x02"
    assert revert_data({"data": "0xab", "message": "reverted"}) == b"\xab"
    assert revert_data({"reason": "x", "result": "0xcd"}) == b"\xcd"
    assert revert_data("0x") == b""
    assert revert_data("no data") is None
    assert revert_data("0xzz") is None
    assert revert_data(None) is None


def _answer(message: str) -> Web3RPCError:
    response: RPCResponse = {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32000, "message": message},
    }
    return Web3RPCError(str(response["error"]), rpc_response=response)


@pytest.mark.parametrize(
    ("message", "meaning"),
    [
        ("already known", Broadcast.SENT),  # geth
        ("transaction already imported", Broadcast.SENT),  # anvil
        ("AlreadyKnown", Broadcast.SENT),  # nethermind
        ("nonce too low: next nonce 5, tx nonce 4", Broadcast.NONCE_USED),
        ("OldNonce", Broadcast.NONCE_USED),
        ("replacement transaction underpriced", Broadcast.UNDERPRICED),
        ("insufficient funds for gas * price + value", Broadcast.REFUSED),
        ("max fee per gas less than block base fee", Broadcast.REFUSED),
    ],
)
def test_a_broadcast_answer_is_classified(message: str, meaning: Broadcast) -> None:
    error = _answer(message)
    assert node_message(error) == message
    assert classify_refusal(error) is meaning
