"""The system clock: the real adapter of ``domain.ports.clock.Clock``."""

from __future__ import annotations

import asyncio
import time


class SystemClock:
    """Wall time and sleeping from the operating system and the event loop."""

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


SYSTEM_CLOCK = SystemClock()
