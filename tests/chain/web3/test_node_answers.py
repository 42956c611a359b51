"""A failed node call is told without the node's URL or words.

The node's answers below carry a provider's URL with its API key and words of their own;
each path they take (a broadcast refused, alone or in a batch; a read refused, reverted
or rate limited; a batch refused whole; a revert estimated or replayed, with return data
and without) is told by a category, a JSON-RPC code and an HTTP status only. A revert
reason decoded from return data is the contract's, and is told.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import aiohttp
import pytest
from eth_abi.abi import encode
from multidict import CIMultiDict, CIMultiDictProxy
from sqlalchemy import Engine
from web3 import AsyncWeb3
from web3.exceptions import Web3RPCError
from web3.providers.async_base import AsyncBaseProvider
from yarl import URL

from support.anvil import dev_key
from yieldagent.chain.signers.local import LocalKeySigner
from yieldagent.chain.web3.abis import TOTAL_SUPPLY
from yieldagent.chain.web3.node_answers import (
    node_unavailable,
    read_kind,
    redacted,
    refusal,
    refusal_kind,
)
from yieldagent.chain.web3.reader import ReadReverted, RpcReader
from yieldagent.chain.web3.retries import RetryPolicy
from yieldagent.chain.web3.transactions import Outgoing, SendSettings, TransactionSender
from yieldagent.domain.errors import NODE_DID_NOT_ANSWER, ChainRejected, NodeUnavailable
from yieldagent.storage.nonces import NonceStore

NODE = URL("https://base.example/v2/secret-api-key?key=other-secret")
WORDS = "secret-words-xyz"
UNTOLD = ("secret-api-key", "other-secret", WORDS, "base.example")
TO = "0x" + "ab" * 20
REASON = "0x08c379a0" + encode(["string"], ["not enough cash"]).hex()


def _said(words: str) -> str:
    """A node's message: ``words`` with a URL holding the key, and words of its own."""
    return f"{words}: {WORDS} (see {NODE})"


@pytest.fixture
def caplog(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Every record logged at DEBUG and above, web3's from warnings up, as ``Web3Chain``
    keeps it (its debug lines print the node's whole answers)."""
    caplog.set_level(logging.DEBUG)
    web3 = logging.getLogger("web3")
    level = web3.level
    web3.setLevel(logging.WARNING)
    yield caplog
    web3.setLevel(level)


def _untold(caplog: pytest.LogCaptureFixture, *texts: str) -> None:
    """Neither the key, the URL nor the node's words are in ``texts`` or any log record
    (its message, its arguments and every extra field)."""
    logged = caplog.text + "\n".join(repr(record.__dict__) for record in caplog.records)
    for text in (*texts, logged):
        for secret in UNTOLD:
            assert secret not in text, text


def _http_error(status: int) -> aiohttp.ClientResponseError:
    headers = CIMultiDictProxy(CIMultiDict[str]())
    info = aiohttp.RequestInfo(NODE, "POST", headers, NODE)
    return aiohttp.ClientResponseError(info, (), status=status, message="Too Many Requests")


def _answer(code: int, words: str) -> Web3RPCError:
    response: Any = {"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": _said(words)}}
    return Web3RPCError(_said(words), rpc_response=response)


# -- the vocabulary ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "kind"),
    [
        ("insufficient funds for gas * price + value: have 0 want 1", "insufficient funds"),
        ("max fee per gas less than block base fee: maxFeePerGas: 1", "fee cap below base fee"),
        ("FeeCapTooLow", "fee cap below base fee"),
        ("intrinsic gas too low", "gas limit"),
        ("exceeds block gas limit", "gas limit"),
        ("nonce too low: next nonce 7, tx nonce 5", "nonce"),
        ("nonce too high", "nonce"),
        ("replacement transaction underpriced", "underpriced"),
        ("transaction underpriced", "underpriced"),
        ("already known", "already known"),
        ("AlreadyKnown", "already known"),
        ("the node had a bad day", "other"),
    ],
)
def test_a_broadcast_refusal_is_told_by_its_category(said: str, kind: str) -> None:
    assert refusal_kind(_said(said)) == kind


@pytest.mark.parametrize(
    ("said", "kind"),
    [
        ("execution reverted", "reverted"),
        ("Too Many Requests", "rate limited"),
        ("daily request limit exceeded", "rate limited"),
        ("header not found", "other"),
    ],
)
def test_a_read_error_is_told_by_its_category(said: str, kind: str) -> None:
    assert read_kind(_said(said)) == kind


def test_an_http_error_is_told_by_its_class_and_status_only() -> None:
    error = _http_error(429)
    assert "secret-api-key" in str(error)  # what aiohttp's own text would have leaked
    assert redacted(error) == "ClientResponseError HTTP 429"


def test_an_error_answer_is_told_by_its_class_code_and_category_only() -> None:
    assert redacted(_answer(-32005, "rate limit")) == "Web3RPCError code -32005 (rate limited)"
    assert refusal(_answer(-32000, "nonce too low")) == "nonce (code -32000)"


def test_a_failed_call_says_one_sentence_and_keeps_its_cause_for_the_logs() -> None:
    failure = node_unavailable("eth_call", _http_error(500))
    assert str(failure) == failure.detail == NODE_DID_NOT_ANSWER
    assert failure.cause == "eth_call: ClientResponseError HTTP 500"


# -- a scripted node ----------------------------------------------------------------------

Answer = dict[str, Any] | Callable[[list[Any]], dict[str, Any]]


def _receipt(params: list[Any]) -> dict[str, Any]:
    """A receipt of a reverted transaction, mined in block 5."""
    return {
        "result": {
            "transactionHash": params[0],
            "transactionIndex": "0x0",
            "blockHash": "0x" + "00" * 32,
            "blockNumber": "0x5",
            "from": TO,
            "to": TO,
            "cumulativeGasUsed": "0x5208",
            "gasUsed": "0x5208",
            "effectiveGasPrice": "0x1",
            "contractAddress": None,
            "logs": [],
            "logsBloom": "0x" + "00" * 256,
            "status": "0x0",
            "type": "0x2",
        }
    }


BASE_ANSWERS: dict[str, Answer] = {
    "eth_feeHistory": {
        "result": {
            "oldestBlock": "0x1",
            "baseFeePerGas": ["0x3b9aca00"] * 6,
            "gasUsedRatio": [0.5] * 5,
            "reward": [["0x1"]] * 5,
        }
    },
    "eth_getTransactionCount": {"result": "0x0"},
    "eth_sendRawTransaction": {"result": "0x" + "11" * 32},
    "eth_getTransactionReceipt": _receipt,
    "eth_blockNumber": {"result": "0x5"},
}


class ScriptedNode(AsyncBaseProvider):
    """Answers each method as ``answers`` says (a callable answers by the params)."""

    def __init__(self, answers: dict[str, Answer]) -> None:
        super().__init__()
        self.answers = {**BASE_ANSWERS, **answers}

    async def make_request(self, method: Any, params: Any) -> Any:
        answer = self.answers[method]
        return {"jsonrpc": "2.0", "id": 1, **(answer(params) if callable(answer) else answer)}

    async def is_connected(self, show_traceback: bool = False) -> bool:
        return True


async def _nothing(seconds: float) -> None:
    return None


def _sender(engine: Engine, answers: dict[str, Answer]) -> TransactionSender:
    w3 = AsyncWeb3(ScriptedNode(answers))
    w3.middleware_onion.remove("validation")
    return TransactionSender(
        w3,
        8453,
        LocalKeySigner(dev_key(10)),
        NonceStore(engine),
        SendSettings(poll_seconds=0.01),
        sleep=_nothing,
        retry=RetryPolicy(sleep=_nothing, jitter=lambda: 0.0),
    )


def _error(code: int, words: str, data: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": _said(words)}
    if data is not None:
        error["data"] = data
    return {"error": error}


# -- broadcasts -----------------------------------------------------------------------------


@pytest.mark.sqlite_only
async def test_a_refused_broadcast_tells_its_category_only(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    refused = _error(-32000, "insufficient funds for gas * price + value")
    sender = _sender(engine, {"eth_sendRawTransaction": refused})
    with pytest.raises(NodeUnavailable) as raised:
        await sender.send(TO, b"", gas=100_000)
    assert raised.value.cause == "eth_sendRawTransaction: insufficient funds (code -32000)"
    assert "node call failed" in caplog.text  # the operator hears of it, by its category
    _untold(caplog, str(raised.value), raised.value.cause, repr(raised.value))


@pytest.mark.sqlite_only
async def test_a_broadcast_refused_in_a_batch_tells_its_category_only(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    refused = _error(-32000, "max fee per gas less than block base fee")
    sender = _sender(engine, {"eth_sendRawTransaction": refused})
    [result] = await sender.send_many([Outgoing(TO, b"", 100_000)])
    assert isinstance(result, NodeUnavailable)
    assert result.cause == "eth_sendRawTransaction: fee cap below base fee (code -32000)"
    _untold(caplog, str(result), result.cause)


# -- reverts, estimated and replayed --------------------------------------------------------


@pytest.mark.sqlite_only
@pytest.mark.parametrize(
    ("data", "reason"), [(None, "reverted without a reason"), (REASON, "not enough cash")]
)
async def test_an_estimate_that_reverts_tells_the_contracts_reason_only(
    engine: Engine, caplog: pytest.LogCaptureFixture, data: str | None, reason: str
) -> None:
    sender = _sender(engine, {"eth_estimateGas": _error(3, "execution reverted", data)})
    with pytest.raises(ChainRejected) as raised:
        await sender.send(TO, b"")
    assert raised.value.reason == reason
    _untold(caplog, str(raised.value), raised.value.reason)


@pytest.mark.sqlite_only
@pytest.mark.parametrize(
    ("replayed", "reason"),
    [
        (_error(3, "execution reverted", REASON), "not enough cash"),
        (_error(3, "execution reverted", "0x"), "reverted without a reason"),
        (_error(3, "execution reverted"), "reverted without a reason"),
        (
            _error(-32000, "header not found"),
            "unknown (the node refused the replay: Web3RPCError code -32000 (other))",
        ),
    ],
    ids=["reason", "empty data", "no data", "refused"],
)
async def test_a_mined_revert_tells_the_contracts_reason_only(
    engine: Engine, caplog: pytest.LogCaptureFixture, replayed: dict[str, Any], reason: str
) -> None:
    sender = _sender(engine, {"eth_call": replayed})
    with pytest.raises(ChainRejected) as raised:
        await sender.send(TO, b"", gas=100_000)
    assert raised.value.reason == reason
    _untold(caplog, str(raised.value), raised.value.reason)


# -- reads ----------------------------------------------------------------------------------


class BatchNode:
    """A provider answering every batch with ``answer``: a list (one per call) or, as a
    node refusing the batch whole answers, one error object."""

    def __init__(self, answer: Callable[[int], Any]) -> None:
        self.answer = answer

    async def make_batch_request(self, requests: list[tuple[str, Any]]) -> Any:
        return self.answer(len(requests))


class _Web3:
    def __init__(self, provider: BatchNode) -> None:
        self.provider = provider


def _reader(answer: Callable[[int], Any]) -> RpcReader:
    retry = RetryPolicy(sleep=_nothing, jitter=lambda: 0.0)
    return RpcReader(_Web3(BatchNode(answer)), retry=retry)  # type: ignore[arg-type]


def _each(error: dict[str, Any]) -> Callable[[int], Any]:
    return lambda calls: [error] * calls


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        (_error(-32602, "invalid argument 0"), "eth_call: other (code -32602)"),
        (_error(-32005, "daily request limit exceeded"), "eth_call: rate limited (code -32005)"),
    ],
    ids=["refused", "rate limited"],
)
async def test_a_read_error_tells_its_category_only(
    caplog: pytest.LogCaptureFixture, error: dict[str, Any], cause: str
) -> None:
    with pytest.raises(NodeUnavailable) as raised:
        await _reader(_each(error)).call(TO, TOTAL_SUPPLY, block=7)
    assert raised.value.cause == cause
    _untold(caplog, str(raised.value), raised.value.cause)


@pytest.mark.parametrize(
    ("data", "reason"), [(None, "reverted without a reason"), (REASON, "not enough cash")]
)
async def test_a_read_that_reverts_tells_the_contracts_reason_only(
    caplog: pytest.LogCaptureFixture, data: str | None, reason: str
) -> None:
    with pytest.raises(ReadReverted) as raised:
        await _reader(_each(_error(3, "execution reverted", data))).call(TO, TOTAL_SUPPLY)
    assert str(raised.value) == f"totalSupply on {TO} reverted: {reason}"
    _untold(caplog, str(raised.value))


async def test_a_batch_refused_whole_tells_its_class_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    refused = _error(-32600, "batch too large")
    with pytest.raises(NodeUnavailable) as raised:
        await _reader(lambda calls: refused).call(TO, TOTAL_SUPPLY, block=7)
    assert raised.value.cause == "eth_call: _BatchRefused"
    _untold(caplog, str(raised.value), raised.value.cause)
