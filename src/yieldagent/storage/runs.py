"""The agent's schedule: claiming due wallets, their next runs, protocol pauses. (Runs
themselves are operations: ``storage.operations``.)

Claiming is how several replicas share the work. One statement marks a batch of due,
unleased wallets as leased by this process; on PostgreSQL the inner selection skips rows
another replica is claiming at that moment (``FOR UPDATE SKIP LOCKED``); SQLite runs one
writer at a time. A wallet is therefore never run by two processes at once, and none is
skipped: a claimed wallet's next run is moved while its lease is still held, once its run
has ended; if the process dies first, the wallet is due again when the lease lapses.
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
    insert,
    text,
    update,
)
from sqlmodel import Session, col
from sqlmodel import select as orm_select

from yieldagent.domain.operations import RUN, Operation
from yieldagent.storage.operations import new_row_values, operation_of
from yieldagent.storage.tables import ACTIVATED_ONLY, OperationRow, ProtocolPauseRow, WalletRow
from yieldagent.storage.types import UtcDateTime

_wallets = WalletRow.__table__  # type: ignore[attr-defined]
_operations = OperationRow.__table__  # type: ignore[attr-defined]
# A batch's end: each wallet's next run is set, and its lease given back if still ours.
_mine = _wallets.c.lease_owner == bindparam("owner")
_FINISH = (
    update(_wallets)
    .where(_wallets.c.id.in_(bindparam("wallet_ids", expanding=True)))
    .values(
        next_run_at=bindparam("at"),
        lease_owner=case((_mine, None), else_=_wallets.c.lease_owner),
        lease_until=case((_mine, None), else_=_wallets.c.lease_until),
    )
)
_CHUNK = 1000
"""Wallets per statement that lists them (well within SQLite's limit on variables)."""


def _due_reads(dialect: str) -> tuple[TextClause, TextClause, TextualSelect]:
    """The claim, and the two reads of ``oldest_due``, through the index of due wallets.
    SQLite is told to use it: without statistics its planner picks the status index for
    the status equality, then sorts every activated wallet. On PostgreSQL the claim takes
    its batch's rows through the primary key (``IN (subquery)`` got a hash join over every
    wallet) and skips rows another replica is claiming."""
    source = "wallets INDEXED BY ix_wallets_due" if dialect == "sqlite" else "wallets"
    due = (
        f"SELECT id FROM {source} WHERE {ACTIVATED_ONLY} AND next_run_at <= :now "  # noqa: S608
        "AND (lease_owner IS NULL OR lease_until < :now) ORDER BY next_run_at, id LIMIT :limit"
    )
    if dialect == "postgresql":
        claiming = f"id = ANY(ARRAY({due} FOR UPDATE SKIP LOCKED))"
    else:
        claiming = f"id IN ({due})"
    claim = text(
        "UPDATE wallets SET lease_owner = :owner, lease_until = :until "  # noqa: S608
        f"WHERE {claiming} RETURNING id"
    )
    activated = f"FROM {source} WHERE {ACTIVATED_ONLY}"
    scheduled = text(f"SELECT min(next_run_at) {activated} AND next_run_at > 0")
    unscheduled = text(
        f"SELECT min(activation_date) AS first {activated} AND next_run_at = 0"
    ).columns(first=UtcDateTime())
    return claim, scheduled, unscheduled


class RunStore:
    """Reads and writes the schedule and protocol pauses, and lists a wallet's runs."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._claim, self._scheduled, self._unscheduled = _due_reads(engine.dialect.name)

    # schedule

    def claim_due(self, now: float, owner: str, lease_until: float, limit: int) -> list[int]:
        """Leases up to ``limit`` activated wallets whose run is due; returns their ids.

        The due wallets are read in the order of the index of due wallets
        (``ix_wallets_due``), which holds only activated ones, so a claim reads about its
        batch whatever the size of the fleet.
        """
        params = {"now": now, "limit": limit, "owner": owner, "until": lease_until}
        with self._engine.begin() as connection:
            claimed = connection.execute(self._claim, params).scalars().all()
        return sorted(claimed)

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
        with Session(self._engine) as session:
            session.execute(
                update(WalletRow)
                .where(col(WalletRow.id) == wallet_id)
                .values(next_run_at=next_run_at)
            )
            session.commit()

    def finish(
        self,
        records: Sequence[Operation],
        next_runs: Sequence[tuple[int, float]],
        owner: str,
    ) -> None:
        """Ends runs of a batch in one transaction: stores ``records`` (runs that moved
        nothing, already closed), sets each wallet's next run and releases the lease
        ``owner`` still holds on it. One statement for the records, and one per next-run
        time (a batch has one) for up to ``_CHUNK`` wallets."""
        wallets_at: dict[float, list[int]] = {}
        for wallet_id, at in next_runs:
            wallets_at.setdefault(at, []).append(wallet_id)
        with self._engine.begin() as connection:
            if records:
                connection.execute(insert(_operations), [new_row_values(r) for r in records])
            for at, wallet_ids in wallets_at.items():
                for start in range(0, len(wallet_ids), _CHUNK):
                    chunk = wallet_ids[start : start + _CHUNK]
                    connection.execute(_FINISH, {"wallet_ids": chunk, "at": at, "owner": owner})

    def runs_of(self, wallet_id: int) -> list[Operation]:
        """A wallet's runs, oldest first."""
        with Session(self._engine) as session:
            rows = session.exec(
                orm_select(OperationRow)
                .where(OperationRow.wallet_id == wallet_id, OperationRow.kind == RUN)
                .order_by(col(OperationRow.started_at))
            ).all()
            return [operation_of(row) for row in rows]

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
