"""Stream leases: the cap per partner, and a stream cut short when its lease ends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from yieldagent.domain.errors import RateLimited
from yieldagent.domain.ports.credentials import Partner
from yieldagent.servicers.streams import OpenStreams, until_ended

ACME = Partner(1, "acme", True, frozenset({"wallets"}))
GLOBEX = Partner(2, "globex", True, frozenset({"wallets"}))


class NoPartners:
    def credentials(self, name: str) -> None:
        return None


async def test_a_partner_opens_at_most_its_cap_and_a_closed_stream_frees_a_place() -> None:
    streams = OpenStreams(NoPartners(), per_partner=2, check_seconds=60)
    first = streams.open(ACME, "digest", "wallets")
    streams.open(ACME, "digest", "wallets")
    with pytest.raises(RateLimited, match="at most 2 per partner"):
        streams.open(ACME, "digest", "wallets")
    streams.open(GLOBEX, "digest", "wallets")
    streams.close(first)
    streams.close(first)  # twice: counted once
    assert streams.count(ACME.id) == 1
    streams.open(ACME, "digest", "wallets")
    assert (streams.count(ACME.id), streams.count(GLOBEX.id)) == (2, 1)


async def test_a_lease_whose_partner_is_gone_ends_at_the_next_check() -> None:
    streams = OpenStreams(NoPartners(), per_partner=2, check_seconds=0.01)
    lease = streams.open(ACME, "digest", "wallets")
    await asyncio.wait_for(lease.ended.wait(), timeout=10)
    assert lease.refusal is not None and lease.refusal.detail == "Invalid or missing API key"


async def test_until_ended_stops_a_waiting_stream_and_closes_it() -> None:
    closed = asyncio.Event()

    async def forever() -> AsyncIterator[int]:
        try:
            yield 1
            await asyncio.Event().wait()
            yield 2
        finally:
            closed.set()

    ended = asyncio.Event()
    seen = []
    async for item in until_ended(forever(), ended):
        seen.append(item)
        ended.set()
    assert seen == [1] and closed.is_set()


async def test_until_ended_closes_the_stream_when_its_consumer_is_cancelled() -> None:
    closed = asyncio.Event()
    waiting = asyncio.Event()

    async def forever() -> AsyncIterator[int]:
        try:
            waiting.set()
            await asyncio.Event().wait()
            yield 1
        finally:
            closed.set()

    async def consume() -> None:
        async for _ in until_ended(forever(), asyncio.Event()):
            pass

    task = asyncio.create_task(consume())
    await asyncio.wait_for(waiting.wait(), timeout=10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert closed.is_set()
