"""Idempotency keys: who executes a keyed call, and what it answered.

A key belongs to one partner (primary key ``(partner_id, key)``). ``claim`` is the only
way to start executing a keyed call, and it is race-free on SQLite and PostgreSQL, across
processes: every write is one conditional statement on that primary key.

- A new key is inserted with ``INSERT … ON CONFLICT DO NOTHING``: of two concurrent first
  calls, exactly one inserts; the other reads the row the first one wrote.
- A key whose attempt died (``in_progress``, lease lapsed) is taken over by a retry of the
  same request with a conditional ``UPDATE``: of two retries, exactly one matches.
- A key past its TTL counts as free: the next claim overwrites it the same way, whatever
  request it carries. Such keys are also deleted, at most once a minute on a claim, or by
  ``purge``.

Every other write (``renew``, ``complete``, ``fail``, ``release``) names the attempt that
owns the key and changes nothing once another attempt has taken it over.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, and_, case, delete, literal, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from yieldagent.domain.ports.storage import COMPLETED, IN_PROGRESS, KeyRecord, StoredError
from yieldagent.storage.tables import IdempotencyKeyRow
from yieldagent.storage.types import UtcDateTime

DEFAULT_TTL_SECONDS = 86_400.0
PURGE_EVERY_SECONDS = 60.0

_keys = IdempotencyKeyRow.__table__  # type: ignore[attr-defined]
_c = _keys.c
_CLEARED = {
    "response": None,
    "error_code": None,
    "error_message": None,
    "error_details": None,
    "rest_status": None,
    "rest_body": None,
}


def _record(row: Any) -> KeyRecord:
    error = None
    if row.error_code is not None:
        error = StoredError(
            row.error_code, row.error_message, row.error_details, row.rest_status, row.rest_body
        )
    return KeyRecord(
        row.partner_id,
        row.key,
        row.method,
        row.fingerprint,
        row.state,
        row.owner,
        row.lease_until,
        row.response,
        error,
        row.created_at,
    )


def _this(partner_id: int, key: str) -> Any:
    return and_(_c.partner_id == partner_id, _c.key == key)


def _owned(partner_id: int, key: str, owner: str) -> Any:
    return and_(_this(partner_id, key), _c.owner == owner, _c.state == IN_PROGRESS)


class IdempotencyStore:
    """Reads and writes idempotency keys."""

    def __init__(
        self,
        engine: Engine,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._engine = engine
        self._ttl = ttl_seconds
        self._clock = clock
        self._next_purge = 0.0
        dialect = postgresql if engine.dialect.name == "postgresql" else sqlite
        self._insert = dialect.insert

    def claim(
        self,
        partner_id: int,
        key: str,
        method: str,
        fingerprint: str,
        owner: str,
        lease_seconds: float,
    ) -> KeyRecord | None:
        """Makes ``owner`` the attempt that executes the call, if the key is free.

        Returns None when ``owner`` now holds the key: it was new, past its TTL, or in
        progress under a lapsed lease with this same method and fingerprint. Otherwise
        returns the key as it stands, for the caller to replay, wait or refuse.
        """
        now = self._clock()
        if now >= self._next_purge:
            self._next_purge = now + PURGE_EVERY_SECONDS
            self.purge()
        moment = datetime.fromtimestamp(now, UTC)
        cutoff = moment - timedelta(seconds=self._ttl)
        held = {
            "method": method,
            "fingerprint": fingerprint,
            "state": IN_PROGRESS,
            "owner": owner,
            "lease_until": now + lease_seconds,
        }
        insert = (
            self._insert(_keys)
            .values(partner_id=partner_id, key=key, created_at=moment, **held, **_CLEARED)
            .on_conflict_do_nothing(index_elements=[_c.partner_id, _c.key])
            .returning(_c.owner)
        )
        nobody_executes = or_(_c.state == COMPLETED, _c.lease_until < now)
        same_request = and_(
            _c.state == IN_PROGRESS, _c.method == method, _c.fingerprint == fingerprint
        )
        take = (
            update(_keys)
            .where(
                _this(partner_id, key),
                nobody_executes,
                or_(_c.created_at < cutoff, same_request),
            )
            .values(
                created_at=case(
                    (_c.created_at < cutoff, literal(moment, UtcDateTime())),
                    else_=_c.created_at,
                ),
                **held,
                **_CLEARED,
            )
        )
        read = select(_keys).where(_this(partner_id, key))
        for _ in range(5):  # a row deleted between the statements: try again
            with self._engine.begin() as connection:
                if connection.execute(insert).first() is not None:
                    return None
                if connection.execute(take).rowcount == 1:
                    return None
                row = connection.execute(read).first()
            if row is not None:
                return _record(row)
        raise RuntimeError(f"idempotency key {key!r} changes too fast to be claimed")

    def get(self, partner_id: int, key: str) -> KeyRecord | None:
        """The key as stored, or None."""
        with self._engine.connect() as connection:
            row = connection.execute(select(_keys).where(_this(partner_id, key))).first()
        return None if row is None else _record(row)

    def renew(self, partner_id: int, key: str, owner: str, lease_seconds: float) -> bool:
        """Extends ``owner``'s lease; False if it no longer holds the key."""
        statement = (
            update(_keys)
            .where(_owned(partner_id, key, owner))
            .values(lease_until=self._clock() + lease_seconds)
        )
        return self._write(statement)

    def complete(self, partner_id: int, key: str, owner: str, response: bytes) -> bool:
        """Stores the response of ``owner``'s call; False if it no longer holds the key."""
        statement = (
            update(_keys)
            .where(_owned(partner_id, key, owner))
            .values(state=COMPLETED, **{**_CLEARED, "response": response})
        )
        return self._write(statement)

    def fail(self, partner_id: int, key: str, owner: str, error: StoredError) -> bool:
        """Stores the refusal ``owner``'s call answered; False if it no longer holds the key."""
        statement = (
            update(_keys)
            .where(_owned(partner_id, key, owner))
            .values(
                state=COMPLETED,
                response=None,
                error_code=error.code,
                error_message=error.message,
                error_details=error.details,
                rest_status=error.rest_status,
                rest_body=error.rest_body,
            )
        )
        return self._write(statement)

    def release(self, partner_id: int, key: str, owner: str) -> bool:
        """Forgets the key ``owner`` holds (its call failed unexpectedly), so a retry
        executes again; False if it no longer holds the key."""
        return self._write(delete(_keys).where(_owned(partner_id, key, owner)))

    def purge(self) -> int:
        """Deletes the keys past their TTL that nobody executes; returns how many."""
        now = self._clock()
        cutoff = datetime.fromtimestamp(now, UTC) - timedelta(seconds=self._ttl)
        statement = delete(_keys).where(
            _c.created_at < cutoff,
            or_(_c.state == COMPLETED, _c.lease_until < now),
        )
        with self._engine.begin() as connection:
            return int(connection.execute(statement).rowcount)

    def _write(self, statement: Any) -> bool:
        with self._engine.begin() as connection:
            return bool(connection.execute(statement).rowcount == 1)
