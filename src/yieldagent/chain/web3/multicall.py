"""Many contract reads in one ``eth_call``: Multicall3's ``aggregate3`` at one block.

Multicall3 sits at the same address on every chain that has it (production chains, and
the devnet, which deploys it from its presigned transaction). ``aggregate3`` runs each
call with ``allowFailure`` set, so a target that reverts or returns nonsense fails only
its own read, never the batch. Calls go in chunks of ``batch`` (providers cap an
``eth_call``'s gas and answer size), and the chunks of one block travel together in one
JSON-RPC batch (``RpcReader``): a few hundred wallets' holdings cost one HTTP request.

A chain without Multicall3 is read with one ``eth_call`` per read, in the same JSON-RPC
batch, with the same answers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from yieldagent.chain.web3.abis import Fn
from yieldagent.chain.web3.reader import Read, ReadReverted, RpcReader, is_arithmetic_panic

log = logging.getLogger("yieldagent.chain")

MULTICALL3 = "0xcA11bde05977b3631167028862bE2a173976CA11"
"""Multicall3's canonical address."""
AGGREGATE3 = Fn("aggregate3((address,bool,bytes)[])", "(bool,bytes)[]")
DEFAULT_BATCH = 500


@dataclass(frozen=True, slots=True)
class Failed:
    """A read that did not answer: its target reverted (``panic`` when with an
    arithmetic panic, 0x11) or returned what its function cannot decode."""

    read: Read
    panic: bool = False


Answer = Any
"""A read's decoded value (the single value, or the tuple of several), or ``Failed``."""


@dataclass(slots=True)
class Multicall:
    """Reads many ``Read`` at one block through Multicall3 (where the chain has it)."""

    reader: RpcReader
    batch: int = DEFAULT_BATCH
    _present: bool | None = None
    _checking: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def available(self) -> bool:
        """Whether Multicall3 has code on this chain (asked once)."""
        if self._present is None:
            async with self._checking:
                if self._present is None:
                    self._present = bool(await self.reader.code(MULTICALL3))
        return self._present

    async def read_all(self, reads: Sequence[Read], block: int, heavy: int = 1) -> list[Answer]:
        """Each read's value at ``block``, or ``Failed``, in order. A read that panics with
        0x11 is read once more at the same block: a node may run a view against state a
        moment newer than the block's timestamp (see ``reader.is_arithmetic_panic``).
        ``heavy``: how many ordinary reads one of these weighs in gas (an aggregate then
        carries ``batch // heavy`` of them)."""
        if not reads:
            return []
        size = max(self.batch // max(heavy, 1), 1)
        answers = await self._once(reads, block, size)
        again = [i for i, a in enumerate(answers) if isinstance(a, Failed) and a.panic]
        if again:
            retried = await self._once([reads[i] for i in again], block, size)
            for i, answer in zip(again, retried, strict=True):
                answers[i] = answer
        failed = sum(1 for a in answers if isinstance(a, Failed))
        if failed:
            log.warning("contract reads failed", extra={"failed": failed, "block": block})
        return answers

    async def _once(self, reads: Sequence[Read], block: int, size: int) -> list[Answer]:
        if not await self.available():
            return list(await asyncio.gather(*(self._single(r, block) for r in reads)))
        chunks = [reads[i : i + size] for i in range(0, len(reads), size)]
        answered = await asyncio.gather(*(self._aggregate(chunk, block) for chunk in chunks))
        return [answer for chunk in answered for answer in chunk]

    async def _aggregate(self, reads: Sequence[Read], block: int) -> list[Answer]:
        calls = [(r.to, True, r.fn.encode(*r.args)) for r in reads]
        results = await self.reader.call(MULTICALL3, AGGREGATE3, calls, block=block)
        return [
            _decoded(r, data) if ok else Failed(r, is_arithmetic_panic(data))
            for r, (ok, data) in zip(reads, results, strict=True)
        ]

    async def _single(self, r: Read, block: int) -> Answer:
        try:
            [value] = await self.reader.call_many([r], block)
        except ReadReverted:  # call_many has read a panicking view once more already
            return Failed(r)
        return value


def _decoded(r: Read, data: bytes) -> Answer:
    try:
        values = r.fn.decode(data)
    except Exception:  # no code at the target, or a function that is not the one named
        return Failed(r)
    return values[0] if len(values) == 1 else values
