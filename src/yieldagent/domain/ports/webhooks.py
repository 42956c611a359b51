"""The webhooks port: partners' webhooks and the deliveries of their events, as the delivery
job and the operator's webhook commands keep them.

``storage.webhooks.WebhookStore`` implements both protocols, and the composition root hands
it to ``webhooks.delivery.Deliverer`` and to the commands of ``webhooks.admin``. The values
are plain: a claimed delivery carries its event as the JSON body to post, so the delivery
job needs nothing of the books.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class Webhook:
    """A partner's webhook: where its events go, and the sealed secret that signs them."""

    partner_id: int
    partner_name: str
    url: str
    sealed_secret: str


@dataclass(frozen=True, slots=True)
class Claimed:
    """A delivery the job holds the lease of: its event and where it goes."""

    id: int
    event_id: int
    body: dict[str, Any]
    """The event as the webhook posts it (``WalletEvent.body``)."""
    attempts: int
    """Attempts made before this one."""
    partner_id: int
    url: str
    sealed_secret: str
    created_at: float
    """When the delivery (and its event) was recorded (wall-clock unix time)."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """How posting one claimed delivery went."""

    delivery_id: int
    delivered: bool
    status: int | None
    error: str
    next_attempt_at: float
    """When to try again, if it was not delivered (wall-clock unix time)."""
    dead: bool = False
    """Not delivered, and never to be tried again."""


@dataclass(frozen=True, slots=True)
class DeliveryEntry:
    """One delivery as the operator's log shows it."""

    event_id: int
    kind: str
    wallet: str
    attempts: int
    last_status: int | None
    last_error: str
    next_attempt_at: datetime | None
    delivered_at: datetime | None
    dead_at: datetime | None = None

    def json(self) -> dict[str, Any]:
        """The entry as JSON values."""

        def moment(value: datetime | None) -> str | None:
            return value.isoformat().replace("+00:00", "Z") if value else None

        return {
            "event_id": self.event_id,
            "type": self.kind,
            "wallet": self.wallet,
            "attempt": self.attempts,
            "status_code": self.last_status,
            "error": self.last_error or None,
            "next_attempt_at": moment(self.next_attempt_at),
            "delivered_at": moment(self.delivered_at),
            "dead_at": moment(self.dead_at),
        }


class DeliveryQueue(Protocol):
    """The deliveries the job posts: claimed with a lease, then recorded."""

    def claim(self, now: float, owner: str, lease_until: float, limit: int) -> list[Claimed]:
        """Leases to ``owner`` up to ``limit`` due deliveries, each the oldest undelivered
        one of its wallet and partner, and returns them oldest event first."""

    def finish(self, owner: str, attempts: Sequence[Attempt]) -> int:
        """Records the outcome of each attempt and releases its lease, in one transaction;
        an attempt whose lease ``owner`` lost meanwhile writes nothing. Returns how many
        were recorded."""


class WebhookRegistry(Protocol):
    """Partners' webhooks and their delivery logs, for the operator's commands."""

    def partner_id(self, name: str) -> int:
        """The id of the partner named ``name``; NotFound when there is none."""

    def set(self, partner_id: int, url: str, sealed_secret: str) -> None:
        """Sets (or replaces) the partner's webhook; undelivered events go to the new URL,
        signed with the new secret."""

    def get(self, partner_id: int) -> Webhook | None:
        """The partner's webhook, if it set one."""

    def log(self, partner_id: int, limit: int) -> list[DeliveryEntry]:
        """The partner's latest deliveries, newest event first."""

    def pending(self, partner_id: int | None = None) -> int:
        """How many deliveries wait (of one partner, or of all); dead ones do not."""
