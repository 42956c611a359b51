"""The worker's job of background placement: its passes deploy while the agent's cycle
places what earlier passes activated; it ends once a pass finds nothing and the cycle is
over, places what it activated before it ends, and makes at most a bounded number of
passes (fakes of the agent and the lifecycle, so that the order of events is the test's)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from yieldagent.composition import compose


class Lifecycle:
    """Passes that activate what ``queue`` holds (one wallet a pass), and record when each
    ran: how many cycles had started and ended by then."""

    def __init__(self, agent: Agent, queue: int) -> None:
        self.agent = agent
        self.queue = queue
        self.passes: list[tuple[int, int]] = []
        self.third = asyncio.Event()
        """Set once three passes ran."""

    async def finish_activations(self) -> list[str]:
        await asyncio.sleep(0)
        self.passes.append((self.agent.started, self.agent.ended))
        if len(self.passes) >= 3:
            self.third.set()
        if self.queue == 0:
            return []
        self.queue -= 1
        self.agent.due += 1
        return ["activated"]


class Agent:
    """Cycles that place every due wallet; the first waits for ``release``."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = self.ended = self.due = self.placed = 0

    async def run_cycle(self, stopping: Any = None) -> int:
        self.started += 1
        if self.started == 1:
            await self.release.wait()
        placed, self.due = self.due, 0
        self.placed += placed
        self.ended += 1
        return placed


@pytest.fixture(autouse=True)
def quick_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compose, "ACTIVATION_PASS_SECONDS", 0.001)


def _job(agent: Agent, lifecycle: Lifecycle, stopping: Any = lambda: False) -> Any:
    return compose.activation_placement(cast(Any, agent), cast(Any, lifecycle), stopping)


async def test_passes_go_on_while_the_cycle_places_and_the_job_places_what_it_activated() -> None:
    agent = Agent()
    lifecycle = Lifecycle(agent, queue=3)
    running = asyncio.create_task(_job(agent, lifecycle)())
    await asyncio.wait_for(lifecycle.third.wait(), 5)

    assert lifecycle.passes == [(1, 0)] * 3  # all while the first cycle is still placing
    assert not running.done()

    agent.release.set()
    await asyncio.wait_for(running, 5)

    assert agent.placed == 3  # the job ends once what it activated is placed
    assert lifecycle.queue == 0
    assert lifecycle.passes[-1][1] >= 1


async def test_a_pass_that_finds_nothing_ends_the_job_once_the_cycle_is_over() -> None:
    agent = Agent()
    agent.release.set()
    lifecycle = Lifecycle(agent, queue=0)

    await asyncio.wait_for(_job(agent, lifecycle)(), 5)

    assert len(lifecycle.passes) == 1
    assert agent.started == agent.ended == 1


async def test_the_job_makes_a_bounded_number_of_passes() -> None:
    agent = Agent()
    agent.release.set()
    lifecycle = Lifecycle(agent, queue=100)

    await asyncio.wait_for(_job(agent, lifecycle)(), 5)

    assert len(lifecycle.passes) == compose.ACTIVATION_PASSES_AT_MOST
    assert agent.placed == compose.ACTIVATION_PASSES_AT_MOST  # its last cycle placed them


async def test_a_stopping_worker_makes_no_pass() -> None:
    agent = Agent()
    agent.release.set()
    lifecycle = Lifecycle(agent, queue=1)

    await asyncio.wait_for(_job(agent, lifecycle, lambda: True)(), 5)

    assert lifecycle.passes == []
    assert agent.started == agent.ended == 1
