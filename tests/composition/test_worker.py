"""The worker loop runs its jobs each tick, survives failures, and stops on request."""

from __future__ import annotations

import asyncio

from yieldagent.composition.worker import Worker


async def test_jobs_run_every_tick_and_failures_do_not_stop_the_loop() -> None:
    runs: list[str] = []
    three_ticks = asyncio.Event()

    async def good() -> None:
        runs.append("good")
        if len(runs) == 6:
            three_ticks.set()

    async def bad() -> None:
        runs.append("bad")
        raise RuntimeError("boom")

    worker = Worker(interval=0.01, jobs=[bad, good])
    task = asyncio.create_task(worker.run())
    await asyncio.wait_for(three_ticks.wait(), 30)
    worker.stop()
    await asyncio.wait_for(task, 30)
    assert runs[:6] == ["bad", "good"] * 3


async def test_stop_ends_a_long_wait_at_once() -> None:
    worker = Worker(interval=3600)
    task = asyncio.create_task(worker.run())
    await asyncio.sleep(0.01)
    worker.stop()
    await asyncio.wait_for(task, 30)
    assert worker.ticks == 1
