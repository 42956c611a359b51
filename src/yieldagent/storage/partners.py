"""Partners: registration, key rotation, and the credentials lookup on every keyed call."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import Engine, bindparam
from sqlalchemy import select as core_select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from yieldagent.domain.errors import InvalidRequest, NotFound
from yieldagent.domain.partners.partners import (
    check_partner_name,
    check_permissions,
    key_digest,
    new_api_key,
    rotation,
)
from yieldagent.domain.ports.credentials import Partner, StoredCredentials
from yieldagent.storage.tables import PartnerRow

_partners = PartnerRow.__table__  # type: ignore[attr-defined]

# The hot path: one indexed read per keyed call, as a plain Core statement.
_CREDENTIALS = core_select(
    _partners.c.id,
    _partners.c.name,
    _partners.c.active,
    _partners.c.permissions,
    _partners.c.api_key_digest,
    _partners.c.previous_key_digest,
    _partners.c.previous_key_expires_at,
).where(_partners.c.name == bindparam("name"))


def _permissions(text: str) -> frozenset[str]:
    return frozenset(p for p in text.split(",") if p)


def _partner(row: PartnerRow) -> Partner:
    assert row.id is not None
    return Partner(row.id, row.name, row.active, _permissions(row.permissions))


class PartnerStore:
    """Reads and writes partners. ``now`` (unix seconds) dates a rotation's grace."""

    def __init__(self, engine: Engine, now: Callable[[], float] = time.time) -> None:
        self._engine = engine
        self._now = now

    def create(self, name: str, permissions: frozenset[str]) -> tuple[Partner, str]:
        """Registers a partner; returns it with its API key, which is not kept."""
        check_partner_name(name)
        check_permissions(permissions)
        api_key = new_api_key()
        now = datetime.now(UTC)
        row = PartnerRow(
            name=name,
            api_key_digest=key_digest(api_key),
            active=True,
            permissions=",".join(sorted(permissions)),
            created_at=now,
            updated_at=now,
        )
        with Session(self._engine) as session:
            session.add(row)
            try:
                session.commit()
            except IntegrityError:
                raise InvalidRequest(f"Partner {name!r} already exists") from None
            session.refresh(row)
            return _partner(row), api_key

    def rotate(self, name: str, grace_seconds: float = 0.0) -> tuple[Partner, str]:
        """Replaces a partner's API key. The old key keeps working for ``grace_seconds``
        (0: it stops at once); a key kept by an earlier rotation stops at once."""
        api_key = new_api_key()
        with Session(self._engine) as session:
            row = session.exec(
                select(PartnerRow).where(PartnerRow.name == name).with_for_update()
            ).first()
            if row is None:
                raise NotFound(f"No partner named {name!r}")
            rotated = rotation(row.api_key_digest, api_key, grace_seconds, self._now())
            row.api_key_digest = rotated.key_digest
            row.previous_key_digest = rotated.previous_digest
            row.previous_key_expires_at = rotated.previous_expires_at
            row.updated_at = datetime.now(UTC)
            session.commit()
            session.refresh(row)
            return _partner(row), api_key

    def disable(self, name: str) -> Partner:
        """Deactivates a partner: its key then gets 403 on every keyed call."""
        return self._update(name, active=False)

    def enable(self, name: str) -> Partner:
        """Reactivates a disabled partner."""
        return self._update(name, active=True)

    def _update(self, name: str, **values: object) -> Partner:
        with Session(self._engine) as session:
            row = session.exec(select(PartnerRow).where(PartnerRow.name == name)).first()
            if row is None:
                raise NotFound(f"No partner named {name!r}")
            for field, value in values.items():
                setattr(row, field, value)
            row.updated_at = datetime.now(UTC)
            session.commit()
            session.refresh(row)
            return _partner(row)

    def credentials(self, name: str) -> StoredCredentials | None:
        """What is needed to check a partner's key; None for an unknown name."""
        with self._engine.connect() as connection:
            row = connection.execute(_CREDENTIALS, {"name": name}).first()
        if row is None:
            return None
        partner = Partner(row.id, row.name, row.active, _permissions(row.permissions))
        return StoredCredentials(
            partner, row.api_key_digest, row.previous_key_digest, row.previous_key_expires_at
        )
