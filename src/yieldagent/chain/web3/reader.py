"""Contract reads at one block, batched: many ``eth_call`` in one JSON-RPC request.

Every read names its block, so that what a quote combines comes from one state. Reads
made together (within a few turns of the event loop, e.g. by ``asyncio.gather`` of every
protocol's quote) travel in one JSON-RPC batch: one HTTP request per block for all of
them, on any node, with no Multicall contract needed. ``ReadStats`` counts both, so the
cost of a quote can be measured.

A node that fails a batch for a moment (HTTP 429, a 5xx, a timeout, a dropped
connection, a JSON-RPC error that is not a revert) is asked again, up to ``RETRIES``
times: after its ``Retry-After`` when it gives one (at most ``MAX_RETRY_AFTER`` seconds),
else after a delay that doubles from ``FIRST_DELAY``. Only reads go through the reader,
so asking again changes nothing on chain. What still fails is a ``NodeUnavailable``.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from eth_utils.address import to_checksum_address
from web3 import AsyncWeb3

from yieldagent.chain.web3.abis import Fn
from yieldagent.chain.web3.node_answers import (
    TRANSPORT_ERRORS,
    node_unavailable,
    redacted,
    scrubbed,
)
from yieldagent.chain.web3.reverts import PANIC_SELECTOR, revert_data
from yieldagent.domain.errors import ChainUnavailable
from yieldagent.domain.ports.chain import Block

BlockId = int | str
"""A block number, or a tag such as ``"latest"``."""

_COALESCE_TURNS = 4  # event-loop turns a batch waits for more reads before it is sent
RETRIES = 4
"""How many times a failed batch (or the failed calls of one) is asked again."""
FIRST_DELAY = 0.25
"""The first wait before asking again, in seconds; each next one doubles (plus up to a
quarter more at random, so that replicas do not ask in step)."""
MAX_RETRY_AFTER = 10.0
"""The longest ``Retry-After`` honoured, in seconds: a longer one is waited this long."""
_NOT_TRANSIENT_CODES = frozenset({-32600, -32601, -32602})
"""JSON-RPC errors asking again cannot cure: a malformed request, an unknown method, bad
parameters."""

log = logging.getLogger("yieldagent.chain")
ARITHMETIC_PANIC = PANIC_SELECTOR + (0x11).to_bytes(32, "big")
"""``Panic(0x11)``: what Aave's and Comet's interest math revert with when a view runs
with a block timestamp earlier than the state's last update."""


def is_arithmetic_panic(data: bytes | str | None) -> bool:
    """Whether a revert's return data is ``Panic(0x11)`` (arithmetic under- or overflow).

    A view read at a mined block runs on that block's state and timestamp, and cannot
    panic so; a node that mines meanwhile may run it on state a moment newer than the
    block it names (anvil does, while it mines the next block). The same read at the same
    block a moment later answers.
    """
    raw = revert_data(data) if isinstance(data, str) else data
    return raw == ARITHMETIC_PANIC


class ReadReverted(ChainUnavailable):
    """An ``eth_call`` reverted (the contract refused the read): a contract error, not an
    outage. Callers that expect it catch it; elsewhere the chain could not answer (503)."""

    def __init__(self, to: str, fn: Fn, message: str, data: str | None) -> None:
        super().__init__(f"{fn.name} on {to} reverted: {scrubbed(message)}")
        self.data = data
        self.said = scrubbed(message)
        """The node's words for the revert, without any URL."""

    @property
    def panic(self) -> bool:
        """Whether the read reverted with an arithmetic panic (``is_arithmetic_panic``)."""
        return is_arithmetic_panic(self.data)


@dataclass(frozen=True, slots=True)
class Read:
    """One contract read: ``fn(*args)`` on ``to``."""

    to: str
    fn: Fn
    args: tuple[Any, ...] = ()


def read(to: str, fn: Fn, *args: Any) -> Read:
    """A read of ``fn(*args)`` on ``to``."""
    return Read(to, fn, args)


@dataclass(slots=True)
class ReadStats:
    """What the reader sent: JSON-RPC round trips, and the ``eth_call`` they carried."""

    requests: int = 0
    calls: int = 0
    retries: int = 0
    """Batches, or parts of one, asked again after the node failed them."""


@dataclass(slots=True)
class _Pending:
    method: str
    params: list[Any]
    future: asyncio.Future[Any]


def _block_param(block: BlockId) -> str:
    return hex(block) if isinstance(block, int) else block


@dataclass(slots=True)
class RpcReader:
    """Batched JSON-RPC reads through one ``AsyncWeb3``'s provider."""

    w3: AsyncWeb3[Any]
    stats: ReadStats = field(default_factory=ReadStats)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    _pending: list[_Pending] = field(default_factory=list)
    _flushing: asyncio.Task[None] | None = None

    async def block(self, block: BlockId = "latest") -> Block:
        """A block's number and timestamp."""
        raw = await self.request("eth_getBlockByNumber", [_block_param(block), False])
        if raw is None:
            raise ChainUnavailable(f"block {block} is not known to the node")
        return Block(int(raw["number"], 16), int(raw["timestamp"], 16))

    async def call(self, to: str, fn: Fn, *args: Any, block: BlockId = "latest") -> Any:
        """``fn(*args)`` on ``to`` at ``block``: its single return value."""
        [result] = await self.call_many([Read(to, fn, args)], block)
        return result

    async def call_many(self, reads: Sequence[Read], block: BlockId) -> list[Any]:
        """Each read's return value (the single value, or the tuple of several) at
        ``block``, in order; raises ``ReadReverted`` if one reverts. A read that panics
        with 0x11 is sent once more at the same block (``is_arithmetic_panic``)."""
        raws = await asyncio.gather(*(self._eth_call(r, block) for r in reads))
        results = []
        for r, raw in zip(reads, raws, strict=True):
            values = r.fn.decode(bytes.fromhex(raw.removeprefix("0x")))
            results.append(values[0] if len(values) == 1 else values)
        return results

    async def _eth_call(self, r: Read, block: BlockId) -> Any:
        params = [{"to": r.to, "data": "0x" + r.fn.encode(*r.args).hex()}, _block_param(block)]
        try:
            return await self.request("eth_call", params, context=r)
        except ReadReverted as reverted:
            if not reverted.panic:
                raise
        return await self.request("eth_call", params, context=r)

    async def code(self, address: str) -> bytes:
        """The contract code at ``address`` now (empty for an account without code)."""
        raw = await self.request("eth_getCode", [to_checksum_address(address), "latest"])
        return bytes.fromhex(str(raw).removeprefix("0x"))

    async def request(self, method: str, params: list[Any], context: Read | None = None) -> Any:
        """One JSON-RPC call, sent in the next batch; its ``result``."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.append(_Pending(method, params, future))
        if self._flushing is None:
            self._flushing = asyncio.create_task(self._flush_soon())
        try:
            return await future
        except _RpcError as error:
            if context is not None and error.reverted:
                raise ReadReverted(context.to, context.fn, error.message, error.data) from None
            raise node_unavailable(method, error.message) from None

    async def _flush_soon(self) -> None:
        for _ in range(_COALESCE_TURNS):
            await asyncio.sleep(0)
        batch, self._pending, self._flushing = self._pending, [], None
        for attempt in range(RETRIES + 1):
            last = attempt == RETRIES
            try:
                responses = await self._send(batch)
            except Exception as error:  # transport: every read of the batch fails alike
                wait = _wait_after(error, attempt)
                if last or wait is None:
                    methods = sorted({item.method for item in batch})
                    failure = node_unavailable(", ".join(methods), error)
                    for item in batch:
                        if not item.future.done():
                            item.future.set_exception(failure)
                    return
                await self._again(redacted(error), wait)
                continue
            failed = []
            for item, response in zip(batch, responses, strict=True):
                if item.future.done():
                    continue
                if "error" not in response:
                    item.future.set_result(response.get("result"))
                    continue
                answered = _RpcError.of(response["error"])
                if last or not answered.transient:
                    item.future.set_exception(answered)
                else:
                    failed.append(item)
            if not failed:
                return
            batch = failed
            await self._again(f"JSON-RPC error to {len(failed)} calls", _backoff(attempt))

    async def _again(self, cause: str, wait: float) -> None:
        """Waits ``wait`` seconds before asking the node again."""
        self.stats.retries += 1
        log.info("node call retried", extra={"cause": cause, "wait_seconds": round(wait, 3)})
        await self.sleep(wait)

    async def _send(self, batch: list[_Pending]) -> list[dict[str, Any]]:
        provider: Any = self.w3.provider
        self.stats.calls += sum(1 for item in batch if item.method == "eth_call")
        # A single read goes as a batch of one too: web3 asks a failed single request
        # again on its own terms (no Retry-After), and the reader's terms are these.
        if not hasattr(provider, "make_batch_request"):
            self.stats.requests += len(batch)
            return list(
                await asyncio.gather(
                    *(provider.make_request(item.method, item.params) for item in batch)
                )
            )
        self.stats.requests += 1
        responses = await provider.make_batch_request([(i.method, i.params) for i in batch])
        if not isinstance(responses, list):  # the node refused the whole batch
            raise _BatchRefused(str(responses.get("error", responses)))
        if len(responses) != len(batch):
            raise _BatchRefused(f"{len(responses)} answers to a batch of {len(batch)}")
        return [dict(r) for r in responses]


def _backoff(attempt: int) -> float:
    """The wait before asking again the ``attempt``-th time (from 0), without a hint."""
    delay: float = FIRST_DELAY * 2**attempt
    return delay * (1 + random.random() / 4)


def _wait_after(error: BaseException, attempt: int) -> float | None:
    """How long to wait before asking again after ``error``, or None when asking again
    cannot help (a refusal of the request itself: HTTP 4xx other than 429)."""
    if isinstance(error, aiohttp.ClientResponseError):
        if error.status != 429 and error.status < 500:
            return None
        headers = error.headers
        hint = headers.get("Retry-After") if headers is not None and error.status == 429 else None
        try:
            seconds = float(hint) if hint is not None else None
        except ValueError:  # an HTTP date, or nonsense: the usual backoff
            seconds = None
        if seconds is not None:
            return min(max(seconds, 0.0), MAX_RETRY_AFTER)
        return _backoff(attempt)
    if isinstance(error, (*TRANSPORT_ERRORS, _BatchRefused)):
        return _backoff(attempt)
    return None


class _BatchRefused(Exception):
    """The node answered a batch with one error, or with the wrong number of answers."""


class _RpcError(Exception):
    """A JSON-RPC error answer to one request."""

    def __init__(
        self, message: str, data: str | None, reverted: bool, code: int | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.data = data
        self.reverted = reverted
        self.code = code

    @property
    def transient(self) -> bool:
        """Whether asking again may answer: not a revert, nor a refusal of the request."""
        return not self.reverted and self.code not in _NOT_TRANSIENT_CODES

    @classmethod
    def of(cls, error: Any) -> _RpcError:
        if not isinstance(error, dict):
            return cls(str(error), None, False)
        message = str(error.get("message", error))
        data = error.get("data")
        if isinstance(data, dict):  # some nodes nest it
            data = data.get("data")
        code = error.get("code")
        reverted = "revert" in message.lower() or code == 3
        return cls(
            message,
            data if isinstance(data, str) else None,
            reverted,
            code if isinstance(code, int) else None,
        )
