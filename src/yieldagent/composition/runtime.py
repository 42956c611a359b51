"""The serving process's Python runtime: its event loop, and the settings for a server's
latency once it has started.

- uvloop as the event loop (``YIELDAGENT_EVENT_LOOP``): grpc.aio hands each call from its
  completion queue to the loop and back, which libuv's loop does for less CPU per read and
  a lower p99 than the standard library's.
- ``gc.freeze()``: what start-up created (modules, protobuf descriptors, SQLAlchemy's
  metadata) leaves the collector's reach. A full collection then scans only what serving
  has kept since, and its pause no longer shows in the poll's p99.
- ``sys.setswitchinterval(0.001)``: gRPC's completion-queue thread hands each call to
  the event loop, and waits for the interpreter lock while the loop runs Python; at most a
  millisecond rather than the default five, so more reads a second with a lower p99.

What each was worth on the fleet poll is in ``docs/performance.md`` (Figures behind the
code).
"""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

import uvloop

T = TypeVar("T")

SWITCH_INTERVAL_SECONDS = 0.001


def run(main: Coroutine[Any, Any, T], event_loop: str) -> T:
    """Runs ``main`` to its end on a new event loop of the kind ``event_loop`` names
    (``config.EVENT_LOOPS``)."""
    if event_loop == "uvloop":
        return uvloop.run(main)
    return asyncio.run(main)


def settle() -> None:
    """Freezes what start-up created and shortens the interpreter's switch interval; called
    once a serving process has started."""
    gc.collect()  # what start-up left as garbage is not frozen with the rest
    gc.freeze()
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
