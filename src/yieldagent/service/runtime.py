"""The serving process's Python runtime: its event loop, and the settings for a server's
latency once it has started.

Measured on the fleet poll (``make bench``, 32 connections, one serving process):

- uvloop as the event loop (``YIELDAGENT_EVENT_LOOP``): grpc.aio hands each call from its
  completion queue to the loop and back; on libuv the server spent 14 to 33% less CPU per
  read than on the standard library's loop over three runs, and the poll's p99 went from
  1.40× FastAPI's to 0.73–1.14× (FastAPI on uvloop too).
- ``gc.freeze()``: what start-up created (modules, protobuf descriptors, SQLAlchemy's
  metadata: about 150,000 objects) leaves the collector's reach. A full collection then
  scans only what serving has kept since: 10 to 15 ms instead of about 110 ms, a pause
  the poll saw as a p99 of 80 to 90 ms in the seconds it fell in.
- ``sys.setswitchinterval(0.001)``: gRPC's completion-queue thread hands each call to
  the event loop, and waits for the interpreter lock while the loop runs Python; at most a
  millisecond rather than the default five (about 6% more reads a second, a lower p99).
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
