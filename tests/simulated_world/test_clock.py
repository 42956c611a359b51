"""The simulated clock: time as a function of the wall clock, moved by re-anchoring."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from yieldagent.simulated_world.clock import SimClock

ANCHOR = 1_767_225_600
WALL = 1_700_000_000.0

speeds = st.floats(min_value=0.0, max_value=10_000.0, allow_nan=False)
offsets = st.floats(min_value=0.0, max_value=10**7, allow_nan=False)


def test_now_runs_at_the_clocks_speed_from_its_anchor() -> None:
    assert SimClock(ANCHOR, WALL, 1.0).now(WALL) == ANCHOR
    assert SimClock(ANCHOR, WALL, 1.0).now(WALL + 10) == ANCHOR + 10
    assert SimClock(ANCHOR, WALL, 3600.0).now(WALL + 2) == ANCHOR + 7200
    assert SimClock(ANCHOR, WALL, 1.0).now(WALL + 1.9) == ANCHOR + 1  # whole seconds
    assert SimClock(ANCHOR, WALL, 0.5).now(WALL + 3) == ANCHOR + 1


def test_a_wall_clock_before_the_anchor_gives_the_anchor() -> None:
    assert SimClock(ANCHOR, WALL, 1.0).now(WALL - 100) == ANCHOR


def test_speed_zero_freezes_time() -> None:
    clock = SimClock(ANCHOR, WALL, 0.0)
    assert {clock.now(WALL + offset) for offset in (0, 1, 3600, 10**9)} == {ANCHOR}


def test_advanced_moves_ahead_and_reanchors() -> None:
    clock = SimClock(ANCHOR, WALL, 2.0)
    moved = clock.advanced(3600, WALL + 10)
    assert moved == SimClock(ANCHOR + 20 + 3600, WALL + 10, 2.0)
    assert moved.now(WALL + 15) == ANCHOR + 30 + 3600
    assert clock.now(WALL + 15) == ANCHOR + 30  # the original is unchanged


def test_a_frozen_clock_moves_only_when_advanced() -> None:
    clock = SimClock(ANCHOR, WALL, 0.0).advanced(86_400, WALL + 50)
    assert clock.now(WALL + 10**6) == ANCHOR + 86_400
    assert clock.advanced(0, WALL + 99).now(WALL + 10**6) == ANCHOR + 86_400


def test_negative_seconds_are_refused() -> None:
    with pytest.raises(ValueError, match="forward"):
        SimClock(ANCHOR, WALL, 1.0).advanced(-1, WALL)


def test_with_speed_keeps_time_continuous_and_changes_the_pace() -> None:
    clock = SimClock(ANCHOR, WALL, 1.0)
    faster = clock.with_speed(3600.0, WALL + 100)
    assert faster.now(WALL + 100) == clock.now(WALL + 100) == ANCHOR + 100
    assert faster.now(WALL + 101) == ANCHOR + 100 + 3600
    frozen = faster.with_speed(0.0, WALL + 102)
    assert frozen.now(WALL + 102) == frozen.now(WALL + 10**6) == ANCHOR + 100 + 7200


def test_negative_speed_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        SimClock(ANCHOR, WALL, 1.0).with_speed(-1.0, WALL)


def test_the_clock_is_immutable() -> None:
    clock = SimClock(ANCHOR, WALL, 1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        clock.anchor = 0  # type: ignore[misc]


@given(speed=speeds, new_speed=speeds, at=offsets, later=offsets)
def test_reanchoring_never_jumps_and_time_never_goes_back(
    speed: float, new_speed: float, at: float, later: float
) -> None:
    clock = SimClock(ANCHOR, WALL, speed)
    switched = clock.with_speed(new_speed, WALL + at)
    assert switched.now(WALL + at) == clock.now(WALL + at)
    assert switched.now(WALL + at + later) >= switched.now(WALL + at)
    assert clock.now(WALL + at + later) >= clock.now(WALL + at)


@given(speed=speeds, at=offsets, seconds=st.integers(0, 10**9))
def test_advanced_adds_exactly_the_seconds(speed: float, at: float, seconds: int) -> None:
    clock = SimClock(ANCHOR, WALL, speed)
    moved = clock.advanced(seconds, WALL + at)
    assert moved.now(WALL + at) == clock.now(WALL + at) + seconds
    assert moved.speed == speed
