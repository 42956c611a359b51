"""Following wallet events: one shared poller per event loop serves every WatchWallet
stream of the process.

A stream registers with the poller, then reads the events after its cursor itself (in a
worker thread), then takes new ones as the poller hands them over. The poller wakes when
this process commits events (``events.signal_for``) or every ``poll_seconds`` (for other
processes' commits), reads what was committed after the last id it saw with one query,
in a worker thread, and hands each event to the streams of its wallet. No query runs on
the event loop, and a commit costs one query however many streams are open.

**No gap, no repeat.** Ids follow commit order (see ``storage.events``). A stream
registers before its own read, and the poller's starting point is read before that: an
event the poller has passed was committed before the stream's read, so the read has it;
any later one reaches the stream from the poller. A stream skips what it was handed at
or below its cursor, so an event that comes both ways is sent once.

**Bounded.** A stream whose client reads slowly keeps at most ``QUEUE_LIMIT`` events
waiting: past that it drops them and reads from its cursor again.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from yieldagent.domain.books.events import WalletEvent

if TYPE_CHECKING:  # events.py builds its pollers from this module
    from yieldagent.storage.events import EventSignal

QUEUE_LIMIT = 1_000
"""Events a stream may have waiting before it reads from its cursor again instead."""
BATCH = 500
"""Most events one read returns (the stream's own, or the poller's)."""

ReadAfter = Callable[[int, int, int], list[WalletEvent]]
"""(wallet id, cursor, limit): a wallet's events after the cursor, oldest first."""
ReadNew = Callable[[int, int], list[WalletEvent]]
"""(cursor, limit): every wallet's events after the cursor, oldest first."""


class Watcher:
    """One stream's place at the poller: the events handed to it, not yet sent."""

    def __init__(self, wallet_id: int) -> None:
        self.wallet_id = wallet_id
        self.queue: deque[WalletEvent] = deque()
        self.behind = False
        """Whether events were dropped: the stream must read from its cursor again."""
        self._woken = asyncio.Event()

    def offer(self, event: WalletEvent) -> None:
        """Hands over ``event`` (or notes that the stream fell behind) and wakes it."""
        if not self.behind:
            if len(self.queue) >= QUEUE_LIMIT:
                self.queue.clear()
                self.behind = True
            else:
                self.queue.append(event)
        self._woken.set()

    def wake(self) -> None:
        """Wakes the stream with nothing new (it is closing)."""
        self._woken.set()

    def catch_up(self) -> None:
        """Forgets what was handed over: the stream reads from its cursor instead."""
        self.queue.clear()
        self.behind = False

    async def wait(self) -> None:
        """Returns once something was handed over, or the stream was woken, since the
        last wait."""
        await self._woken.wait()
        self._woken.clear()


class Poller:
    """Reads new events for every stream of one event loop, and hands them over."""

    def __init__(
        self,
        read_new: ReadNew,
        latest_id: Callable[[], int],
        signal: EventSignal,
        poll_seconds: float,
        closing: Callable[[], bool],
    ) -> None:
        self._read_new = read_new
        self._latest_id = latest_id
        self._signal = signal
        self._poll_seconds = poll_seconds
        self._closing = closing
        self._watchers: dict[int, set[Watcher]] = {}
        self._task: asyncio.Task[None] | None = None
        self._last_id = 0
        self.started = asyncio.Event()
        """Set once the poller knows where it starts; a stream reads only after that."""
        self.reads = 0
        """Queries made (to tell that one serves every stream)."""

    def add(self, wallet_id: int) -> Watcher:
        """Registers a stream of ``wallet_id``; starts the poller if it was idle."""
        watcher = Watcher(wallet_id)
        self._watchers.setdefault(wallet_id, set()).add(watcher)
        if self._task is None or self._task.done():
            self.started.clear()
            self._task = asyncio.get_running_loop().create_task(self._run())
        return watcher

    def remove(self, watcher: Watcher) -> None:
        """Forgets a stream; the poller stops at its next wake-up once none is left."""
        watchers = self._watchers.get(watcher.wallet_id)
        if watchers is not None:
            watchers.discard(watcher)
            if not watchers:
                del self._watchers[watcher.wallet_id]

    def wake_all(self) -> None:
        """Wakes every stream and the poller (the store is closing)."""
        for watchers in self._watchers.values():
            for watcher in watchers:
                watcher.wake()

    async def _run(self) -> None:
        with self._signal.subscribe() as wait:
            self._last_id = await asyncio.to_thread(self._latest_id)
            self.started.set()
            while self._watchers and not self._closing():
                found = await asyncio.to_thread(self._read_new, self._last_id, BATCH)
                self.reads += 1
                for event in found:
                    self._last_id = event.id
                    for watcher in self._watchers.get(event.wallet_id, ()):
                        watcher.offer(event)
                if len(found) < BATCH:
                    await wait(self._poll_seconds)


async def follow(
    poller: Poller,
    read_after: ReadAfter,
    wallet_id: int,
    cursor: int,
    closing: Callable[[], bool],
) -> AsyncIterator[WalletEvent]:
    """The wallet's events after ``cursor``: first those stored, then new ones as the
    poller hands them over (or, after falling behind, as read again), until ``closing``."""
    watcher = poller.add(wallet_id)
    try:
        await poller.started.wait()
        behind = True
        while not closing():
            if behind or watcher.behind:
                watcher.catch_up()
                while not closing():
                    found = await asyncio.to_thread(read_after, wallet_id, cursor, BATCH)
                    for event in found:
                        cursor = event.id
                        yield event
                    if len(found) < BATCH:
                        break
                behind = False
                continue
            while watcher.queue and not watcher.behind:
                event = watcher.queue.popleft()
                if event.id > cursor:
                    cursor = event.id
                    yield event
            if not watcher.queue and not watcher.behind and not closing():
                await watcher.wait()
    finally:
        poller.remove(watcher)
