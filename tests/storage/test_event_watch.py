"""The shared event poller: every stream of a loop served by one reader, none of it on
the event loop, no event lost or repeated, and a slow stream bounded."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from yieldagent.domain.books.events import WalletEvent
from yieldagent.storage import event_watch
from yieldagent.storage.event_watch import Poller, follow
from yieldagent.storage.events import EventSignal

MOMENT = datetime(2026, 1, 1, tzinfo=UTC)


class Table:
    """Committed events, read as the store reads them, recording each reader's thread."""

    def __init__(self) -> None:
        self.events: list[WalletEvent] = []
        self.threads: set[int] = set()
        self.signal = EventSignal()

    def commit(self, wallet_id: int) -> WalletEvent:
        event = WalletEvent(
            len(self.events) + 1, MOMENT, "withdrawn", wallet_id, 3, 8453, "0xab", 1, {}
        )
        self.events.append(event)
        self.signal.notify()
        return event

    def after(self, wallet_id: int, cursor: int, limit: int) -> list[WalletEvent]:
        self.threads.add(threading.get_ident())
        return [e for e in self.events if e.wallet_id == wallet_id and e.id > cursor][:limit]

    def newer(self, cursor: int, limit: int) -> list[WalletEvent]:
        self.threads.add(threading.get_ident())
        return [e for e in self.events if e.id > cursor][:limit]

    def latest(self) -> int:
        self.threads.add(threading.get_ident())
        return self.events[-1].id if self.events else 0


async def _take(stream: object, count: int) -> list[int]:
    seen: list[int] = []
    async for event in stream:  # type: ignore[attr-defined]
        seen.append(event.id)
        if len(seen) == count:
            break
    return seen


def _poller(table: Table, closing: list[bool]) -> Poller:
    return Poller(table.newer, table.latest, table.signal, 30.0, lambda: closing[0])


async def test_many_streams_share_one_reader_off_the_event_loop() -> None:
    table, closing = Table(), [False]
    poller = _poller(table, closing)
    for wallet_id in range(50):
        table.commit(wallet_id)  # each stream has one stored event to replay
    streams = [
        asyncio.create_task(_take(follow(poller, table.after, wallet_id, 0, lambda: closing[0]), 3))
        for wallet_id in range(50)
    ]
    await asyncio.sleep(0.2)  # every stream replayed and waits for news
    reads_before = poller.reads
    for wallet_id in range(50):
        table.commit(wallet_id)
    for wallet_id in range(50):
        table.commit(wallet_id)
    got = await asyncio.wait_for(asyncio.gather(*streams), timeout=20)

    assert [ids[0] for ids in got] == list(range(1, 51))
    assert all(ids[1:] == [ids[0] + 50, ids[0] + 100] for ids in got)
    # 100 commits, 50 streams: the poller read a few times, never once per stream.
    assert poller.reads - reads_before < 50
    assert threading.get_ident() not in table.threads


async def test_a_stream_started_amid_commits_misses_and_repeats_nothing() -> None:
    table, closing = Table(), [False]
    poller = _poller(table, closing)
    for _ in range(5):
        table.commit(7)
    stream = asyncio.create_task(_take(follow(poller, table.after, 7, 2, lambda: closing[0]), 8))
    for _ in range(5):
        await asyncio.sleep(0)
        table.commit(7)
        table.commit(8)  # another wallet's: not this stream's
    got = await asyncio.wait_for(stream, timeout=20)
    assert got == [3, 4, 5, *range(6, 16, 2)]


async def test_a_slow_stream_reads_from_its_cursor_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(event_watch, "QUEUE_LIMIT", 3)
    table, closing = Table(), [False]
    poller = _poller(table, closing)
    table.commit(7)
    stream = follow(poller, table.after, 7, 0, lambda: closing[0])
    first = await asyncio.wait_for(anext(stream), timeout=10)
    for _ in range(20):  # handed over while nobody reads: the queue overflows
        table.commit(7)
        await asyncio.sleep(0)
    await asyncio.sleep(0.1)
    watcher = next(iter(poller._watchers[7]))
    assert len(watcher.queue) <= 3
    rest = await asyncio.wait_for(_ids(_until(stream, 21)), timeout=10)
    assert [first.id, *rest] == list(range(1, 22))


async def _ids(stream: object) -> list[int]:
    return [event.id async for event in stream]  # type: ignore[attr-defined]


async def _until(stream: object, last: int) -> object:
    async for event in stream:  # type: ignore[attr-defined]
        yield event
        if event.id == last:
            return


async def test_closing_ends_every_stream_and_the_poller() -> None:
    table, closing = Table(), [False]
    poller = _poller(table, closing)
    table.commit(7)
    stream = asyncio.create_task(_take(follow(poller, table.after, 7, 0, lambda: closing[0]), 5))
    await asyncio.sleep(0.1)
    closing[0] = True
    poller.wake_all()
    table.signal.notify()
    assert await asyncio.wait_for(stream, timeout=10) == [1]
    assert not poller._watchers


_STEP = st.one_of(
    st.tuples(st.just("commit"), st.integers(0, 2)),
    st.tuples(st.just("watch"), st.integers(0, 2)),
    st.tuples(st.just("pause"), st.integers(0, 3)),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(_STEP, max_size=30))
def test_every_stream_gets_each_of_its_events_once_in_order(steps: list[tuple[str, int]]) -> None:
    """Streams start (at a cursor of 0 or their wallet's latest event) amid commits and
    pauses: each gets exactly its wallet's events after its cursor, in order."""

    async def run() -> None:
        table, closing = Table(), [False]
        poller = _poller(table, closing)
        watched: list[tuple[int, int, list[int], asyncio.Task[None]]] = []

        async def collect(wallet_id: int, cursor: int, into: list[int]) -> None:
            async for event in follow(poller, table.after, wallet_id, cursor, lambda: closing[0]):
                into.append(event.id)

        for kind, value in steps:
            if kind == "commit":
                table.commit(value)
            elif kind == "watch":
                mine = [e.id for e in table.events if e.wallet_id == value]
                cursor = mine[-1] if mine and len(watched) % 2 else 0
                into: list[int] = []
                task = asyncio.create_task(collect(value, cursor, into))
                watched.append((value, cursor, into, task))
            for _ in range(value if kind == "pause" else 0):
                await asyncio.sleep(0)
        for wallet_id, cursor, into, _ in watched:
            expected = [e.id for e in table.events if e.wallet_id == wallet_id and e.id > cursor]
            for _ in range(2_000):  # each stream catches up within a few wake-ups
                if len(into) >= len(expected):
                    break
                await asyncio.sleep(0.001)
            assert into == expected
        closing[0] = True
        poller.wake_all()
        await asyncio.wait_for(asyncio.gather(*(task for *_, task in watched)), timeout=10)

    asyncio.run(run())
