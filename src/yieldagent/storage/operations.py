"""Money operations (agent runs among them): the repository behind
``domain.books.operations.OperationRepository``.

Steps are kept as a JSON list on the operation's row, amounts as decimal strings, so a
step is one small UPDATE when it is planned and when it is mined.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, func, insert, or_, update
from sqlalchemy import select as select_core
from sqlmodel import Session, col, select

from yieldagent.domain.books.accounting import WithdrawalSplit
from yieldagent.domain.books.operations import (
    OPEN,
    Executed,
    Operation,
    OperationKind,
    OperationStatus,
    Step,
    StepAction,
)
from yieldagent.domain.pagination import PageRequest
from yieldagent.storage.bulk import update_many
from yieldagent.storage.db import chunks, one_of
from yieldagent.storage.tables import OperationRow, WalletRow, WalletScheduleRow

_STUCK_STATES = ("activating", "running", "deactivating")
_operations = OperationRow.__table__  # type: ignore[attr-defined]
_STATUSES = select_core(_operations.c.id, _operations.c.status).where(
    one_of(_operations.c.id, "ids")
)
_OPEN_ON = (
    select_core(_operations)
    .where(
        one_of(_operations.c.wallet_id, "wallet_ids"),
        _operations.c.status.in_(sorted(OPEN)),
    )
    .order_by(_operations.c.started_at, _operations.c.id)
)


def _split(data: dict[str, str] | None) -> WithdrawalSplit | None:
    return None if data is None else WithdrawalSplit.from_json(data)


def _step(data: dict[str, Any]) -> Step:
    return Step(
        action=StepAction(data["action"]),
        token=data.get("token", ""),
        amount=int(data["amount"]),
        protocol=data.get("protocol", ""),
        recipient=data.get("recipient", ""),
        token_out=data.get("token_out", ""),
        min_out=int(data.get("min_out", 0)),
        split=_split(data.get("split")),
        apr=data.get("apr"),
        tx_hash=data.get("tx_hash"),
        log_index=data.get("log_index", 0),
        block_number=data.get("block_number"),
        timestamp=data.get("timestamp"),
        abandoned=data.get("abandoned", False),
        whole=data.get("whole", False),
    )


def _step_json(step: Step) -> dict[str, Any]:
    data: dict[str, Any] = {"action": step.action, "token": step.token, "amount": str(step.amount)}
    optional: dict[str, Any] = {
        "protocol": step.protocol,
        "recipient": step.recipient,
        "token_out": step.token_out,
        "min_out": str(step.min_out) if step.min_out else None,
        "apr": step.apr,
        "tx_hash": step.tx_hash,
        "log_index": step.log_index or None,
        "block_number": step.block_number,
        "timestamp": step.timestamp,
        "abandoned": step.abandoned,
        "whole": step.whole,
    }
    data.update({name: value for name, value in optional.items() if value})
    if step.split is not None:
        data["split"] = step.split.as_json()
    return data


def steps_json(steps: Sequence[Step]) -> str:
    """The JSON column value of a list of steps."""
    return json.dumps([_step_json(s) for s in steps], separators=(",", ":"))


def operation_of(row: Any) -> Operation:
    """An Operation from an OperationRow."""
    return Operation(
        id=row.id,
        wallet_id=row.wallet_id,
        chain_id=row.chain_id,
        kind=OperationKind(row.kind),
        status=OperationStatus(row.status),
        steps=tuple(_step(s) for s in json.loads(row.steps)),
        start_block=row.start_block,
        owner=row.owner,
        params=json.loads(row.params),
        key=row.idempotency_key,
        result=json.loads(row.result) if row.result is not None else None,
        reason=row.reason,
        retry_at=row.retry_at,
    )


def operation_json(operation: Operation) -> dict[str, Any]:
    """An operation as operators read it (``yieldagent ops list``)."""
    return {
        "id": operation.id,
        "wallet_id": operation.wallet_id,
        "chain_id": operation.chain_id,
        "kind": operation.kind,
        "status": operation.status,
        "reason": operation.reason,
        "retry_at": operation.retry_at,
        "start_block": operation.start_block,
        "owner": operation.owner,
        "params": operation.params,
        "steps": [_step_json(step) for step in operation.steps],
    }


def operation_values(operation: Operation) -> dict[str, Any]:
    """The mutable columns of an operation's row."""
    closed = not operation.open
    return {
        "status": operation.status,
        "steps": steps_json(operation.steps),
        "result": None if operation.result is None else json.dumps(operation.result),
        "reason": operation.reason,
        "retry_at": operation.retry_at,
        "finished_at": datetime.now(UTC) if closed else None,
    }


def new_row_values(operation: Operation, now: datetime | None = None) -> dict[str, Any]:
    """Every column of a new operation's row (for a Core insert of many at once)."""
    now = now or datetime.now(UTC)
    return {
        "id": operation.id,
        "wallet_id": operation.wallet_id,
        "chain_id": operation.chain_id,
        "kind": operation.kind,
        "params": json.dumps(operation.params),
        "idempotency_key": operation.key,
        "start_block": operation.start_block,
        "owner": operation.owner,
        "started_at": now,
        **operation_values(operation),
        "finished_at": None if operation.open else now,
    }


def _new_row(operation: Operation) -> OperationRow:
    return OperationRow(**new_row_values(operation))


class OperationStore:
    """Reads and writes operations."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def start(self, operation: Operation) -> None:
        with Session(self._engine) as session:
            session.add(_new_row(operation))
            session.commit()

    def save(self, operation: Operation) -> None:
        with self._engine.begin() as connection:
            updated = connection.execute(
                update(OperationRow)
                .where(col(OperationRow.id) == operation.id)
                .values(**operation_values(operation))
            )
            if updated.rowcount == 0:  # a new operation: its intent
                connection.execute(insert(OperationRow), [new_row_values(operation)])

    def save_steps(self, operations: Sequence[Operation]) -> None:
        if not operations:
            return
        with self._engine.begin() as connection:
            steps = [{"id": op.id, "steps": steps_json(op.steps)} for op in operations]
            update_many(connection, _operations, ("id",), steps)

    def get(self, operation_id: str) -> Operation | None:
        with Session(self._engine) as session:
            row = session.get(OperationRow, operation_id)
            return operation_of(row) if row is not None else None

    def by_key(self, key: str) -> Operation | None:
        with Session(self._engine) as session:
            row = session.exec(
                select(OperationRow).where(OperationRow.idempotency_key == key)
            ).first()
            return operation_of(row) if row is not None else None

    def open_on(self, wallet_id: int) -> list[Operation]:
        return self.open_on_many([wallet_id])[wallet_id]

    def open_on_many(self, wallet_ids: Sequence[int]) -> dict[int, list[Operation]]:
        found: dict[int, list[Operation]] = {wallet_id: [] for wallet_id in wallet_ids}
        with self._engine.connect() as connection:
            for ids in chunks(sorted(found)):
                for row in connection.execute(_OPEN_ON, {"wallet_ids": ids}):
                    found[row.wallet_id].append(operation_of(row))
        return found

    def statuses(self, operation_ids: Sequence[str]) -> dict[str, OperationStatus]:
        found: dict[str, OperationStatus] = {}
        with self._engine.connect() as connection:
            for ids in chunks(sorted(set(operation_ids))):
                for row in connection.execute(_STATUSES, {"ids": ids}):
                    found[row.id] = OperationStatus(row.status)
        return found

    def abandoned(self, now: float) -> list[Operation]:
        lapsed = or_(
            col(WalletScheduleRow.lease_owner).is_(None), col(WalletScheduleRow.lease_until) < now
        )
        due = or_(
            col(OperationRow.status) != OperationStatus.WAITING, col(OperationRow.retry_at) <= now
        )
        with Session(self._engine) as session:
            rows = session.exec(
                select(OperationRow)
                .join(WalletScheduleRow, col(WalletScheduleRow.wallet_id) == OperationRow.wallet_id)
                .where(col(OperationRow.status).in_(OPEN), lapsed, due)
                .order_by(col(OperationRow.started_at))
            ).all()
            return [operation_of(row) for row in rows]

    def of_wallet(self, wallet_id: int) -> list[Operation]:
        with Session(self._engine) as session:
            rows = session.exec(
                select(OperationRow)
                .where(OperationRow.wallet_id == wallet_id)
                .order_by(col(OperationRow.started_at))
            ).all()
            return [operation_of(row) for row in rows]

    def page_of_wallet(self, wallet_id: int, page: PageRequest) -> tuple[list[Executed], int]:
        started = col(OperationRow.started_at)
        order = (
            (started.desc(), col(OperationRow.id).desc())
            if page.newest_first
            else (started, col(OperationRow.id))
        )
        with Session(self._engine) as session:
            total = session.exec(
                select(func.count())
                .select_from(OperationRow)
                .where(OperationRow.wallet_id == wallet_id)
            ).one()
            rows = session.exec(
                select(OperationRow)
                .where(OperationRow.wallet_id == wallet_id)
                .order_by(*order)
                .offset(page.offset)
                .limit(page.limit)
            ).all()
            return [
                Executed(operation_of(row), row.started_at, row.finished_at) for row in rows
            ], total

    def executed(self, operation_id: str) -> Executed | None:
        with Session(self._engine) as session:
            row = session.get(OperationRow, operation_id)
            if row is None:
                return None
            return Executed(operation_of(row), row.started_at, row.finished_at)

    def release_key(self, operation_id: str) -> None:
        with Session(self._engine) as session:
            session.execute(
                update(OperationRow)
                .where(col(OperationRow.id) == operation_id)
                .values(idempotency_key=None)
            )
            session.commit()

    def stuck(self, now: float) -> list[int]:
        open_ops = select(OperationRow.wallet_id).where(col(OperationRow.status).in_(OPEN))
        with Session(self._engine) as session:
            rows = session.exec(
                select(WalletRow.id)
                .join(WalletScheduleRow, col(WalletScheduleRow.wallet_id) == WalletRow.id)
                .where(
                    col(WalletRow.status).in_(_STUCK_STATES),
                    or_(
                        col(WalletScheduleRow.lease_owner).is_(None),
                        col(WalletScheduleRow.lease_until) < now,
                    ),
                    col(WalletRow.id).not_in(open_ops),
                )
            ).all()
            return [wallet_id for wallet_id in rows if wallet_id is not None]

    def listing(self, stuck_only: bool, now: float) -> list[Operation]:
        """Open operations (for operators), oldest first; with ``stuck_only``, those whose
        process died or that wait for funds."""
        if stuck_only:
            return self.abandoned(now) + self._waiting_not_due(now)
        with Session(self._engine) as session:
            rows = session.exec(
                select(OperationRow)
                .where(col(OperationRow.status).in_(OPEN))
                .order_by(col(OperationRow.started_at))
            ).all()
            return [operation_of(row) for row in rows]

    def _waiting_not_due(self, now: float) -> list[Operation]:
        with Session(self._engine) as session:
            rows = session.exec(
                select(OperationRow).where(
                    OperationRow.status == OperationStatus.WAITING, col(OperationRow.retry_at) > now
                )
            ).all()
            return [operation_of(row) for row in rows]
