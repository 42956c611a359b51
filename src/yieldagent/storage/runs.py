"""The agent's schedule: claiming due wallets, their next runs, protocol pauses. (Runs
themselves are operations: ``storage.operations``; the schedule's table and the leases are
``storage.schedule``'s.)

Claiming is how several replicas share the work. One statement marks a batch of due,
unleased wallets as leased by this process; on PostgreSQL the inner selection skips rows
another replica is claiming at that moment (``FOR UPDATE SKIP LOCKED``); SQLite runs one
writer at a time. A wallet is therefore never run by two processes at once, and none is
skipped: a claimed wallet's next run is moved while its lease is still held, once its run
has ended; if the process dies first, the wallet is due again when the lease lapses.

Claims and batch ends write only the narrow schedule rows, never the wallets row.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy import (
    Engine,
    TextClause,
    TextualSelect,
    bindparam,
    case,
    or_,
    select,
    text,
    update,
)
from sqlmodel import Session
from sqlmodel import select as orm_select

from yieldagent.domain.books.operations import OperationStatus
from yieldagent.domain.ports.storage import RunEnd
from yieldagent.storage.bulk import document, recordset
from yieldagent.storage.db import chunks
from yieldagent.storage.schedule import reschedule
from yieldagent.storage.tables import (
    ACTIVE_ONLY,
    ProtocolPauseRow,
    WalletRow,
    WalletScheduleRow,
)
from yieldagent.storage.types import UtcDateTime

_schedule = WalletScheduleRow.__table__  # type: ignore[attr-defined]
_wallets = WalletRow.__table__  # type: ignore[attr-defined]


def _ending(status: str, reason: str) -> str:
    """A batch end's SET clause for one wallet: its next run (``:at``), its lease released
    if ``:owner`` still holds it, and, if it ran (``status`` not null), its outcome at
    ``:ran_at``. (Every expression reads the row as it was before the update.)"""
    ran = f"{status} IS NOT NULL"
    return (
        "next_run_at = :at, "
        "lease_owner = CASE WHEN lease_owner = :owner THEN NULL ELSE lease_owner END, "
        "lease_until = CASE WHEN lease_owner = :owner THEN NULL ELSE lease_until END, "
        f"runs = runs + CASE WHEN {ran} THEN 1 ELSE 0 END, "
        f"last_run_at = CASE WHEN {ran} THEN :ran_at ELSE last_run_at END, "
        f"last_outcome = CASE WHEN {ran} THEN {status} ELSE last_outcome END, "
        f"last_reason = CASE WHEN {ran} THEN {reason} ELSE last_reason END, "
        f"last_moved_at = CASE WHEN {status} = 'completed' THEN :ran_at ELSE last_moved_at END"
    )


# A batch's end: on SQLite one UPDATE per wallet (sent as one executemany); on PostgreSQL one
# statement for a whole chunk, its rows in one JSON document (``storage.bulk``).
_FINISH_ONE = text(
    f"UPDATE wallet_schedule SET {_ending(':status', ':reason')} "  # noqa: S608
    "WHERE wallet_id = :wallet_id"
)
_ENDS = {
    "wallet_id": _schedule.c.wallet_id.type,
    "status": _schedule.c.last_outcome.type,
    "reason": _schedule.c.last_reason.type,
}
_FINISH_MANY = text(
    f"UPDATE wallet_schedule SET {_ending('v.status', 'v.reason')} "  # noqa: S608
    f"FROM {recordset(_ENDS)} WHERE wallet_schedule.wallet_id = v.wallet_id "
    # The ids once more, so that only the batch's rows meet the document's (filtered in a
    # scan, or found by the primary key in a larger schedule): without it PostgreSQL
    # hashed every row of the schedule to join 500, a cost that grew with the schedule.
    "AND wallet_schedule.wallet_id = ANY(CAST(:wallet_ids AS INTEGER[]))"
)
_NOTE = (
    update(_schedule)
    .where(_schedule.c.wallet_id == bindparam("one"))
    .values(
        runs=_schedule.c.runs + 1,
        last_run_at=bindparam("ran_at"),
        last_outcome=bindparam("status"),
        last_reason=bindparam("reason"),
        last_moved_at=case(
            (bindparam("status") == "completed", bindparam("ran_at")),
            else_=_schedule.c.last_moved_at,
        ),
    )
)


def _due_reads(dialect: str) -> tuple[TextClause, TextClause, TextualSelect]:
    """The claim, and the two reads of ``oldest_due``, through the index of due wallets.
    SQLite is told to use it: without statistics its planner may pick another. On
    PostgreSQL the claim takes its batch's rows through the primary key (``IN (subquery)``
    got a hash join over every wallet) and skips rows another replica is claiming."""
    indexed = " INDEXED BY ix_wallet_schedule_due" if dialect == "sqlite" else ""
    schedule = f"wallet_schedule{indexed}"
    due = (
        f"SELECT wallet_id FROM {schedule} WHERE {ACTIVE_ONLY} AND next_run_at <= :now "  # noqa: S608
        "AND (lease_owner IS NULL OR lease_until < :now) "
        "ORDER BY next_run_at, wallet_id LIMIT :limit"
    )
    if dialect == "postgresql":
        claiming = f"wallet_id = ANY(ARRAY({due} FOR UPDATE SKIP LOCKED))"
    else:
        claiming = f"wallet_id IN ({due})"
    claim = text(
        "UPDATE wallet_schedule SET lease_owner = :owner, lease_until = :until "  # noqa: S608
        f"WHERE {claiming} RETURNING wallet_id, last_moved_at"
    )
    scheduled = text(
        f"SELECT min(next_run_at) FROM {schedule} "  # noqa: S608
        f"WHERE {ACTIVE_ONLY} AND next_run_at > 0"
    )
    unscheduled = text(
        "SELECT min(w.activation_date) AS first "  # noqa: S608
        f"FROM wallet_schedule AS s{indexed} JOIN wallets AS w ON w.id = s.wallet_id "
        f"WHERE s.{ACTIVE_ONLY} AND s.next_run_at = 0"
    ).columns(first=UtcDateTime())
    return claim, scheduled, unscheduled


class RunStore:
    """Reads and writes the schedule and protocol pauses, and lists a wallet's runs."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._claim, self._scheduled, self._unscheduled = _due_reads(engine.dialect.name)

    # schedule

    def claim_due(
        self, now: float, owner: str, lease_until: float, limit: int
    ) -> dict[int, float | None]:
        """Leases up to ``limit`` activated wallets whose run is due; returns their ids, in
        order, each with when it last moved funds in a run (None: never), which the
        guards' minimum wait needs and the claim reads at no cost.

        The due wallets are read in the order of the index of due wallets
        (``ix_wallet_schedule_due``), which holds only activated ones, so a claim reads
        about its batch whatever the size of the fleet.
        """
        params = {"now": now, "limit": limit, "owner": owner, "until": lease_until}
        with self._engine.begin() as connection:
            claimed = connection.execute(self._claim, params).all()
        return {
            row.wallet_id: None if row.last_moved_at is None else float(row.last_moved_at)
            for row in sorted(claimed)
        }

    def oldest_due(self) -> float | None:
        """Since when (unix seconds) the most overdue activated wallet's run has been due;
        None if there is no activated wallet. For the overdue metric, on each scrape.

        A wallet never scheduled yet (``next_run_at`` 0: due at once) has been due since
        its activation. Two reads, both through the index of due wallets.
        """
        with self._engine.connect() as connection:
            oldest = connection.execute(self._scheduled).scalar()
            first_activation = connection.execute(self._unscheduled).scalar()
        candidates = [float(oldest)] if oldest is not None else []
        if first_activation is not None:
            candidates.append(first_activation.timestamp())
        return min(candidates) if candidates else None

    def schedule(self, wallet_id: int, next_run_at: float) -> None:
        """Sets when the wallet runs next."""
        with self._engine.begin() as connection:
            reschedule(connection, wallet_id, next_run_at)

    def hasten(
        self,
        chain_id: int,
        token: str,
        protocols: Sequence[str],
        now: float,
        failed_only: bool = False,
    ) -> int:
        """Every activated wallet holding ``token`` in one of ``protocols`` (its
        ``allocation`` at the last valuation names the protocol) due at ``now``; with
        ``failed_only``, only those whose last run failed. It reads the chain's wallets
        once, by their allocation's text: a guard's exit is rare, and the schedule's index
        of due wallets does not know what a wallet holds."""
        if not protocols:
            return 0
        holds = or_(*(_wallets.c.allocation.like(f'%"{p}":%') for p in sorted(set(protocols))))
        holders = select(_wallets.c.id).where(
            _wallets.c.chain_id == chain_id, _wallets.c.token == token, holds
        )
        which = [
            _schedule.c.active.is_(True),
            _schedule.c.next_run_at > now,
            _schedule.c.wallet_id.in_(holders),
        ]
        if failed_only:
            which.append(_schedule.c.last_outcome == str(OperationStatus.FAILED))
        hastened = update(_schedule).where(*which).values(next_run_at=now)
        with self._engine.begin() as connection:
            return int(connection.execute(hastened).rowcount or 0)

    def finish(self, ends: Sequence[RunEnd], owner: str, next_run_at: float, at: float) -> None:
        """Ends a batch's runs in one transaction: for each wallet, its outcome (at ``at``)
        if it ran, its next run, and its lease given back if ``owner`` still holds it."""
        common = {"at": next_run_at, "owner": owner, "ran_at": at}
        with self._engine.begin() as connection:
            if connection.dialect.name == "postgresql":
                for chunk in chunks(ends):
                    rows = [
                        {"wallet_id": e.wallet_id, "status": e.status, "reason": e.reason}
                        for e in chunk
                    ]
                    ids = [end.wallet_id for end in chunk]
                    parameters = {"rows": document(rows), "wallet_ids": ids}
                    connection.execute(_FINISH_MANY, common | parameters)
            else:
                rows = [
                    common | {"wallet_id": e.wallet_id, "status": e.status, "reason": e.reason}
                    for e in ends
                ]
                connection.execute(_FINISH_ONE, rows)

    def note(self, end: RunEnd, at: float) -> None:
        """Notes the outcome of a run made on request (the schedule and lease untouched)."""
        params = {"one": end.wallet_id, "ran_at": at, "status": end.status, "reason": end.reason}
        with self._engine.begin() as connection:
            connection.execute(_NOTE, params)

    # pauses

    def pause(self, chain_id: int, protocol: str) -> None:
        """Marks ``protocol`` unsafe on ``chain_id``."""
        with Session(self._engine) as session:
            if session.get(ProtocolPauseRow, (chain_id, protocol)) is None:
                session.add(
                    ProtocolPauseRow(
                        chain_id=chain_id, protocol=protocol, paused_at=datetime.now(UTC)
                    )
                )
                session.commit()

    def resume(self, chain_id: int, protocol: str) -> None:
        """Lifts a pause."""
        with Session(self._engine) as session:
            row = session.get(ProtocolPauseRow, (chain_id, protocol))
            if row is not None:
                session.delete(row)
                session.commit()

    @property
    def parallel_writes(self) -> bool:
        """PostgreSQL takes writes in parallel; SQLite has one writer."""
        return self._engine.dialect.name != "sqlite"

    def paused(self, chain_id: int) -> frozenset[str]:
        """The protocols paused on ``chain_id``."""
        with Session(self._engine) as session:
            rows = session.exec(
                orm_select(ProtocolPauseRow.protocol).where(ProtocolPauseRow.chain_id == chain_id)
            ).all()
            return frozenset(rows)
