"""Wallet leases: at most one holder moves a wallet's money at a time, across processes.

A lease is a row-level claim in the database (a conditional UPDATE of the wallet's
``lease_owner`` and ``lease_until``), so it works across replicas and lapses on its own
when its holder dies. A local lock per wallet spares the database from polling within one
process. While held, a lease is renewed every third of its length, so an operation may
outlast one lease; commits check that the lease is still theirs
(``WalletRepository.commit``), so a holder whose lease lapsed cannot overwrite the work of
the one that took it over.

A caller that finds the wallet busy waits for it, at most ``wait_seconds``, then gets a
409 Conflict that says when to retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

from yieldagent.domain.errors import Conflict
from yieldagent.domain.ports.clock import Clock
from yieldagent.domain.ports.storage import LeaseStore

POLL_SECONDS = 0.02
"""How often a waiting caller looks at a busy wallet's lease again."""


class Leases:
    """Takes, keeps and gives back wallet leases."""

    def __init__(
        self,
        store: LeaseStore,
        clock: Clock,
        seconds: float = 60.0,
        wait_seconds: float = 30.0,
    ) -> None:
        self._store = store
        self._clock = clock
        self.seconds = seconds
        """How long a lease lasts unless renewed."""
        self.wait_seconds = wait_seconds
        """How long a caller waits for a busy wallet before a Conflict."""
        self._process = uuid.uuid4().hex[:12]
        self._locks: dict[int, asyncio.Lock] = {}

    def owner(self, purpose: str = "") -> str:
        """A fresh owner name of this process (``purpose`` helps an operator read it)."""
        suffix = f":{purpose}" if purpose else ""
        return f"{self._process}:{uuid.uuid4().hex[:8]}{suffix}"

    def try_acquire(self, wallet_id: int, owner: str) -> bool:
        """Takes the lease now if it is free; never waits."""
        now = self._clock.time()
        return self._store.acquire_lease(wallet_id, owner, now + self.seconds, now)

    def release(self, wallet_id: int, owner: str) -> None:
        """Gives the lease back (nothing happens if ``owner`` no longer holds it)."""
        self._store.release_lease(wallet_id, owner)

    def renew(self, wallet_ids: Sequence[int], owner: str) -> None:
        """Extends the leases ``owner`` still holds among ``wallet_ids`` by a full lease."""
        if wallet_ids:
            self._store.renew_leases(wallet_ids, owner, self._clock.time() + self.seconds)

    def busy(self) -> Conflict:
        """The refusal for a wallet that stays busy."""
        return Conflict(
            "Another operation on this wallet is in progress; retry",
            retry_after_seconds=max(1, round(self.seconds / 4)),
        )

    @asynccontextmanager
    async def hold(
        self, wallet_id: int, owner: str | None = None, wait: bool = True
    ) -> AsyncIterator[str]:
        """Holds the wallet's lease, renewed while held; yields its owner name.

        ``owner``: a lease the caller already holds (the scheduler claims wallets in
        batches); it is renewed, and left to the caller to release. Without ``wait``, a
        busy wallet is a Conflict at once.
        """
        local = self._locks.setdefault(wallet_id, asyncio.Lock())
        if not wait and local.locked():
            raise self.busy()
        release = owner is None
        async with local:
            holder = owner or self.owner()
            deadline = self._clock.monotonic() + (self.wait_seconds if wait else 0.0)
            while not self.try_acquire(wallet_id, holder):
                if not wait or self._clock.monotonic() > deadline:
                    raise self.busy()
                await self._clock.sleep(POLL_SECONDS)
            keeper = asyncio.create_task(self.keep(lambda: (wallet_id,), holder))
            try:
                yield holder
            finally:
                keeper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await keeper
                if release:
                    self.release(wallet_id, holder)

    async def keep(self, wallet_ids: Callable[[], Sequence[int]], owner: str) -> None:
        """Every third of a lease, renews ``owner``'s leases of ``wallet_ids()`` until
        cancelled."""
        while True:
            await self._clock.sleep(self.seconds / 3)
            self.renew(list(wallet_ids()), owner)
