"""What was read at the newest block, kept for whoever asks for it at that block.

The market's quotes and the guards' readings are the same for every caller at one block:
the agent's batches, the activations and the public listing share one read per block,
and callers asking at once share the read in flight. A read that fails is not kept, so
the next caller asks the node again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Generic, TypeVar

V = TypeVar("V")


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Marks a failed read's error as seen: every caller may have gone meanwhile."""
    if not future.cancelled():
        future.exception()


class PerBlock(Generic[V]):
    """Values by key, read at the newest block asked for (see the module's docstring)."""

    def __init__(self) -> None:
        self._block = -1
        self._reads: dict[Hashable, asyncio.Future[V]] = {}

    async def get(self, block: int, key: Hashable, read: Callable[[], Awaitable[V]]) -> V:
        """The value of ``key`` at ``block``: ``read()`` once for that block. A block
        older than the newest asked for is read, and not kept."""
        if block < self._block:
            return await read()
        if block > self._block:
            self._block, self._reads = block, {}
        future = self._reads.get(key)
        if future is None:
            future = asyncio.ensure_future(read())
            future.add_done_callback(_retrieved)
            self._reads[key] = future
        try:
            return await asyncio.shield(future)
        except Exception:
            if self._reads.get(key) is future:
                del self._reads[key]
            raise

    def clear(self) -> None:
        """Forgets every value (a reorganisation replaced the blocks they were read at)."""
        self._block, self._reads = -1, {}
