"""The serving process's runtime: its event loop, and once started, start-up's objects
frozen out of the collector's reach and a short interpreter switch interval."""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import Iterator

import pytest
import uvloop

from yieldagent.composition import runtime


@pytest.fixture
def restored() -> Iterator[None]:
    interval = sys.getswitchinterval()
    yield
    gc.unfreeze()
    sys.setswitchinterval(interval)


@pytest.mark.usefixtures("restored")
def test_settling_freezes_what_start_up_made_and_shortens_the_switch_interval() -> None:
    gc.unfreeze()
    kept = [[n] for n in range(10)]  # what start-up keeps, as a service's modules
    assert gc.get_freeze_count() == 0
    runtime.settle()
    assert gc.get_freeze_count() >= len(kept)
    collected = {id(o) for o in gc.get_objects()}  # the frozen ones are not among them
    assert not any(id(o) in collected for o in kept)
    assert sys.getswitchinterval() == pytest.approx(runtime.SWITCH_INTERVAL_SECONDS)


@pytest.mark.parametrize(
    ("event_loop", "kind"), [("uvloop", uvloop.Loop), ("asyncio", asyncio.BaseEventLoop)]
)
def test_a_serving_process_runs_on_the_event_loop_it_is_configured_with(
    event_loop: str, kind: type
) -> None:
    async def loop_and_answer() -> tuple[asyncio.AbstractEventLoop, int]:
        await asyncio.sleep(0)
        return asyncio.get_running_loop(), 42

    loop, answer = runtime.run(loop_and_answer(), event_loop)
    assert isinstance(loop, kind)
    assert answer == 42
    if event_loop == "asyncio":
        assert not isinstance(loop, uvloop.Loop)
