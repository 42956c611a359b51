"""A webhook deliverer for tests: a clock the test moves, and a deliverer that may post to
the test's own receiver on loopback."""

from __future__ import annotations

import time

from sqlalchemy import Engine

from yieldagent.storage.webhooks import WebhookStore
from yieldagent.webhooks.delivery import Deliverer, DeliveryOutcome, DeliverySettings
from yieldagent.webhooks.destinations import DestinationPolicy
from yieldagent.webhooks.sealing import SecretBox

START = float(int(time.time()) + 3600)
"""The deliverer's clock: an hour ahead of the wall clock the deliveries are stamped with
(so every one is due), and far from the time they die."""
LOCAL = DestinationPolicy(allow_loopback=True)


class Clock:
    """The deliverer's wall clock, moved by the test (backoffs pass at once)."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


def deliverer(
    engine: Engine,
    box: SecretBox,
    clock: Clock,
    outcomes: list[DeliveryOutcome] | None = None,
    policy: DestinationPolicy = LOCAL,
    timeout_seconds: float = 2,
) -> Deliverer:
    """A deliverer over ``engine``'s webhooks, reporting to ``outcomes`` if given."""
    settings = DeliverySettings(
        timeout_seconds=timeout_seconds, max_backoff_seconds=60, batch=10, destinations=policy
    )
    observe = outcomes.append if outcomes is not None else None
    return Deliverer(WebhookStore(engine), box, settings, observe, clock)
