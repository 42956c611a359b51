"""The batched reader against a scripted node: a view that panics 0x11 is read once more
at the same block, other reverts are not; a node that fails for a moment is asked again,
after its Retry-After or a growing delay, a bounded number of times."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aiohttp
import pytest
from eth_abi.abi import encode
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from yieldagent.chain.web3.abis import TOTAL_SUPPLY
from yieldagent.chain.web3.reader import ARITHMETIC_PANIC, ReadReverted, RpcReader, read
from yieldagent.chain.web3.retries import FIRST_DELAY, MAX_RETRY_AFTER, RETRIES, RetryPolicy
from yieldagent.domain.errors import NODE_DID_NOT_ANSWER, ChainUnavailable, NodeUnavailable

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


def _http_error(status: int, retry_after: str | None = None) -> aiohttp.ClientResponseError:
    url = URL("https://node.example/v2/secret-key")
    headers = CIMultiDictProxy(CIMultiDict[str]())
    answer = CIMultiDict[str]()
    if retry_after is not None:
        answer["Retry-After"] = retry_after
    info = aiohttp.RequestInfo(url, "POST", headers, url)
    return aiohttp.ClientResponseError(
        info, (), status=status, message="no", headers=CIMultiDictProxy(answer)
    )


class FailingNode:
    """A provider that fails its first batches as ``failures`` says (an exception raised,
    or an answer given for every call), then answers each ``eth_call`` with 42."""

    def __init__(self, *failures: BaseException | dict[str, Any]) -> None:
        self._failures = list(failures)
        self.batches = 0

    async def make_batch_request(self, requests: list[tuple[str, Any]]) -> list[dict[str, Any]]:
        self.batches += 1
        if self._failures:
            failure = self._failures.pop(0)
            if isinstance(failure, BaseException):
                raise failure
            return [dict(failure, id=i) for i, _ in enumerate(requests)]
        return [{"id": i, "result": ANSWER} for i, _ in enumerate(requests)]


def _patient(node: FailingNode) -> tuple[RpcReader, list[float]]:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    return RpcReader(_Web3(node), retry=RetryPolicy(sleep=sleep)), waits  # type: ignore[arg-type]


async def test_a_429_is_asked_again_after_its_retry_after() -> None:
    node = FailingNode(_http_error(429, "3"), _http_error(429, "600"))
    reader, waits = _patient(node)
    assert await reader.call(TOKEN, TOTAL_SUPPLY, block=5) == 42
    assert waits == [3.0, MAX_RETRY_AFTER]  # honoured, and bounded
    assert node.batches == 3 and reader.stats.retries == 2


@pytest.mark.parametrize(
    "failure",
    [
        _http_error(503),
        aiohttp.ServerDisconnectedError(),
        TimeoutError(),
        {"error": {"code": -32603, "message": "internal error"}},
        {"error": {"code": -32005, "message": "limit exceeded"}},
    ],
    ids=["5xx", "dropped", "timeout", "error-body", "limit"],
)
async def test_a_node_that_fails_for_a_moment_is_asked_again_with_a_growing_delay(
    failure: BaseException | dict[str, Any],
) -> None:
    node = FailingNode(failure, failure)
    reader, waits = _patient(node)
    answers = await reader.call_many([read(TOKEN, TOTAL_SUPPLY)] * 3, 5)
    assert answers == [42, 42, 42]
    assert node.batches == 3  # every read of the batch went again together
    assert FIRST_DELAY <= waits[0] < waits[1] <= 2.5 * FIRST_DELAY * 2


async def test_a_node_that_keeps_failing_is_unavailable_after_a_bounded_number_of_tries(
    caplog: pytest.LogCaptureFixture,
) -> None:
    node = FailingNode(*[_http_error(503)] * (RETRIES + 5))
    reader, waits = _patient(node)
    with pytest.raises(NodeUnavailable) as raised:
        await reader.call(TOKEN, TOTAL_SUPPLY, block=5)
    assert node.batches == RETRIES + 1 and len(waits) == RETRIES
    assert raised.value.detail == NODE_DID_NOT_ANSWER
    assert "secret-key" not in caplog.text and "secret-key" not in raised.value.cause


@pytest.mark.parametrize("failure", [_http_error(401), _reverted(PANIC.replace("11", "12"))])
async def test_a_refusal_is_not_asked_again(failure: BaseException | dict[str, Any]) -> None:
    node = FailingNode(failure)
    reader, waits = _patient(node)
    with pytest.raises(ChainUnavailable):
        await reader.call(TOKEN, TOTAL_SUPPLY, block=5)
    assert node.batches == 1 and waits == []
