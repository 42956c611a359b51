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
    ColumnElement,
    Engine,
    any_,
    bindparam,
    case,
    func,
    insert,
    or_,
    select,
    text,
    update,
)
from sqlmodel import Session, col
from sqlmodel import select as orm_select

from yieldagent.domain.operations import RUN, Operation
from yieldagent.storage.operations import new_row_values, operation_of
from yieldagent.storage.tables import ACTIVATED_ONLY, OperationRow, ProtocolPauseRow, WalletRow

_ACTIVATED = text(f"wallets.{ACTIVATED_ONLY}")
"""Activated wallets only, as the index of due wallets states it."""

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


class RunStore:
    """Reads and writes the schedule and protocol pauses, and lists a wallet's runs."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    # schedule

    def claim_due(self, now: float, owner: str, lease_until: float, limit: int) -> list[int]:
        """Leases up to ``limit`` activated wallets whose run is due; returns their ids.

        The due wallets are read in the order of the index of due wallets
        (``ix_wallets_due``), which holds only activated ones, so a claim reads about its
        batch whatever the size of the fleet.
        """
        due = (
            select(WalletRow.id)  # type: ignore[call-overload]
            .where(
                _ACTIVATED,
                col(WalletRow.next_run_at) <= now,
                or_(col(WalletRow.lease_owner).is_(None), col(WalletRow.lease_until) < now),
            )
            .order_by(col(WalletRow.next_run_at), col(WalletRow.id))
            .limit(limit)
        )
        claiming: ColumnElement[bool] = col(WalletRow.id).in_(due.scalar_subquery())
        if self._engine.dialect.name == "postgresql":
            # The batch's rows through the primary key: ``IN (subquery)`` got a hash join
            # over every wallet.
            claiming = col(WalletRow.id) == any_(
                func.array(due.with_for_update(skip_locked=True).scalar_subquery())
            )
        with Session(self._engine) as session:
            claimed = (
                session.execute(
                    update(WalletRow)
                    .where(claiming)
                    .values(lease_owner=owner, lease_until=lease_until)
                    .returning(col(WalletRow.id))
                )
                .scalars()
                .all()
            )
            session.commit()
        return sorted(claimed)

    def oldest_due(self) -> float | None:
        """Since when (unix seconds) the most overdue activated wallet's run has been due;
        None if there is no activated wallet. For the overdue metric, on each scrape.

        A wallet never scheduled yet (``next_run_at`` 0: due at once) has been due since
        its activation. Two reads, both through the index of due wallets.
        """
        activated = _ACTIVATED
        scheduled = select(func.min(WalletRow.next_run_at)).where(
            activated, col(WalletRow.next_run_at) > 0
        )
        unscheduled = select(func.min(WalletRow.activation_date)).where(
            activated, col(WalletRow.next_run_at) == 0
        )
        with Session(self._engine) as session:
            oldest = session.execute(scheduled).scalar()
            first_activation = session.execute(unscheduled).scalar()
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
