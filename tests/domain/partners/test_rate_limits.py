"""Per-partner token buckets: rate, burst, refill and the wait a refused call is told."""

from __future__ import annotations

import pytest

from yieldagent.domain.errors import RateLimited
from yieldagent.domain.partners.rate_limits import RateLimiter


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_passes_then_calls_wait_for_the_refill() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=2.0, burst=4.0, now=clock)
    assert [limiter.wait_seconds(1) for _ in range(4)] == [0.0] * 4
    assert limiter.wait_seconds(1) == pytest.approx(0.5)  # one token comes back in 1/rate
    clock.now += 0.5
    assert limiter.wait_seconds(1) == 0.0
    assert limiter.wait_seconds(1) == pytest.approx(0.5)


def test_the_bucket_refills_at_the_rate_up_to_the_burst() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=10.0, burst=3.0, now=clock)
    for _ in range(3):
        limiter.check(7)
    clock.now += 3600  # a long pause refills to the burst, not beyond
    for _ in range(3):
        limiter.check(7)
    with pytest.raises(RateLimited):
        limiter.check(7)


def test_partners_have_buckets_of_their_own() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=1.0, burst=1.0, now=clock)
    limiter.check(1)
    with pytest.raises(RateLimited):
        limiter.check(1)
    limiter.check(2)


def test_a_refusal_says_how_many_whole_seconds_to_wait() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=0.25, burst=1.0, now=clock)
    limiter.check(1)
    with pytest.raises(RateLimited, match=r"at most 0\.25 requests per second") as refused:
        limiter.check(1)
    assert refused.value.retry_after_seconds == 4
    clock.now += 3.9
    with pytest.raises(RateLimited) as refused:
        limiter.check(1)
    assert refused.value.retry_after_seconds == 1  # rounded up, never 0
    clock.now += 0.1
    limiter.check(1)


def test_a_refused_call_takes_no_token() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=1.0, burst=1.0, now=clock)
    limiter.check(1)
    for _ in range(5):
        assert limiter.wait_seconds(1) > 0
    clock.now += 1.0
    assert limiter.wait_seconds(1) == 0.0


def test_a_limit_needs_a_positive_rate_and_a_burst_of_one() -> None:
    with pytest.raises(ValueError, match="positive rate"):
        RateLimiter(rate=0.0, burst=1.0, now=Clock())
    with pytest.raises(ValueError, match="positive rate"):
        RateLimiter(rate=1.0, burst=0.5, now=Clock())
