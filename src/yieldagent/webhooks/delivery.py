"""The delivery job: posts each partner's events to its webhook, at least once, in order
per wallet.

Each run claims the due deliveries (the ``DeliveryQueue`` port: the oldest undelivered one of
each wallet, leased), posts them concurrently (one per wallet at a time), and records the
round's attempts in one transaction. A 2xx answer delivers; anything else (another
status, a timeout, a refused connection) schedules the next attempt after a backoff:
1 s, 2 s, 4 s, … doubling up to ``max_backoff_seconds``, each drawn between half and all
of it. A wallet's later events wait until the receiver accepts the earlier one, so a
receiver that keeps failing would hold them forever: a delivery that fails once its event
is older than ``dead_after_seconds`` (3 days) is not retried, it is ``dead``, and the
wallet's next event takes its place. A run keeps claiming while deliveries succeed or die
(so a wallet's queue drains in one run), up to ``rounds`` times. A process that dies after
posting and before recording posts again once the lease lapses: at least once.

Where it posts is guarded (``webhooks.destinations``): https in production, and only to
public addresses, checked on the address each connection is made to. The receiver's
answer is read to ``RESPONSE_LIMIT`` bytes at most; the rest is never read.

``Deliverer(observe=...)`` calls ``observe`` with every attempt's ``DeliveryOutcome``,
and ``deliver_due`` returns them: the hook for metrics.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp

from yieldagent.domain.ports.webhooks import Attempt, Claimed, DeliveryQueue
from yieldagent.webhooks.destinations import (
    PUBLIC_ONLY,
    DestinationPolicy,
    GuardedResolver,
    RefusedDestination,
    url_refusal,
)
from yieldagent.webhooks.sealing import SecretBox, partner_context
from yieldagent.webhooks.signing import SIGNATURE_HEADER, signature

log = logging.getLogger(__name__)

EVENT_ID_HEADER = "X-Yieldagent-Event-Id"
USER_AGENT = "yieldagent-webhooks/1"
RESPONSE_LIMIT = 64 * 1024
"""The most bytes of a receiver's answer read; its status is all that counts."""
DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class DeliverySettings:
    """How deliveries are made (``YIELDAGENT_WEBHOOK_*``)."""

    timeout_seconds: float = 5.0
    max_backoff_seconds: float = 3600.0
    batch: int = 50
    rounds: int = 20
    dead_after_seconds: float = 3 * DAY
    """A delivery whose event is older than this is dead at its next failure."""
    destinations: DestinationPolicy = PUBLIC_ONLY


@dataclass(frozen=True, slots=True)
class DeliveryOutcome:
    """One attempt: which event to which partner, and how it went."""

    event_id: int
    partner_id: int
    attempt: int
    delivered: bool
    status: int | None
    """The receiver's HTTP status, when it answered."""
    error: str
    seconds: float
    dead: bool = False
    """It failed and will not be tried again."""

    @property
    def outcome(self) -> str:
        """``delivered``, ``failed`` (to be retried) or ``dead``."""
        return "delivered" if self.delivered else "dead" if self.dead else "failed"


def backoff(failures: int, cap: float, draw: Callable[[], float] = random.random) -> float:
    """Seconds to wait after ``failures`` failed attempts: 2**(failures−1), at most ``cap``,
    times a random factor between 0.5 and 1."""
    return min(cap, 2.0 ** max(failures - 1, 0)) * (0.5 + 0.5 * draw())


def encode(body: dict[str, object]) -> bytes:
    """The exact bytes posted (and signed)."""
    return json.dumps(body, separators=(",", ":")).encode()


class Deliverer:
    """Posts due deliveries and records how each attempt went."""

    def __init__(
        self,
        store: DeliveryQueue,
        box: SecretBox,
        settings: DeliverySettings,
        observe: Callable[[DeliveryOutcome], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._box = box
        self._settings = settings
        self._observe = observe
        self._clock = clock
        self.owner = f"webhooks-{uuid.uuid4().hex[:12]}"

    async def deliver_due(
        self, stopping: Callable[[], bool] = lambda: False
    ) -> list[DeliveryOutcome]:
        """Delivers what is due, round after round while deliveries succeed (or die); returns
        every attempt's outcome."""
        settings = self._settings
        outcomes: list[DeliveryOutcome] = []
        http: aiohttp.ClientSession | None = None
        try:
            for _ in range(settings.rounds):
                now = self._clock()
                lease = now + 2 * settings.timeout_seconds + 5
                claimed = self._store.claim(now, self.owner, lease, settings.batch)
                if not claimed:
                    break
                if http is None:
                    http = aiohttp.ClientSession(
                        connector=aiohttp.TCPConnector(
                            resolver=GuardedResolver(settings.destinations)
                        ),
                        timeout=aiohttp.ClientTimeout(total=settings.timeout_seconds),
                        headers={"User-Agent": USER_AGENT},
                        trust_env=False,  # no proxy from the environment: the guard sees all
                    )
                posted = await asyncio.gather(*(self._post(http, item) for item in claimed))
                self._store.finish(self.owner, [attempt for attempt, _ in posted])
                done = [outcome for _, outcome in posted]
                for outcome in done:
                    self._report(outcome)
                outcomes += done
                if stopping() or all(outcome.outcome == "failed" for outcome in done):
                    break
        finally:
            if http is not None:
                await http.close()
        return outcomes

    async def _post(
        self, http: aiohttp.ClientSession, item: Claimed
    ) -> tuple[Attempt, DeliveryOutcome]:
        started = time.monotonic()
        status: int | None = None
        error = ""
        try:
            secret = self._box.open(item.sealed_secret, partner_context(item.partner_id))
        except ValueError:
            secret = None
            error = (
                "the signing secret cannot be opened (was YIELDAGENT_WEBHOOK_SECRET_KEY changed?)"
            )
        refused = url_refusal(item.url, self._settings.destinations)
        if refused is not None:
            error = f"refused destination: {refused}"
        elif secret is not None:
            body = encode(item.body)
            headers = {
                "Content-Type": "application/json",
                SIGNATURE_HEADER: signature(secret, int(self._clock()), body),
                EVENT_ID_HEADER: str(item.event_id),
            }
            try:
                async with http.post(
                    item.url, data=body, headers=headers, allow_redirects=False
                ) as response:
                    status = response.status
                    await response.content.read(RESPONSE_LIMIT)
                if not 200 <= status < 300:
                    error = f"HTTP {status}"
            except TimeoutError:
                error = f"no answer within {self._settings.timeout_seconds:g} s"
            except aiohttp.ClientConnectorDNSError as failure:
                if isinstance(failure.os_error, RefusedDestination):
                    error = f"refused destination: {failure.os_error.strerror}"
                else:
                    error = f"{type(failure).__name__}: {failure}"[:500]
            except (aiohttp.ClientError, ValueError) as failure:
                error = f"{type(failure).__name__}: {failure}"[:500]
        delivered = not error
        attempt = item.attempts + 1
        now = self._clock()
        retry_at = now + backoff(attempt, self._settings.max_backoff_seconds)
        dead = not delivered and now - item.created_at > self._settings.dead_after_seconds
        outcome = DeliveryOutcome(
            item.event_id,
            item.partner_id,
            attempt,
            delivered,
            status,
            error,
            time.monotonic() - started,
            dead,
        )
        return Attempt(item.id, delivered, status, error, retry_at, dead), outcome

    def _report(self, outcome: DeliveryOutcome) -> None:
        extra = {
            "event_id": outcome.event_id,
            "partner_id": outcome.partner_id,
            "attempt": outcome.attempt,
            "status": outcome.status,
        }
        if outcome.delivered:
            log.info("webhook delivered", extra=extra)
        elif outcome.dead:
            log.warning("webhook delivery dead", extra={**extra, "error": outcome.error})
        else:
            log.warning("webhook delivery failed", extra={**extra, "error": outcome.error})
        if self._observe is not None:
            self._observe(outcome)
