"""The batched reader against a scripted node: a view that panics 0x11 is read once more
at the same block, other reverts are not."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from eth_abi.abi import encode

from yieldagent.chain.web3.abis import TOTAL_SUPPLY
from yieldagent.chain.web3.reader import ARITHMETIC_PANIC, ReadReverted, RpcReader

TOKEN = "0x" + "ab" * 20
PANIC = "0x" + ARITHMETIC_PANIC.hex()
ANSWER = "0x" + encode(["uint256"], [42]).hex()


def _reverted(data: str) -> dict[str, Any]:
    return {"error": {"code": 3, "message": "execution reverted", "data": data}}


class ScriptedNode:
    """A provider answering each request from ``answers`` in turn (a callable answers by
    the request's params), and noting what it was asked."""

    def __init__(self, *answers: dict[str, Any] | Callable[[list[Any]], dict[str, Any]]):
        self._answers = list(answers)
        self.asked: list[tuple[str, list[Any]]] = []

    async def make_request(self, method: str, params: list[Any]) -> dict[str, Any]:
        self.asked.append((method, params))
        answer = self._answers.pop(0)
        return dict(answer(params) if callable(answer) else answer)


class _Web3:
    def __init__(self, provider: ScriptedNode) -> None:
        self.provider = provider


def _reader(node: ScriptedNode) -> RpcReader:
    return RpcReader(_Web3(node))  # type: ignore[arg-type]


async def test_a_view_that_panics_with_0x11_is_read_again_at_the_same_block() -> None:
    node = ScriptedNode(_reverted(PANIC), {"result": ANSWER})
    assert await _reader(node).call(TOKEN, TOTAL_SUPPLY, block=77) == 42
    assert [(m, p[1]) for m, p in node.asked] == [("eth_call", "0x4d"), ("eth_call", "0x4d")]


async def test_a_view_that_panics_twice_is_a_revert() -> None:
    node = ScriptedNode(_reverted(PANIC), _reverted(PANIC))
    with pytest.raises(ReadReverted) as raised:
        await _reader(node).call(TOKEN, TOTAL_SUPPLY, block=77)
    assert raised.value.panic and len(node.asked) == 2


@pytest.mark.parametrize(
    "data",
    [
        "0x4e487b71" + (0x12).to_bytes(32, "big").hex(),  # division by zero: not transient
        "0x08c379a0" + encode(["string"], ["paused"]).hex(),
    ],
)
async def test_other_reverts_are_not_read_again(data: str) -> None:
    node = ScriptedNode(_reverted(data))
    with pytest.raises(ReadReverted) as raised:
        await _reader(node).call(TOKEN, TOTAL_SUPPLY, block=77)
    assert not raised.value.panic and len(node.asked) == 1

