"""The retry policy every node call goes through: which failures are asked again, after how
long (a Retry-After honoured and capped, else a doubling backoff with a bounded jitter), how
many times, and what the log line of a retry tells."""

from __future__ import annotations

import logging
from typing import Any, cast

import aiohttp
import pytest
from hypothesis import given
from hypothesis import strategies as st
from multidict import CIMultiDict, CIMultiDictProxy
from web3.exceptions import (
    BadResponseFormat,
    ContractLogicError,
    TransactionNotFound,
    Web3RPCError,
)
from web3.types import RPCResponse
from yarl import URL

from yieldagent.chain.web3.retries import (
    FIRST_DELAY,
    MAX_RETRY_AFTER,
    RETRIES,
    RetryPolicy,
    Unanswered,
    busy_answer,
)

NODE = URL("https://node.example/v2/secret-api-key")
NO_JITTER = RetryPolicy(jitter=lambda: 0.0)


def _http_error(status: int, retry_after: str | None = None) -> aiohttp.ClientResponseError:
    answer = CIMultiDict[str]()
    if retry_after is not None:
        answer["Retry-After"] = retry_after
    info = aiohttp.RequestInfo(NODE, "POST", CIMultiDictProxy(CIMultiDict[str]()), NODE)
    return aiohttp.ClientResponseError(
        info, (), status=status, message="no", headers=CIMultiDictProxy(answer)
    )


def _answered(code: int | None, message: str) -> Web3RPCError:
    error: dict[str, Any] = {"message": message}
    if code is not None:
        error["code"] = code
    return Web3RPCError(repr(error), rpc_response=cast(RPCResponse, {"error": error}))


@pytest.mark.parametrize(
    ("status", "hint", "wait"),
    [
        (429, "3", 3.0),
        (429, "0.5", 0.5),
        (429, "600", MAX_RETRY_AFTER),
        (429, "-5", 0.0),
        (503, "4", 4.0),
        (429, "Wed, 21 Oct 2015 07:28:00 GMT", FIRST_DELAY),  # a date: the usual backoff
        (429, "nan", FIRST_DELAY),
        (429, None, FIRST_DELAY),
        (500, "7", FIRST_DELAY),  # only a 429's or a 503's hint is taken
        (502, None, FIRST_DELAY),
    ],
)
def test_an_http_failure_waits_its_retry_after_capped_or_the_backoff(
    status: int, hint: str | None, wait: float
) -> None:
    assert NO_JITTER.wait_after(_http_error(status, hint), 0) == wait


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413])
def test_a_refusal_of_the_request_is_not_asked_again(status: int) -> None:
    assert NO_JITTER.wait_after(_http_error(status, "1"), 0) is None


@pytest.mark.parametrize(
    "failure",
    [
        aiohttp.ServerDisconnectedError(),
        TimeoutError(),
        ConnectionResetError(),
        BadResponseFormat("not JSON"),
        Unanswered("one error for a batch"),
        _answered(-32603, "internal error"),
        _answered(-32005, "limit exceeded"),
        _answered(-32000, "header not found"),
        _answered(None, "no code at all"),
    ],
    ids=["dropped", "timeout", "reset", "garbled", "unanswered", "-32603", "-32005", "-32000", "?"],
)
def test_a_momentary_failure_is_asked_again_after_the_backoff(failure: Exception) -> None:
    assert NO_JITTER.wait_after(failure, 2) == 4 * FIRST_DELAY


@pytest.mark.parametrize(
    "failure",
    [
        _answered(3, "execution reverted"),
        _answered(-32000, "execution reverted: paused"),
        _answered(-32603, "EVM error OutOfGas"),  # anvil's code for what the EVM concluded
        _answered(-32000, "insufficient funds for gas * price + value"),
        _answered(-32601, "the method does not exist"),
        _answered(-32602, "invalid params"),
        TransactionNotFound("not mined yet"),
        ContractLogicError("execution reverted"),
        ValueError("a bug of ours"),
    ],
    ids=[
        "revert",
        "revert-words",
        "out-of-gas",
        "funds",
        "method",
        "params",
        "not-found",
        "logic",
        "bug",
    ],
)
def test_an_answer_asking_again_cannot_change_is_final(failure: Exception) -> None:
    assert NO_JITTER.wait_after(failure, 0) is None


@pytest.mark.parametrize(
    ("code", "message", "busy"),
    [
        (-32603, "internal error", True),
        (-32005, "daily request count exceeded", True),
        (429, "Your app has exceeded its compute units per second", True),
        (-32000, "rate limit reached, try later", True),
        (-32003, "nonce too low", False),
        (-32003, "Insufficient funds for gas * price + value", False),
        (-32000, "replacement transaction underpriced", False),
        (-32603, "EVM error OutOfGas", False),
    ],
)
def test_a_broadcast_is_asked_again_only_for_a_node_in_trouble(
    code: int, message: str, busy: bool
) -> None:
    assert busy_answer(code, message) is busy


@given(
    attempt=st.integers(min_value=0, max_value=12),
    draw=st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
)
def test_the_backoff_doubles_with_at_most_a_quarter_more_at_random(
    attempt: int, draw: float
) -> None:
    policy = RetryPolicy(jitter=lambda: draw)
    base = FIRST_DELAY * 2**attempt
    assert base <= policy.backoff(attempt) <= base * 1.25  # (< but for rounding)
    assert policy.backoff(attempt + 1) == 2 * policy.backoff(attempt)


class _Node:
    """Fails as ``failures`` say, then answers 42; counts what it was asked."""

    def __init__(self, *failures: Exception) -> None:
        self.failures = list(failures)
        self.asked = 0

    async def __call__(self) -> int:
        self.asked += 1
        if self.failures:
            raise self.failures.pop(0)
        return 42


def _noting() -> tuple[RetryPolicy, list[float]]:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    return RetryPolicy(sleep=sleep, jitter=lambda: 0.0), waits


async def test_a_read_is_asked_again_until_it_answers(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="yieldagent")
    policy, waits = _noting()
    node = _Node(_http_error(429, "3"), aiohttp.ServerDisconnectedError())
    assert await policy.read("eth_feeHistory", node) == 42
    assert node.asked == 3 and waits == [3.0, 2 * FIRST_DELAY]
    retried = [r for r in caplog.records if r.getMessage() == "node call retried"]
    assert [(r.call, r.cause, r.wait_seconds) for r in retried] == [  # type: ignore[attr-defined]
        ("eth_feeHistory", "ClientResponseError HTTP 429", 3.0),
        ("eth_feeHistory", "ServerDisconnectedError", 0.5),
    ]
    assert "secret-api-key" not in caplog.text


async def test_a_read_that_keeps_failing_raises_its_last_failure_after_the_retries() -> None:
    policy, waits = _noting()
    node = _Node(*[_http_error(503)] * (RETRIES + 3))
    with pytest.raises(aiohttp.ClientResponseError):
        await policy.read("eth_getBlockByNumber", node)
    assert node.asked == RETRIES + 1
    assert waits == [FIRST_DELAY * 2**n for n in range(RETRIES)]


async def test_a_final_answer_is_raised_at_once() -> None:
    policy, waits = _noting()
    node = _Node(TransactionNotFound("not mined yet"))
    with pytest.raises(TransactionNotFound):
        await policy.read("eth_getTransactionReceipt", node)
    assert node.asked == 1 and waits == []
