"""Writing journals (``domain.books.wallets.Journal``): the transaction behind
``WalletStore.commit``, ``commit_many`` and ``create``.

A journal arrives complete: the wallet's new state, its records, its operation, and what
the books derived from it (its events, its change of the chain's totals, whether the
wallet's schedule turns on or off: ``domain.books.effects``). This module only writes it.

Journals are written together in one transaction, in a number of statements that does not
grow with theirs (SQLite: plus one UPDATE per wallet): one lock of the wallets' schedule
rows per lease owner; the conditional UPDATE of the wallets (PostgreSQL: one statement for
all of them, from one JSON document, ``storage.bulk``); the schedule's ``active`` flags
that change; one insert per kind of record; one read and up to two writes for the
operations; the chain totals, once, with the summed changes of every journal written (by
stripe); and the events in bulk.

A journal whose owner no longer holds its wallet's lease (``storage.schedule.hold``), or
whose wallet is no longer at the version it was read at, is skipped: nothing of it is
written. The journals of one wallet are taken in turns (its first journal in the first
UPDATE, its second in the next, and so on), each conditional on the version the previous
one leaves; once one of a wallet's journals is not written, its later ones are not either
(their effects were derived from the state it would have left). So a batch writes
exactly what committing its journals one by one would
(``tests/storage/test_wallet_batches.py``).

Locks: a batch takes its wallets' schedule rows first, then the wallets' rows, then the
totals' rows, then the events' lock, as a single commit does. Two batches over the same
wallets could deadlock on PostgreSQL (which aborts one); the agent's batches never share a
wallet, its lease being held by one process.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Integer, String, TextClause, bindparam, select, text, update
from sqlalchemy.sql.dml import Update

from yieldagent.domain.books.aggregates import STRIPES, Totals
from yieldagent.domain.books.operations import Operation
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.books.wallets import Journal, Wallet
from yieldagent.storage.aggregates import apply_changes
from yieldagent.storage.bulk import document, insert_many, recordset, update_many
from yieldagent.storage.db import chunks, one_of
from yieldagent.storage.events import record_events
from yieldagent.storage.operations import new_row_values, operation_values
from yieldagent.storage.schedule import follow_statuses, hold
from yieldagent.storage.tables import (
    DepositRow,
    OperationRow,
    PerformancePointRow,
    RewardRow,
    TransactionRow,
    WalletRow,
    WithdrawalRow,
)

_wallets = WalletRow.__table__  # type: ignore[attr-defined]
_operations = OperationRow.__table__  # type: ignore[attr-defined]
_deposits = DepositRow.__table__  # type: ignore[attr-defined]
_withdrawals = WithdrawalRow.__table__  # type: ignore[attr-defined]
_transactions = TransactionRow.__table__  # type: ignore[attr-defined]
_rewards = RewardRow.__table__  # type: ignore[attr-defined]
_points = PerformancePointRow.__table__  # type: ignore[attr-defined]

_STATE = (
    "status",
    "token",
    "selected_protocols",
    "constraints",
    "principal",
    "allocation",
    "idle",
    "current_apr",
    "valued_at",
    "is_staked",
    "activation_date",
    "last_deactivation_date",
    "last_reactivation_date",
    "synced_block",
    "status_reason",
    "withdrawable",
    "updated_at",
)
"""The wallet columns a commit writes (besides its version)."""


def _wallet_update(expected: bool) -> Update:
    """The conditional UPDATE of a wallet's state: at version ``w_version`` (with
    ``expected``, in status ``w_status``)."""
    conditions = [
        _wallets.c.id == bindparam("w_id"),
        _wallets.c.version == bindparam("w_version"),
    ]
    if expected:
        conditions.append(_wallets.c.status == bindparam("w_status"))
    values = {
        name: bindparam(f"v_{name}", type_=_wallets.c[name].type) for name in (*_STATE, "version")
    }
    return update(_wallets).where(*conditions).values(values)


# Built once: SQLAlchemy caches their compiled form.
_WALLET_UPDATES = {expected: _wallet_update(expected) for expected in (False, True)}
_CONDITIONS = {"w_id": Integer(), "w_version": Integer(), "w_status": String()}


def _postgres_update() -> TextClause:
    """PostgreSQL: the conditional UPDATE of many wallets in one statement, from one JSON
    document of their rows (``bulk.recordset``; ``w_status`` null: not checked). Built from
    the table's column names and types only."""
    columns = {name: _wallets.c[name].type for name in _STATE} | _CONDITIONS
    return text(
        f"UPDATE wallets SET {', '.join(f'{n} = v.{n}' for n in _STATE)}, "  # noqa: S608
        f"version = v.w_version + 1 FROM {recordset(columns)} "
        "WHERE wallets.id = v.w_id AND wallets.version = v.w_version "
        "AND (v.w_status IS NULL OR wallets.status = v.w_status) RETURNING wallets.id"
    )


_POSTGRES_UPDATE = _postgres_update()
_OPERATION_STATUSES = select(_operations.c.id, _operations.c.status).where(
    one_of(_operations.c.id, "ids")
)


def wallet_values(wallet: Wallet) -> dict[str, Any]:
    """The columns of a wallet's state, as a commit writes them."""
    return {
        "status": str(wallet.status),
        "token": wallet.token,
        "selected_protocols": json.dumps(list(wallet.selected_protocols)),
        "constraints": wallet.constraints.to_json(),
        "principal": wallet.principal,
        "allocation": json.dumps({k: str(v) for k, v in wallet.positions.items()}),
        "idle": wallet.idle,
        "current_apr": wallet.current_apr,
        "valued_at": wallet.valued_at,
        "is_staked": wallet.is_staked,
        "activation_date": wallet.activation_date,
        "last_deactivation_date": wallet.last_deactivation_date,
        "last_reactivation_date": wallet.last_reactivation_date,
        "synced_block": wallet.synced_block,
        "status_reason": wallet.status_reason,
        "withdrawable": wallet.withdrawable,
        "updated_at": datetime.now(UTC),
    }


def write(
    connection: Connection, journals: Sequence[Journal], expected: WalletStatus | None = None
) -> tuple[list[bool], int]:
    """Writes ``journals`` in the caller's transaction (with ``expected``, only where the
    stored status is that): which were written, and how many events they recorded.
    Raises IntegrityError when a record was already booked; the caller rolls back."""
    held = hold(connection, [(j.wallet.id, j.owner) for j in journals])
    written = [False] * len(journals)
    refused: set[int] = set()  # wallets one of whose journals was not written
    for turn in _turns(journals):
        # a wallet's later journal was derived from the state its earlier one leaves
        ready = [
            i
            for i in turn
            if (journals[i].wallet.id, journals[i].owner) in held
            and journals[i].wallet.id not in refused
        ]
        updated = _update(connection, [journals[i] for i in ready], expected)
        for index in turn:
            written[index] = index in ready and journals[index].wallet.id in updated
            if not written[index]:
                refused.add(journals[index].wallet.id)
    chosen = [journal for journal, done in zip(journals, written, strict=True) if done]
    # the schedule follows the status (the last written journal of each wallet tells)
    follow_statuses(connection, {j.wallet.id: j.schedule for j in chosen if j.schedule is not None})
    return written, book(connection, chosen)


def book(connection: Connection, journals: Sequence[Journal]) -> int:
    """Writes the records, operations, totals' changes and events of ``journals`` (whose
    wallets are written), in order. Returns how many events were recorded."""
    _save_operations(connection, journals)
    _insert_records(connection, journals)
    deltas: dict[tuple[int, int], Totals] = {}
    for journal in journals:
        if journal.totals:
            key = (journal.wallet.chain_id, journal.wallet.id % STRIPES)
            deltas.setdefault(key, Totals()).add(journal.totals)
    apply_changes(connection, deltas)
    return record_events(
        connection,
        [replace(e, wallet_id=j.wallet.id) for j in journals for e in j.events],
    )


def _turns(journals: Sequence[Journal]) -> list[list[int]]:
    """The journals' indexes in turns: each wallet's first journal in the first turn, its
    second in the second, and so on; each turn in wallet id order."""
    turns: list[list[int]] = []
    seen: dict[int, int] = {}
    for index in sorted(range(len(journals)), key=lambda i: journals[i].wallet.id):
        turn = seen.get(journals[index].wallet.id, 0)
        seen[journals[index].wallet.id] = turn + 1
        if turn == len(turns):
            turns.append([])
        turns[turn].append(index)
    return turns


def _update(
    connection: Connection, journals: Sequence[Journal], expected: WalletStatus | None
) -> set[int]:
    """Writes the state of the journals' wallets (one journal per wallet) where it is
    still at the journal's version (and ``expected`` status); returns the ids
    of the wallets written. PostgreSQL: one statement; SQLite: one per wallet."""
    if not journals:
        return set()
    if connection.dialect.name == "postgresql":
        return _update_postgresql(connection, journals, expected)
    updated = set()
    for journal in journals:
        wallet = journal.wallet
        params = {f"v_{name}": value for name, value in wallet_values(wallet).items()}
        params |= {"v_version": wallet.version + 1, "w_id": wallet.id, "w_version": wallet.version}
        if expected is not None:
            params["w_status"] = str(expected)
        statement = _WALLET_UPDATES[expected is not None]
        if connection.execute(statement, params).rowcount:
            updated.add(wallet.id)
    return updated


def _update_postgresql(
    connection: Connection, journals: Sequence[Journal], expected: WalletStatus | None
) -> set[int]:
    expecting = None if expected is None else str(expected)
    rows = [
        wallet_values(wallet)
        | {"w_id": wallet.id, "w_version": wallet.version, "w_status": expecting}
        for wallet in (j.wallet for j in journals)
    ]
    found = connection.execute(_POSTGRES_UPDATE, {"rows": document(rows)})
    return set(found.scalars())


def _save_operations(connection: Connection, journals: Sequence[Journal]) -> None:
    """Stores the journals' operations (new ones' intents; known ones' steps and status)."""
    operations = [j.operation for j in journals if j.operation is not None]
    if not operations:
        return
    known: dict[str, str] = {}
    for ids in chunks(sorted({o.id for o in operations})):
        for row in connection.execute(_OPERATION_STATUSES, {"ids": ids}):
            known[row.id] = row.status
    new: list[dict[str, Any]] = []
    changed: list[dict[str, Any]] = []
    for journal in journals:
        operation: Operation | None = journal.operation
        if operation is None:
            continue
        if operation.id in known:
            changed.append({"id": operation.id, **operation_values(operation)})
        else:
            new.append(new_row_values(operation))
        known[operation.id] = operation.status
    insert_many(connection, _operations, new)
    update_many(connection, _operations, ("id",), changed)


def _insert_records(connection: Connection, journals: Sequence[Journal]) -> None:
    """One insert per kind of record, of every journal's, in the journals' order."""
    rows: dict[Any, list[dict[str, Any]]] = {
        table: [] for table in (_deposits, _withdrawals, _transactions, _rewards, _points)
    }
    for journal in journals:
        wallet = journal.wallet
        mine = {"wallet_id": wallet.id}
        rows[_deposits] += [
            mine
            | {
                "chain_id": wallet.chain_id,
                "token": d.token,
                "amount": d.amount,
                "tx_hash": d.tx_hash,
                "log_index": d.log_index,
                "block_number": d.block_number,
                "date": d.date,
            }
            for d in journal.deposits
        ]
        rows[_withdrawals] += [
            mine
            | {
                "token": w.token,
                "amount": w.amount,
                "principal": w.principal,
                "yield": w.yield_,
                "fee": w.fee,
                "value": w.value,
                "value_in_usd": w.value_in_usd,
                "tx_hash": w.tx_hash,
                "chain_id": wallet.chain_id,
                "log_index": w.log_index,
                "kind": w.kind,
                "block_number": w.block_number,
                "date": w.date,
            }
            for w in journal.withdrawals
        ]
        rows[_transactions] += [
            mine
            | {
                "action": t.action,
                "status": t.status,
                "token": t.token,
                "amount": t.amount,
                "tx_hash": t.tx_hash,
                "protocol": t.protocol,
                "new_token": t.new_token,
                "amount_out": t.amount_out,
                "apr": t.apr,
                "block_number": t.block_number,
                "log_index": t.log_index,
                "correlation_id": t.correlation_id,
                "date": t.date,
            }
            for t in journal.transactions
        ]
        rows[_rewards] += [
            mine
            | {
                "token": r.token,
                "token_symbol": r.token_symbol,
                "amount": r.amount,
                "decimals": r.decimals,
                "dollar_value": r.dollar_value,
                "tx_hash": r.tx_hash,
                "is_staked": r.is_staked,
                "date": r.date,
            }
            for r in journal.rewards
        ]
        rows[_points] += [
            mine | {"value": p.value, "flow": p.flow, "at": p.at} for p in journal.points
        ]
    for table, values in rows.items():
        insert_many(connection, table, values)
