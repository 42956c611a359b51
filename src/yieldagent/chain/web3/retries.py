"""When a failed call to the node is asked again, and after how long: one policy for every
call the web3 adapter makes (the reader's batches, the sender's reads and broadcasts, the
adapter's estimates and fee readings).

A call failed for a moment when the node answered HTTP 429 or a 5xx, did not answer in
time, dropped the connection, gave something that is no answer, or gave a JSON-RPC error
that is neither a revert nor a refusal of the request itself (a malformed request, an
unknown method, bad parameters). Such a call is asked again, up to ``RETRIES`` times:
after the node's ``Retry-After`` when it gives one (at most ``MAX_RETRY_AFTER`` seconds),
else after a delay that doubles from ``FIRST_DELAY``, plus up to a quarter more at random
so that replicas do not ask in step. A read asked again changes nothing on chain; what a
broadcast's answers mean after a failed attempt is the sender's (``transactions.py``).

Each retry logs one ``node call retried`` line with the call, the error as
``node_answers.redacted`` tells it (class, HTTP status, JSON-RPC code) and the wait: never
the node's words nor its URL.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import aiohttp
from web3.exceptions import BadResponseFormat, TransactionNotFound, Web3RPCError

from yieldagent.chain.web3.node_answers import TRANSPORT_ERRORS, node_message, redacted

log = logging.getLogger("yieldagent.chain")

T = TypeVar("T")

RETRIES = 4
"""How many times a failed call (or the failed calls of a batch) is asked again."""
FIRST_DELAY = 0.25
"""The first wait before asking again, in seconds; each next one doubles (plus up to a
quarter more at random)."""
MAX_RETRY_AFTER = 10.0
"""The longest ``Retry-After`` honoured, in seconds: a longer one is waited this long."""
NOT_TRANSIENT_CODES = frozenset({-32600, -32601, -32602})
"""JSON-RPC errors asking again cannot cure: a malformed request, an unknown method, bad
parameters."""
BUSY_CODES = frozenset({-32603, -32005, -32002, 429})
"""JSON-RPC errors of a node in trouble rather than a verdict on the request: an internal
error, a limit exceeded, a resource unavailable, a provider's rate limit."""
_BUSY_PHRASES = ("rate limit", "too many requests")
_VERDICTS = (
    "out of gas",
    "outofgas",
    "evm error",
    "insufficient funds",
    "gas required exceeds",
    "intrinsic gas",
    "invalid opcode",
)
"""What the EVM concluded of the call, whatever the code the node files it under (anvil
answers an out-of-gas call with -32603): the same call gets the same answer."""


class Unanswered(Exception):
    """The node's reply answers nothing (a batch refused whole, the wrong number of answers):
    asked again as a dropped connection would be."""


def _verdict(said: str) -> bool:
    return "revert" in said or any(phrase in said for phrase in _VERDICTS)


def transient_answer(code: int | None, message: str) -> bool:
    """Whether a JSON-RPC error answer to a read may be cured by asking again: it is no
    revert (code 3, or the node saying so), no verdict of the EVM (out of gas, funds) and
    no refusal of the request itself."""
    return code != 3 and code not in NOT_TRANSIENT_CODES and not _verdict(message.lower())


def busy_answer(code: int | None, message: str) -> bool:
    """Whether a JSON-RPC error answer says the node failed or is over its limits, not that
    it refuses the request: what a broadcast's error answers are asked again for."""
    said = message.lower()
    if _verdict(said):
        return False
    return code in BUSY_CODES or any(phrase in said for phrase in _BUSY_PHRASES)


def rpc_code(error: Web3RPCError) -> int | None:
    """The JSON-RPC code of web3's error answer, if the node gave one."""
    answer = error.rpc_response.get("error") if error.rpc_response else None
    code = answer.get("code") if isinstance(answer, dict) else None
    return code if isinstance(code, int) else None


def only_the_policy_retries(w3: object) -> None:
    """Turns off the web3 provider's own retries, if it has them: they ignore
    ``Retry-After``, and a broadcast web3 sent again on its own would hide from the sender
    an attempt that may have arrived (its repeat's "nonce too low" would then read as
    another transaction's)."""
    provider = getattr(w3, "provider", None)
    if getattr(provider, "exception_retry_configuration", None) is not None:
        provider.exception_retry_configuration = None  # type: ignore[union-attr]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Which failures are asked again, after how long, how many times (module docstring);
    ``sleep`` waits (tests pass one that notes the waits)."""

    retries: int = RETRIES
    first_delay: float = FIRST_DELAY
    max_retry_after: float = MAX_RETRY_AFTER
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    jitter: Callable[[], float] = random.random
    """A draw in [0, 1): a quarter of it is added to each backoff."""

    def __post_init__(self) -> None:
        if self.retries < 0 or self.first_delay < 0 or self.max_retry_after < 0:
            raise ValueError("retries, the first delay and the longest Retry-After are >= 0")

    def backoff(self, attempt: int) -> float:
        """The wait before asking again the ``attempt``-th time (from 0), without a hint."""
        delay: float = self.first_delay * 2**attempt
        return delay * (1 + self.jitter() / 4)

    def wait_after(self, error: BaseException, attempt: int) -> float | None:
        """How long to wait before asking again after ``error`` (the ``attempt``-th failure,
        from 0), or None when asking again cannot help: a refusal of the request (HTTP 4xx
        other than 429, a bad request), a revert, a transaction the node does not know."""
        if isinstance(error, aiohttp.ClientResponseError):
            if error.status != 429 and error.status < 500:
                return None
            hint = self._retry_after(error)
            return self.backoff(attempt) if hint is None else hint
        if isinstance(error, (*TRANSPORT_ERRORS, BadResponseFormat, Unanswered)):
            return self.backoff(attempt)
        if (
            isinstance(error, Web3RPCError)
            and not isinstance(error, TransactionNotFound)
            and transient_answer(rpc_code(error), node_message(error))
        ):
            return self.backoff(attempt)
        return None

    def _retry_after(self, error: aiohttp.ClientResponseError) -> float | None:
        """The seconds a 429's or a 503's ``Retry-After`` asks for, at most
        ``max_retry_after``; None without a number (an HTTP date, or nonsense)."""
        headers = error.headers
        hint = headers.get("Retry-After") if headers is not None else None
        if hint is None or error.status not in (429, 503):
            return None
        try:
            seconds = float(hint)
        except ValueError:
            return None
        if seconds != seconds:  # NaN: nonsense too
            return None
        return min(max(seconds, 0.0), self.max_retry_after)

    async def pause(self, call: str, cause: str, wait: float) -> None:
        """Logs the retry of ``call`` (``cause``: no words of the node) and waits."""
        log.info(
            "node call retried",
            extra={"call": call, "cause": cause, "wait_seconds": round(wait, 3)},
        )
        await self.sleep(wait)

    async def read(self, call: str, ask: Callable[[], Awaitable[T]]) -> T:
        """``ask()``'s answer, asked again while it fails for a moment; the last failure,
        or one asking again cannot help, is raised as it is."""
        for attempt in range(self.retries + 1):
            try:
                return await ask()
            except Exception as error:
                wait = self.wait_after(error, attempt)
                if wait is None or attempt == self.retries:
                    raise
                await self.pause(call, redacted(error), wait)
        raise AssertionError("not reached: the last attempt returns or raises")
