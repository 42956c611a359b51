"""The background worker loop. The agent's periodic rebalancing will run here."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

Job = Callable[[], Awaitable[None]]


class Worker:
    """Runs its jobs every ``interval`` seconds until stopped.

    A failing job is logged and retried at the next tick; it never stops the loop.
    """

    def __init__(self, interval: float, jobs: list[Job] | None = None) -> None:
        self._interval = interval
        self._jobs = jobs or []
        self._stopping = asyncio.Event()
        self.ticks = 0

    def add(self, job: Job) -> None:
        """Adds a job; it runs from the next tick on."""
        self._jobs.append(job)

    async def run(self) -> None:
        """Ticks until ``stop`` is called."""
        log.info(
            "worker started", extra={"interval_seconds": self._interval, "jobs": len(self._jobs)}
        )
        while not self._stopping.is_set():
            await self.tick()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=self._interval)
        log.info("worker stopped", extra={"ticks": self.ticks})

    async def tick(self) -> None:
        """Runs every job once."""
        self.ticks += 1
        for job in self._jobs:
            try:
                await job()
            except Exception:
                log.exception("worker job failed", extra={"job": getattr(job, "__name__", "?")})

    def stop(self) -> None:
        """Asks the loop to end after the current tick."""
        self._stopping.set()
