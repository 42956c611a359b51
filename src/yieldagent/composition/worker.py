"""The background worker loop: settles the simulated market, finishes operations a dead
process left open, books and values wallets, and runs the agents that are due.

It runs in a thread of its own with its own event loop, so that its work never holds up
the gRPC server's loop; its jobs use their own lifecycle (the database lease serializes
them with the server's calls).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

Job = Callable[[], Awaitable[None]]


@dataclass(slots=True)
class _Scheduled:
    job: Job
    every: float
    due: float = 0.0


class Worker:
    """Runs each job every ``interval`` seconds (or its own period) until stopped.

    A failing job is logged and retried when next due; it never stops the loop.
    """

    def __init__(self, interval: float, jobs: list[Job] | None = None) -> None:
        self._interval = interval
        self._jobs = [_Scheduled(job, interval) for job in jobs or []]
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._stop_requested = threading.Event()
        self._thread: threading.Thread | None = None
        self.ticks = 0

    def add(self, job: Job, every: float | None = None) -> None:
        """Adds a job, run every ``every`` seconds (the worker's interval by default) from
        the next tick on."""
        self._jobs.append(_Scheduled(job, every or self._interval))

    @property
    def stop_requested(self) -> bool:
        """Whether ``stop`` was called: long jobs end early, between two units of work."""
        return self._stop_requested.is_set()

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
            wait = (
                max(0.0, min(s.due for s in self._jobs) - time.monotonic())
                if self._jobs
                else (self._interval)
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=wait)
        log.info("worker stopped", extra={"ticks": self.ticks})

    async def tick(self) -> None:
        """Runs every job that is due."""
        self.ticks += 1
        for scheduled in self._jobs:
            if self._stopping is not None and self._stopping.is_set():
                return
            if scheduled.due > time.monotonic():
                continue
            scheduled.due = time.monotonic() + scheduled.every
            job = scheduled.job
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
