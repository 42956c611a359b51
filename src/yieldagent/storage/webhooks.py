"""Partners' webhooks and the deliveries of their events.

A delivery row is created with its event (``storage.events.record_events``), in the same
transaction, when the partner has a webhook; it stays until the receiver accepts it. The
delivery job claims **the oldest undelivered delivery of each wallet** that is due, with
a lease, so a wallet's event n+1 is never posted before n was accepted, and two replicas
never post the same one at once. A process that dies mid-post leaves the lease to lapse;
the delivery is then claimed again (at least once). A disabled partner's deliveries are
not claimed: they wait, and go out once it is enabled again. A dead delivery
(``dead_at`` set: it failed too long) is never claimed again and holds nothing back.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, and_, exists, func, or_, select, update
from sqlmodel import Session, col

from yieldagent.domain.errors import NotFound
from yieldagent.domain.partners.partners import check_partner_name
from yieldagent.domain.ports.webhooks import Attempt, Claimed, DeliveryEntry, Webhook
from yieldagent.storage.events import event_of
from yieldagent.storage.tables import (
    PartnerRow,
    PartnerWebhookRow,
    WalletEventRow,
    WebhookDeliveryRow,
)

_deliveries = WebhookDeliveryRow.__table__  # type: ignore[attr-defined]
_events = WalletEventRow.__table__  # type: ignore[attr-defined]
_hooks = PartnerWebhookRow.__table__  # type: ignore[attr-defined]
_partners = PartnerRow.__table__  # type: ignore[attr-defined]
_ACTIVE = select(_partners.c.id).where(_partners.c.active.is_(True))


def _utc(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class WebhookStore:
    """Reads and writes partners' webhooks and their deliveries (the ports
    ``DeliveryQueue`` and ``WebhookRegistry`` of ``domain.ports.webhooks``)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    # -- webhooks ------------------------------------------------------------------------

    def partner_id(self, name: str) -> int:
        """The id of the partner named ``name``; NotFound when there is none."""
        check_partner_name(name)
        with Session(self._engine) as session:
            found = session.execute(
                select(PartnerRow.id).where(PartnerRow.name == name)  # type: ignore[call-overload]
            ).first()
        if found is None:
            raise NotFound(f"No partner named {name!r}")
        return int(found.id)

    def set(self, partner_id: int, url: str, sealed_secret: str) -> None:
        """Sets (or replaces) the partner's webhook; undelivered events go to the new URL,
        signed with the new secret."""
        now = datetime.now(UTC)
        with Session(self._engine) as session:
            row = session.get(PartnerWebhookRow, partner_id)
            if row is None:
                session.add(
                    PartnerWebhookRow(
                        partner_id=partner_id, url=url, secret=sealed_secret, updated_at=now
                    )
                )
            else:
                row.url, row.secret, row.updated_at = url, sealed_secret, now
                session.add(row)
            session.commit()

    def get(self, partner_id: int) -> Webhook | None:
        """The partner's webhook, if it set one."""
        with Session(self._engine) as session:
            found = session.execute(
                select(PartnerWebhookRow, PartnerRow.name)  # type: ignore[call-overload]
                .join(PartnerRow, col(PartnerRow.id) == PartnerWebhookRow.partner_id)
                .where(PartnerWebhookRow.partner_id == partner_id)
            ).first()
        if found is None:
            return None
        row, name = found
        return Webhook(row.partner_id, name, row.url, row.secret)

    # -- deliveries ------------------------------------------------------------------------

    def claim(self, now: float, owner: str, lease_until: float, limit: int) -> list[Claimed]:
        """Leases to ``owner`` up to ``limit`` due deliveries, each the oldest undelivered
        one of its wallet and partner, and returns them oldest event first."""
        d = _deliveries
        earlier = d.alias("earlier")
        blocked = exists().where(
            earlier.c.delivered.is_(False),
            earlier.c.dead_at.is_(None),
            earlier.c.wallet_id == d.c.wallet_id,
            earlier.c.partner_id == d.c.partner_id,
            earlier.c.event_id < d.c.event_id,
        )
        free = or_(d.c.lease_owner.is_(None), d.c.lease_until < now)
        heads = (
            select(d.c.id)
            .where(
                d.c.delivered.is_(False),
                d.c.dead_at.is_(None),
                d.c.next_attempt_at <= now,
                free,
                d.c.partner_id.in_(_ACTIVE),
                ~blocked,
            )
            .order_by(d.c.event_id)
            .limit(limit)
        )
        with Session(self._engine) as session:
            ids = list(
                session.execute(
                    update(d)
                    .where(d.c.id.in_(heads.scalar_subquery()), free)
                    .values(lease_owner=owner, lease_until=lease_until)
                    .returning(d.c.id)
                ).scalars()
            )
            session.commit()
            if not ids:
                return []
            rows = session.execute(
                select(
                    _events,
                    _deliveries.c.id.label("delivery_id"),
                    _deliveries.c.attempts,
                    _deliveries.c.created_at.label("delivery_created_at"),
                    _hooks.c.url,
                    _hooks.c.secret,
                )
                .join(_events, _events.c.id == _deliveries.c.event_id)
                .join(_hooks, _hooks.c.partner_id == _deliveries.c.partner_id)
                .where(_deliveries.c.id.in_(ids))
                .order_by(_deliveries.c.event_id)
            ).all()
        claimed = []
        for row in rows:
            event = event_of(row)
            claimed.append(
                Claimed(
                    row.delivery_id,
                    event.id,
                    event.body(),
                    row.attempts,
                    row.partner_id,
                    row.url,
                    row.secret,
                    _utc(row.delivery_created_at).timestamp(),  # type: ignore[union-attr]
                )
            )
        return claimed

    def finish(self, owner: str, attempts: Sequence[Attempt]) -> int:
        """Records the outcome of each attempt and releases its lease, in one transaction;
        an attempt whose lease ``owner`` lost meanwhile writes nothing. Returns how many
        were recorded."""
        recorded = 0
        now = datetime.now(UTC)
        with Session(self._engine) as session:
            for attempt in attempts:
                values: dict[str, Any] = {
                    "attempts": WebhookDeliveryRow.attempts + 1,
                    "last_status": attempt.status,
                    "last_error": attempt.error,
                    "lease_owner": None,
                    "lease_until": None,
                }
                if attempt.delivered:
                    values.update(delivered=True, delivered_at=now)
                elif attempt.dead:
                    values["dead_at"] = now
                else:
                    values["next_attempt_at"] = attempt.next_attempt_at
                result = session.execute(
                    update(WebhookDeliveryRow)
                    .where(
                        and_(
                            col(WebhookDeliveryRow.id) == attempt.delivery_id,
                            col(WebhookDeliveryRow.lease_owner) == owner,
                        )
                    )
                    .values(**values)
                )
                recorded += result.rowcount  # type: ignore[attr-defined]
            session.commit()
        return recorded

    def log(self, partner_id: int, limit: int) -> list[DeliveryEntry]:
        """The partner's latest deliveries, newest event first."""
        with Session(self._engine) as session:
            rows = session.execute(
                select(_deliveries, _events.c.kind, _events.c.wallet)
                .join(_events, _events.c.id == _deliveries.c.event_id)
                .where(_deliveries.c.partner_id == partner_id)
                .order_by(_deliveries.c.event_id.desc())
                .limit(limit)
            ).all()
        return [
            DeliveryEntry(
                event_id=row.event_id,
                kind=row.kind,
                wallet=row.wallet,
                attempts=row.attempts,
                last_status=row.last_status,
                last_error=row.last_error,
                next_attempt_at=None
                if row.delivered or row.dead_at is not None
                else datetime.fromtimestamp(row.next_attempt_at, UTC),
                delivered_at=_utc(row.delivered_at),
                dead_at=_utc(row.dead_at),
            )
            for row in rows
        ]

    def pending(self, partner_id: int | None = None) -> int:
        """How many deliveries wait (of one partner, or of all); dead ones do not."""
        query = select(func.count()).where(
            _deliveries.c.delivered.is_(False), _deliveries.c.dead_at.is_(None)
        )
        if partner_id is not None:
            query = query.where(_deliveries.c.partner_id == partner_id)
        with self._engine.connect() as connection:
            return int(connection.execute(query).scalar_one())
