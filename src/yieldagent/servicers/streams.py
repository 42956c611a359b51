"""Open server streams (WatchWallet): a cap per partner, and each stream's credentials
checked again every ``check_seconds``.

A stream is authenticated when it opens, like any call; it may then stay open for
days. ``OpenStreams`` keeps a lease per open stream and, while any is open, looks up
the credentials of their partners (one lookup per partner, in a worker thread, never on
the event loop) every ``check_seconds``. A lease whose partner was disabled, lost the
permission, or whose key stopped working (a rotation, or the end of its grace) ends
with that refusal, which the interceptor sends as the stream's status. The lease keeps
the key's digest, never the key.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

from yieldagent.domain.errors import AccessDenied, AuthenticationFailed, RateLimited
from yieldagent.domain.partners.partners import check_credentials
from yieldagent.domain.ports.credentials import Partner, PartnerCredentials, StoredCredentials

T = TypeVar("T")


class StreamLease:
    """One open stream: its partner, how it authenticated, and whether it must end."""

    __slots__ = ("digest", "ended", "partner", "permission", "refusal")

    def __init__(self, partner: Partner, digest: str | None, permission: str) -> None:
        self.partner = partner
        self.digest = digest
        self.permission = permission
        self.refusal: AuthenticationFailed | AccessDenied | None = None
        self.ended = asyncio.Event()

    def end(self, refusal: AuthenticationFailed | AccessDenied) -> None:
        """Ends the stream with ``refusal``."""
        self.refusal = refusal
        self.ended.set()


class OpenStreams:
    """The open streams of one event loop, at most ``per_partner`` per partner."""

    def __init__(
        self,
        partners: PartnerCredentials,
        per_partner: int,
        check_seconds: float,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._partners = partners
        self._per_partner = per_partner
        self._check_seconds = check_seconds
        self._now = now
        self._leases: set[StreamLease] = set()
        self._counts: dict[int, int] = {}
        self._task: asyncio.Task[None] | None = None

    def count(self, partner_id: int) -> int:
        """How many streams ``partner_id`` has open."""
        return self._counts.get(partner_id, 0)

    def open(self, partner: Partner, digest: str | None, permission: str) -> StreamLease:
        """A lease for a new stream of ``partner``; RateLimited when it has as many open
        as it may."""
        if self.count(partner.id) >= self._per_partner:
            raise RateLimited(
                f"Too many open streams: at most {self._per_partner} per partner",
                max(int(self._check_seconds), 1),
            )
        lease = StreamLease(partner, digest, permission)
        self._leases.add(lease)
        self._counts[partner.id] = self.count(partner.id) + 1
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._check_while_open())
        return lease

    def close(self, lease: StreamLease) -> None:
        """Forgets a stream that ended."""
        if lease in self._leases:
            self._leases.discard(lease)
            left = self.count(lease.partner.id) - 1
            if left > 0:
                self._counts[lease.partner.id] = left
            else:
                self._counts.pop(lease.partner.id, None)

    def _lookup(self, names: set[str]) -> dict[str, StoredCredentials | None]:
        return {name: self._partners.credentials(name) for name in names}

    async def _check_while_open(self) -> None:
        while self._leases:
            await asyncio.sleep(self._check_seconds)
            leases = list(self._leases)
            if not leases:
                return
            stored = await asyncio.to_thread(self._lookup, {x.partner.name for x in leases})
            for lease in leases:
                try:
                    check_credentials(
                        stored.get(lease.partner.name), lease.digest, lease.permission, self._now
                    )
                except (AuthenticationFailed, AccessDenied) as refusal:
                    lease.end(refusal)


async def until_ended(stream: AsyncIterator[T], ended: asyncio.Event) -> AsyncIterator[T]:
    """``stream``'s items until it ends or ``ended`` is set, whichever comes first; the
    stream is closed either way, also when the consumer is cancelled."""
    iterator = aiter(stream)
    stopped = asyncio.ensure_future(ended.wait())
    step: asyncio.Future[T] | None = None
    try:
        while True:
            step = asyncio.ensure_future(anext(iterator))
            await asyncio.wait({step, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if not step.done():
                return
            try:
                item = step.result()
            except StopAsyncIteration:
                return
            step = None
            yield item
    finally:
        for pending in (step, stopped):
            if pending is not None and not pending.done():
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                    await pending
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            await aclose()
