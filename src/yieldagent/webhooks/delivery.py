"""The delivery job: posts each partner's events to its webhook, at least once, in order
per wallet.

Each run claims the due deliveries (``storage.webhooks``: the oldest undelivered one of
each wallet, leased), posts them concurrently (one per wallet at a time), and records the
round's attempts in one transaction. A 2xx answer delivers; anything else (another
status, a timeout, a refused connection) schedules the next attempt after a backoff:
1 s, 2 s, 4 s, … doubling up to ``max_backoff_seconds``, each drawn between half and all
of it. There is no last attempt: a wallet's later events wait until the receiver accepts
the earlier one. A run keeps claiming while deliveries succeed (so a wallet's queue
drains in one run), up to ``rounds`` times. A process that dies after posting and before
recording posts again once the lease lapses: at least once.

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

from yieldagent.storage.webhooks import Attempt, Claimed, WebhookStore
from yieldagent.webhooks.sealing import SecretBox, partner_context
from yieldagent.webhooks.signing import SIGNATURE_HEADER, signature

log = logging.getLogger(__name__)

EVENT_ID_HEADER = "X-Yieldagent-Event-Id"
USER_AGENT = "yieldagent-webhooks/1"


@dataclass(frozen=True, slots=True)
class DeliverySettings:
    """How deliveries are made (``YIELDAGENT_WEBHOOK_*``)."""

    timeout_seconds: float = 5.0
    max_backoff_seconds: float = 3600.0
    batch: int = 50
    rounds: int = 20


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
        store: WebhookStore,
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
        """Delivers what is due, round after round while deliveries succeed; returns every
        attempt's outcome."""
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
                        timeout=aiohttp.ClientTimeout(total=settings.timeout_seconds),
                        headers={"User-Agent": USER_AGENT},
                    )
                posted = await asyncio.gather(*(self._post(http, item) for item in claimed))
                self._store.finish(self.owner, [attempt for attempt, _ in posted])
                done = [outcome for _, outcome in posted]
                for outcome in done:
                    self._report(outcome)
                outcomes += done
                if stopping() or not any(outcome.delivered for outcome in done):
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
        if secret is not None:
            body = encode(item.event.body())
            headers = {
                "Content-Type": "application/json",
                SIGNATURE_HEADER: signature(secret, int(self._clock()), body),
                EVENT_ID_HEADER: str(item.event.id),
            }
            try:
                async with http.post(
                    item.url, data=body, headers=headers, allow_redirects=False
                ) as response:
                    status = response.status
                    await response.read()
                if not 200 <= status < 300:
                    error = f"HTTP {status}"
            except TimeoutError:
                error = f"no answer within {self._settings.timeout_seconds:g} s"
            except (aiohttp.ClientError, ValueError) as failure:
                error = f"{type(failure).__name__}: {failure}"[:500]
        delivered = not error
        attempt = item.attempts + 1
        retry_at = self._clock() + backoff(attempt, self._settings.max_backoff_seconds)
        outcome = DeliveryOutcome(
            item.event.id,
            item.partner_id,
            attempt,
            delivered,
            status,
            error,
            time.monotonic() - started,
        )
        return Attempt(item.id, delivered, status, error, retry_at), outcome

    def _report(self, outcome: DeliveryOutcome) -> None:
        extra = {
            "event_id": outcome.event_id,
            "partner_id": outcome.partner_id,
            "attempt": outcome.attempt,
            "status": outcome.status,
        }
        if outcome.delivered:
            log.info("webhook delivered", extra=extra)
        else:
            log.warning("webhook delivery failed", extra={**extra, "error": outcome.error})
        if self._observe is not None:
            self._observe(outcome)
