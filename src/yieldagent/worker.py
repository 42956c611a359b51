"""The background worker loop: settles the simulated market, values wallets, recovers
interrupted runs and runs the agents that are due.

It runs in a thread of its own with its own event loop, so that its work never holds up
the gRPC server's loop; its jobs use their own lifecycle (the database lease serializes
them with the server's calls).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
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
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._stop_requested = threading.Event()
        self._thread: threading.Thread | None = None
        self.ticks = 0

    def add(self, job: Job) -> None:
        """Adds a job; it runs from the next tick on."""
        self._jobs.append(job)

    async def run(self) -> None:
        """Ticks until ``stop`` is called."""
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        if self._stop_requested.is_set():
            self._stopping.set()
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
            if self._stopping is not None and self._stopping.is_set():
                return
            try:
                await job()
            except Exception:
                log.exception("worker job failed", extra={"job": getattr(job, "__name__", "?")})

    def stop(self) -> None:
        """Asks the loop to end after the current job; safe from any thread."""
        self._stop_requested.set()
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)

    def start_thread(self) -> None:
        """Runs the loop in a thread of its own."""
        self._thread = threading.Thread(
            target=asyncio.run, args=(self.run(),), name="worker", daemon=True
        )
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        """Waits for the thread started by ``start_thread`` to end."""
        if self._thread is not None:
            self._thread.join(timeout)
