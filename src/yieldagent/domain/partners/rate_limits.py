"""Per-partner rate limits: a token bucket for each partner.

A partner may make ``rate`` calls a second on average, and up to ``burst`` at once: its
bucket holds at most ``burst`` tokens, refills at ``rate`` tokens a second, and each call
takes one. A call that finds the bucket empty is refused with the time until a token is
back. Time comes from the caller (a monotonic clock), so the limiter does no I/O.

Buckets are per process: with N replicas behind a load balancer a partner gets up to N
times the rate (see "Rate limits" in docs/operating.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from yieldagent.domain.errors import RateLimited


class RateLimiter:
    """Token buckets keyed by partner id. Not thread-safe: one event loop uses it."""

    __slots__ = ("_buckets", "_burst", "_now", "_rate")

    def __init__(self, rate: float, burst: float, now: Callable[[], float]) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("a rate limit needs a positive rate and a burst of at least 1")
        self._rate = rate
        self._burst = burst
        self._now = now
        self._buckets: dict[int, list[float]] = {}

    def wait_seconds(self, partner_id: int) -> float:
        """Takes a token for one call of ``partner_id``: 0.0 if it may go ahead, else the
        seconds until a token is back (nothing is taken then)."""
        now = self._now()
        bucket = self._buckets.get(partner_id)
        if bucket is None:
            self._buckets[partner_id] = [self._burst - 1.0, now]
            return 0.0
        tokens = min(self._burst, bucket[0] + (now - bucket[1]) * self._rate)
        bucket[1] = now
        if tokens >= 1.0:
            bucket[0] = tokens - 1.0
            return 0.0
        bucket[0] = tokens
        return (1.0 - tokens) / self._rate

    def check(self, partner_id: int) -> None:
        """Takes a token for one call of ``partner_id``; raises RateLimited (with whole
        seconds to wait, rounded up) when the bucket is empty."""
        wait = self.wait_seconds(partner_id)
        if wait > 0.0:
            raise RateLimited(
                f"Rate limit exceeded: at most {self._rate:g} requests per second "
                f"(bursts of {self._burst:g}); retry later",
                math.ceil(wait),
            )
