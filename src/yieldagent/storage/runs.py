"""The agent's runs and schedule: claiming due wallets, run records, protocol pauses.

Claiming is how several replicas share the work. One statement marks a batch of due,
unleased wallets as leased by this process; on PostgreSQL the inner selection skips rows
another replica is claiming at that moment (``FOR UPDATE SKIP LOCKED``); SQLite runs one
writer at a time. A wallet is therefore never run by two processes at once, and none is
skipped: a claimed wallet's next run is moved while its lease is still held, once its run
has ended; if the process dies first, the wallet is due again when the lease lapses.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy import Engine, or_, select, update
from sqlmodel import Session, col
from sqlmodel import select as orm_select

from yieldagent.domain.agent import RunRecord
from yieldagent.domain.optimizer import Move
from yieldagent.storage.tables import (
    AgentRunRow,
    ProtocolPauseRow,
    TransactionRow,
    WalletRow,
)

ACTIVATED = "activated"


def _record(row: AgentRunRow) -> RunRecord:
    moves = tuple(Move(m["action"], m["protocol"], int(m["amount"])) for m in json.loads(row.plan))
    return RunRecord(
        row.id,
        row.wallet_id,
        row.chain_id,
        row.status,
        moves,
        row.steps_done,
        row.start_block,
        row.owner,
    )


class RunStore:
    """Reads and writes runs, the schedule and protocol pauses."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    # schedule

    def claim_due(self, now: float, owner: str, lease_until: float, limit: int) -> list[int]:
        """Leases up to ``limit`` activated wallets whose run is due; returns their ids."""
        due = (
            select(WalletRow.id)  # type: ignore[call-overload]
            .where(
                col(WalletRow.status) == ACTIVATED,
                col(WalletRow.next_run_at) <= now,
                or_(col(WalletRow.lease_owner).is_(None), col(WalletRow.lease_until) < now),
            )
            .order_by(col(WalletRow.next_run_at), col(WalletRow.id))
            .limit(limit)
        )
        if self._engine.dialect.name == "postgresql":
            due = due.with_for_update(skip_locked=True)
        with Session(self._engine) as session:
            claimed = (
                session.execute(
                    update(WalletRow)
                    .where(col(WalletRow.id).in_(due.scalar_subquery()))
                    .values(lease_owner=owner, lease_until=lease_until)
                    .returning(col(WalletRow.id))
                )
                .scalars()
                .all()
            )
            session.commit()
        return sorted(claimed)

    def renew(self, wallet_ids: Sequence[int], owner: str, until: float) -> None:
        """Extends to ``until`` the leases ``owner`` still holds among ``wallet_ids``."""
        with Session(self._engine) as session:
            session.execute(
                update(WalletRow)
                .where(col(WalletRow.id).in_(wallet_ids), col(WalletRow.lease_owner) == owner)
                .values(lease_until=until)
            )
            session.commit()

    def schedule(self, wallet_id: int, next_run_at: float) -> None:
        """Sets when the wallet runs next."""
        with Session(self._engine) as session:
            session.execute(
                update(WalletRow)
                .where(col(WalletRow.id) == wallet_id)
                .values(next_run_at=next_run_at)
            )
            session.commit()

    # runs

    def start(self, run: RunRecord, reason: str | None = None) -> None:
        """Stores a run and its plan, before any step executes; with ``reason``, a run
        that is already over."""
        plan = json.dumps(
            [
                {"action": m.action, "protocol": m.protocol, "amount": str(m.amount)}
                for m in run.moves
            ]
        )
        with Session(self._engine) as session:
            session.add(
                AgentRunRow(
                    id=run.id,
                    wallet_id=run.wallet_id,
                    chain_id=run.chain_id,
                    status=run.status,
                    plan=plan,
                    steps_done=run.steps_done,
                    start_block=run.start_block,
                    owner=run.owner,
                    started_at=datetime.now(UTC),
                    reason=reason or "",
                    finished_at=datetime.now(UTC) if reason is not None else None,
                )
            )
            session.commit()

    def step_done(self, run_id: str, steps_done: int) -> None:
        """Records that the first ``steps_done`` steps of the plan executed."""
        with Session(self._engine) as session:
            session.execute(
                update(AgentRunRow)
                .where(col(AgentRunRow.id) == run_id)
                .values(steps_done=steps_done)
            )
            session.commit()

    def finish(self, run_id: str, status: str, reason: str) -> None:
        """Closes a run."""
        with Session(self._engine) as session:
            session.execute(
                update(AgentRunRow)
                .where(col(AgentRunRow.id) == run_id)
                .values(status=status, reason=reason, finished_at=datetime.now(UTC))
            )
            session.commit()

    def unfinished(self, now: float) -> list[RunRecord]:
        """Runs still executing whose wallet's lease has expired: their process died."""
        with Session(self._engine) as session:
            rows = session.exec(
                orm_select(AgentRunRow)
                .join(WalletRow, col(WalletRow.id) == AgentRunRow.wallet_id)
                .where(
                    col(AgentRunRow.status) == "executing",
                    or_(col(WalletRow.lease_owner).is_(None), col(WalletRow.lease_until) < now),
                )
            ).all()
            return [_record(row) for row in rows]

    def stuck(self, now: float) -> list[int]:
        """Wallets left ``running`` without a live lease: a process died mid-run."""
        with Session(self._engine) as session:
            rows = session.exec(
                orm_select(WalletRow.id).where(
                    col(WalletRow.status) == "running",
                    or_(col(WalletRow.lease_owner).is_(None), col(WalletRow.lease_until) < now),
                )
            ).all()
            return [wallet_id for wallet_id in rows if wallet_id is not None]

    def runs_of(self, wallet_id: int) -> list[RunRecord]:
        """A wallet's runs, oldest first."""
        with Session(self._engine) as session:
            rows = session.exec(
                orm_select(AgentRunRow)
                .where(AgentRunRow.wallet_id == wallet_id)
                .order_by(col(AgentRunRow.started_at))
            ).all()
            return [_record(row) for row in rows]

    def known_hashes(self, wallet_id: int, hashes: Sequence[str]) -> set[str]:
        """Which of ``hashes`` the wallet's history already records."""
        if not hashes:
            return set()
        with Session(self._engine) as session:
            rows = session.exec(
                orm_select(TransactionRow.tx_hash).where(
                    TransactionRow.wallet_id == wallet_id, col(TransactionRow.tx_hash).in_(hashes)
                )
            ).all()
            return set(rows)

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

    def paused(self, chain_id: int) -> frozenset[str]:
        """The protocols paused on ``chain_id``."""
        with Session(self._engine) as session:
            rows = session.exec(
                orm_select(ProtocolPauseRow.protocol).where(ProtocolPauseRow.chain_id == chain_id)
            ).all()
            return frozenset(rows)
