"""Wallet events: written with the commit that makes them true, read by cursor, and a
notice to this process's watchers when new ones are committed.

**Ids follow commit order.** A watcher reads "events after id N"; if two transactions
took ids 10 and 11 and 11 committed first, a watcher could move past 10 before it
appears. SQLite has one writer at a time, so its ids are handed out in commit order.
On PostgreSQL a transaction that records events first takes a transaction-scoped
advisory lock (released at its commit or rollback), so event-recording transactions
take their ids one after another, in commit order. The lock is taken last in the
transaction, after the wallet's row is written, so it never waits for a row lock while
held.

**Notices.** ``signal_for(engine)`` is one notifier per database per process: a commit
that recorded events calls it, and the poller of every event loop of this process that
has streams open (``storage.event_watch``) wakes at once and reads the new events once
for all of them. Events another process (a replica, the CLI) commits are found by the
poller's poll, within ``poll_seconds``.

**Retention.** ``EventStore.prune`` deletes events recorded before a moment, with their
webhook deliveries, a bounded batch per transaction: the worker calls it with the
retention (``YIELDAGENT_EVENT_RETENTION_SECONDS``). A batch is the oldest events by id,
read through the primary key (no index on ``created_at`` to keep up on every insert);
those among them older than the moment go. Ids are never reused (SQLite's
AUTOINCREMENT, PostgreSQL's sequence), so a cursor stays meaningful: one that points
before the retention resumes at the wallet's oldest event still kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, delete, func, insert, select, text
from sqlmodel import Session

from yieldagent.domain.books.events import EventDraft, WalletEvent
from yieldagent.domain.pagination import PageRequest
from yieldagent.storage.db import one_of
from yieldagent.storage.event_watch import Poller, follow
from yieldagent.storage.tables import PartnerWebhookRow, WalletEventRow, WebhookDeliveryRow

EVENTS_LOCK = 0x79_61_65_76  # "yaev": serializes event ids with commits (PostgreSQL)

_events = WalletEventRow.__table__  # type: ignore[attr-defined]
_deliveries = WebhookDeliveryRow.__table__  # type: ignore[attr-defined]
_hooks = PartnerWebhookRow.__table__  # type: ignore[attr-defined]
_HOOKED = select(_hooks.c.partner_id).where(one_of(_hooks.c.partner_id, "partners"))
_EVENTS_LOCK = text("SELECT pg_advisory_xact_lock(:key)")
# Ids in the drafts' order: one statement, its rows numbered in order.
_INSERT_EVENTS = insert(_events)
_INSERT_EVENTS_RETURNING = insert(_events).returning(_events.c.id, sort_by_parameter_order=True)
_INSERT_DELIVERIES = insert(_deliveries)
_NEW = (
    select(_events)
    .where(_events.c.id > bindparam("cursor"))
    .order_by(_events.c.id)
    .limit(bindparam("limit"))
)
_AFTER = (
    select(_events)
    .where(_events.c.wallet_id == bindparam("wallet_id"), _events.c.id > bindparam("cursor"))
    .order_by(_events.c.id)
    .limit(bindparam("limit"))
)


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def event_of(row: Any) -> WalletEvent:
    """A WalletEvent from a row of ``wallet_events``."""
    return WalletEvent(
        id=row.id,
        created_at=_utc(row.created_at),
        kind=row.kind,
        wallet_id=row.wallet_id,
        partner_id=row.partner_id,
        chain_id=row.chain_id,
        wallet=row.wallet,
        amount=row.amount,
        data=json.loads(row.data),
    )


def record_events(executor: Session | Connection, drafts: Sequence[EventDraft]) -> int:
    """Adds ``drafts`` to the caller's transaction (a session's or a connection's), in
    order, with a webhook delivery for each one whose partner has a webhook; returns how
    many it added. One insert for the events, one for their deliveries."""
    if not drafts:
        return 0
    connection = executor.connection() if isinstance(executor, Session) else executor
    partners = sorted({draft.partner_id for draft in drafts})
    hooked = set(connection.execute(_HOOKED, {"partners": partners}).scalars())
    if connection.dialect.name == "postgresql":
        connection.execute(_EVENTS_LOCK, {"key": EVENTS_LOCK})
    now = datetime.now(UTC)
    rows = [
        {
            "wallet_id": draft.wallet_id,
            "partner_id": draft.partner_id,
            "chain_id": draft.chain_id,
            "wallet": draft.wallet,
            "kind": draft.kind,
            "amount": draft.amount,
            "data": json.dumps(draft.data, separators=(",", ":")),
            "created_at": now,
        }
        for draft in drafts
    ]
    if not hooked:
        connection.execute(_INSERT_EVENTS, rows)
        return len(rows)
    ids = connection.execute(_INSERT_EVENTS_RETURNING, rows).scalars().all()
    deliveries = [
        {
            "event_id": event_id,
            "partner_id": row["partner_id"],
            "wallet_id": row["wallet_id"],
            "next_attempt_at": now.timestamp(),
            "created_at": now,
        }
        for event_id, row in zip(ids, rows, strict=True)
        if row["partner_id"] in hooked
    ]
    connection.execute(_INSERT_DELIVERIES, deliveries)
    return len(rows)


class EventSignal:
    """Wakes this process's watchers of one database when events were committed; safe
    to call from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    def notify(self) -> None:
        """Wakes every current subscriber."""
        with self._lock:
            waiters = list(self._waiters)
        for loop, event in waiters:
            with contextlib.suppress(RuntimeError):  # its loop has closed
                loop.call_soon_threadsafe(event.set)

    @contextlib.contextmanager
    def subscribe(self) -> Any:
        """A subscription for the running event loop: yields ``wait(seconds)``, which
        returns when notified since the last wait (or now), or after ``seconds``."""
        event = asyncio.Event()
        entry = (asyncio.get_running_loop(), event)
        with self._lock:
            self._waiters.add(entry)

        async def wait(seconds: float) -> None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout=seconds)
            event.clear()

        try:
            yield wait
        finally:
            with self._lock:
                self._waiters.discard(entry)


_signals: dict[str, EventSignal] = {}
_signals_lock = threading.Lock()


def signal_for(engine: Engine) -> EventSignal:
    """The notifier of ``engine``'s database in this process."""
    key = engine.url.render_as_string(hide_password=True)
    with _signals_lock:
        return _signals.setdefault(key, EventSignal())


@dataclass(frozen=True, slots=True)
class Pruned:
    """What one batch of ``EventStore.prune`` deleted."""

    events: int
    deliveries: int
    more: bool
    """Whether the batch was full: older events may remain."""


class EventStore:
    """Reads wallet events and follows them as they are committed."""

    def __init__(self, engine: Engine, poll_seconds: float = 1.0) -> None:
        self._engine = engine
        self.poll_seconds = poll_seconds
        self._closing = threading.Event()
        self._pollers: dict[asyncio.AbstractEventLoop, Poller] = {}
        self._lock = threading.Lock()

    def after(self, wallet_id: int, cursor: int, limit: int) -> list[WalletEvent]:
        with self._engine.connect() as connection:
            rows = connection.execute(
                _AFTER, {"wallet_id": wallet_id, "cursor": cursor, "limit": limit}
            )
            return [event_of(row) for row in rows]

    def page_of_wallet(self, wallet_id: int, page: PageRequest) -> tuple[list[WalletEvent], int]:
        order = _events.c.id.desc() if page.newest_first else _events.c.id
        listing = (
            select(_events)
            .where(_events.c.wallet_id == wallet_id)
            .order_by(order)
            .offset(page.offset)
            .limit(page.limit)
        )
        counted = select(func.count()).select_from(_events).where(_events.c.wallet_id == wallet_id)
        with self._engine.connect() as connection:
            total = connection.execute(counted).scalar_one()
            return [event_of(row) for row in connection.execute(listing)], total

    def newer(self, cursor: int, limit: int) -> list[WalletEvent]:
        """Every wallet's events with an id above ``cursor``, oldest first, at most
        ``limit``."""
        with self._engine.connect() as connection:
            rows = connection.execute(_NEW, {"cursor": cursor, "limit": limit})
            return [event_of(row) for row in rows]

    def prune(self, before: datetime, limit: int) -> Pruned:
        """Deletes, in one transaction, those of the ``limit`` oldest events recorded
        before ``before``, and their webhook deliveries (whatever their state)."""
        oldest = select(_events.c.id, _events.c.created_at).order_by(_events.c.id).limit(limit)
        window = oldest.subquery()
        with self._engine.begin() as connection:
            ids = list(
                connection.execute(
                    select(window.c.id).where(window.c.created_at < before)
                ).scalars()
            )
            if not ids:
                return Pruned(0, 0, False)
            deliveries = connection.execute(
                delete(_deliveries).where(_deliveries.c.event_id.in_(ids))
            ).rowcount
            events = connection.execute(delete(_events).where(_events.c.id.in_(ids))).rowcount
        return Pruned(int(events), int(deliveries), len(ids) == limit)

    def latest_id(self) -> int:
        """The highest event id stored (0 when none)."""
        with self._engine.connect() as connection:
            found = connection.execute(select(_events.c.id).order_by(_events.c.id.desc())).first()
        return int(found.id) if found else 0

    def poller(self) -> Poller:
        """The running event loop's poller, which serves all its streams."""
        loop = asyncio.get_running_loop()
        with self._lock:
            found = self._pollers.get(loop)
            if found is None:
                for gone in [other for other in self._pollers if other.is_closed()]:
                    del self._pollers[gone]
                found = Poller(
                    self.newer,
                    self.latest_id,
                    signal_for(self._engine),
                    self.poll_seconds,
                    self._closing.is_set,
                )
                self._pollers[loop] = found
            return found

    async def watch(self, wallet_id: int, cursor: int) -> AsyncIterator[WalletEvent]:
        """The wallet's events after ``cursor``, stored ones first, then new ones as they
        are committed (by this process: at once; by another: within ``poll_seconds``),
        until ``close``."""
        async for event in follow(
            self.poller(), self.after, wallet_id, cursor, self._closing.is_set
        ):
            yield event

    def close(self) -> None:
        """Ends every watch (from any thread) at once."""
        self._closing.set()
        with self._lock:
            pollers = list(self._pollers.items())
        for loop, poller in pollers:
            with contextlib.suppress(RuntimeError):  # its loop has closed
                loop.call_soon_threadsafe(poller.wake_all)
        signal_for(self._engine).notify()
