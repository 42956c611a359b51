"""Chain totals (``domain.books.aggregates``): each commit's change (derived by the books,
``domain.books.effects``) applied in the commit's transaction, read in two small queries
whatever the number of wallets, and replaced by a recomputation on an operator's request.

One table, ``chain_totals``, holds both kinds of key: a token's totals (``protocol``
empty) and a token's totals in one protocol (``wallets`` and ``amount`` only), so a
commit writes them in one statement.

**Exact and safe under replicas.** A key's totals are spread over ``STRIPES`` rows; a
wallet's commit changes row ``wallet id % STRIPES`` of each key it touches, in key order.
On PostgreSQL that is one ``INSERT … ON CONFLICT DO UPDATE SET x = x + excluded.x``:
NUMERIC arithmetic, exact, and atomic under concurrent commits (the row lock is held to
the commit, so concurrent writers of the same stripe queue; of different stripes,
never). SQLite keeps amounts as decimal text, which its ``+`` would turn into a float; its
commits are serialized by the database's one write lock, which the commit holds from its
first write (the wallet's row), so there the new values are computed in Python from the
rows read under that lock.

A batch of commits (``storage.journals``) applies the sum of its wallets' changes, by
stripe, in one statement.

The totals are applied before the events' advisory lock (``storage.events``), so that
lock is still taken last.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, delete, func, insert, select, text
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from yieldagent.domain.books.aggregates import (
    FirstDeposit,
    Standing,
    StoredWallet,
    TokenTotals,
    Totals,
    WalletFacts,
)
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.books.wallets import DepositRecord
from yieldagent.storage.db import chunks, one_of
from yieldagent.storage.tables import (
    ChainTotalsRow,
    DepositRow,
    TransactionRow,
    WalletRow,
    WalletScheduleRow,
)

_totals = ChainTotalsRow.__table__  # type: ignore[attr-defined]
_wallets = WalletRow.__table__  # type: ignore[attr-defined]
_deposits = DepositRow.__table__  # type: ignore[attr-defined]
_transactions = TransactionRow.__table__  # type: ignore[attr-defined]
_schedule = WalletScheduleRow.__table__  # type: ignore[attr-defined]

_KEYS = ("chain_id", "token", "protocol", "stripe")
_FIGURES = (
    "wallets",
    "amount",
    "active_wallets",
    "apr_units",
    "deposited",
    "first_wallets",
    "first_deposited",
    "transactions",
)
_STORED_AS = {"held_wallets": "wallets", "held": "amount"}
"""TokenTotals' figures by column: its holding wallets and what they hold are a
protocol row's ``wallets`` and ``amount`` columns."""
_TOKEN_FIGURES = tuple((f.name, _STORED_AS.get(f.name, f.name)) for f in fields(TokenTotals))
assert {column for _, column in _TOKEN_FIGURES} == set(_FIGURES)

_STANDINGS = (
    select(
        _wallets.c.id,
        _wallets.c.version,
        _wallets.c.status,
        _wallets.c.token,
        _wallets.c.idle,
        _wallets.c.allocation,
        _wallets.c.current_apr,
        _schedule.c.lease_owner,
    )
    .select_from(_wallets.outerjoin(_schedule, _schedule.c.wallet_id == _wallets.c.id))
    .where(one_of(_wallets.c.id, "wallet_ids"))
)
_ranked = (
    select(
        _deposits.c.wallet_id,
        _deposits.c.token,
        _deposits.c.amount,
        _deposits.c.date,
        func.row_number()
        .over(partition_by=_deposits.c.wallet_id, order_by=(_deposits.c.date, _deposits.c.id))
        .label("place"),
    )
    .where(one_of(_deposits.c.wallet_id, "wallet_ids"))
    .subquery()
)
_FIRST_DEPOSITS = select(
    _ranked.c.wallet_id, _ranked.c.token, _ranked.c.amount, _ranked.c.date
).where(_ranked.c.place == 1)
_CHAIN_ROWS = select(_totals).where(_totals.c.chain_id == bindparam("chain_id"))
_STRIPE_ROWS = select(_totals).where(
    _totals.c.chain_id == bindparam("chain_id"),
    one_of(_totals.c.stripe, "stripes"),
)


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _standing(row: Any) -> Standing:
    return Standing(
        row.token,
        WalletStatus(row.status),
        row.idle,
        tuple((k, int(v)) for k, v in json.loads(row.allocation).items()),
        row.current_apr,
    )


def stored_wallets(connection: Connection, wallet_ids: Sequence[int]) -> dict[int, StoredWallet]:
    """The stored wallets' versions, standings and lease owners, by id."""
    found: dict[int, StoredWallet] = {}
    for ids in chunks(wallet_ids):
        for row in connection.execute(_STANDINGS, {"wallet_ids": ids}):
            found[row.id] = StoredWallet(row.version, _standing(row), row.lease_owner)
    return found


def first_deposits(connection: Connection, wallet_ids: Sequence[int]) -> dict[int, FirstDeposit]:
    """The stored first deposits (earliest date, then first booked) of those of
    ``wallet_ids`` that have one, by wallet id."""
    found: dict[int, FirstDeposit] = {}
    for ids in chunks(wallet_ids):
        for row in connection.execute(_FIRST_DEPOSITS, {"wallet_ids": ids}):
            found[row.wallet_id] = FirstDeposit(row.token, row.amount, _utc(row.date))
    return found


def _rows(chain_id: int, stripe: int, totals: Totals) -> list[dict[str, Any]]:
    """The table's rows of ``totals`` (for one stripe), in key order."""
    rows = [
        {"chain_id": chain_id, "token": token, "protocol": "", "stripe": stripe}
        | {column: getattr(figures, name) for name, column in _TOKEN_FIGURES}
        for token, figures in totals.tokens.items()
    ]
    zero = dict.fromkeys(_FIGURES, 0)
    rows += [
        {"chain_id": chain_id, "token": token, "protocol": protocol, "stripe": stripe}
        | zero
        | {"wallets": placed.wallets, "amount": placed.amount}
        for (protocol, token), placed in totals.protocols.items()
    ]
    return sorted(rows, key=lambda row: (row["token"], row["protocol"]))


_ARRAY_TYPES = {
    "chain_id": "integer",
    "token": "varchar",
    "protocol": "varchar",
    "stripe": "integer",
    "wallets": "bigint",
    "amount": "numeric",
    "active_wallets": "bigint",
    "apr_units": "numeric",
    "deposited": "numeric",
    "first_wallets": "bigint",
    "first_deposited": "numeric",
    "transactions": "bigint",
}
_COLUMNS = (*_KEYS, *_FIGURES)
assert set(_ARRAY_TYPES) == set(_COLUMNS)
# PostgreSQL: one statement and one round trip for every row of the change (one array
# per column); each figure adds the row's change to the stored one. Built from the
# constant column names above only.
_POSTGRES_UPSERT = text(
    f"INSERT INTO chain_totals ({', '.join(_COLUMNS)}) SELECT * FROM unnest("  # noqa: S608
    + ", ".join(f"CAST(:{c} AS {_ARRAY_TYPES[c]}[])" for c in _COLUMNS)
    + f") ON CONFLICT ({', '.join(_KEYS)}) DO UPDATE SET "
    + ", ".join(f"{c} = chain_totals.{c} + excluded.{c}" for c in _FIGURES)
)
# SQLite: each figure takes the row's new value (computed from the stored one).
_sqlite_upsert = sqlite_insert(_totals)
_SQLITE_UPSERT = _sqlite_upsert.on_conflict_do_update(
    index_elements=list(_KEYS), set_={name: _sqlite_upsert.excluded[name] for name in _FIGURES}
)


def _as_arrays(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {
        column: [
            Decimal(row[column]) if _ARRAY_TYPES[column] == "numeric" else row[column]
            for row in rows
        ]
        for column in _COLUMNS
    }


def apply_changes(connection: Connection, deltas: Mapping[tuple[int, int], Totals]) -> None:
    """Adds each of ``deltas`` (by chain id and stripe) to the chain's totals, in the
    caller's transaction: one statement on PostgreSQL (rows in key order, then stripe, so
    concurrent writers lock them in one order); on SQLite, a read of the stripes per chain
    and one write."""
    rows = sorted(
        (row for (chain, stripe), delta in deltas.items() for row in _rows(chain, stripe, delta)),
        key=lambda row: (row["chain_id"], row["token"], row["protocol"], row["stripe"]),
    )
    if not rows:
        return
    if connection.dialect.name == "postgresql":
        connection.execute(_POSTGRES_UPSERT, _as_arrays(rows))
        return
    # SQLite: new values from the rows read under its lock
    stored: dict[tuple[int, str, str, int], Any] = {}
    for chain_id in sorted({chain for chain, _ in deltas}):
        stripes = sorted({stripe for chain, stripe in deltas if chain == chain_id})
        params = {"chain_id": chain_id, "stripes": stripes}
        for found in connection.execute(_STRIPE_ROWS, params):
            stored[(found.chain_id, found.token, found.protocol, found.stripe)] = found
    for row in rows:
        old = stored.get((row["chain_id"], row["token"], row["protocol"], row["stripe"]))
        if old is not None:
            for name in _FIGURES:
                row[name] += getattr(old, name)
    connection.execute(_SQLITE_UPSERT, rows)


def _totals_of(rows: Iterable[Any]) -> Totals:
    totals = Totals()
    for row in rows:
        if row.protocol:
            placed = totals.protocol(row.protocol, row.token)
            placed.wallets += row.wallets
            placed.amount += row.amount
            continue
        token = totals.token(row.token)
        for name, column in _TOKEN_FIGURES:
            setattr(token, name, getattr(token, name) + getattr(row, column))
    return totals.pruned()


def read_totals(engine: Engine, chain_id: int) -> Totals:
    """The chain's totals: its stripes summed (at most ``STRIPES`` rows per key)."""
    with engine.connect() as connection:
        return chain_totals(connection, chain_id)


def chain_totals(connection: Connection, chain_id: int) -> Totals:
    """A chain's stored totals (its stripes summed), read on ``connection``."""
    return _totals_of(connection.execute(_CHAIN_ROWS, {"chain_id": chain_id}))


def wallet_facts(connection: Connection) -> list[WalletFacts]:
    """Every stored wallet's standing and history, as its chain's totals count them."""
    counts: dict[int, int] = dict(
        connection.execute(
            select(_transactions.c.wallet_id, func.count()).group_by(_transactions.c.wallet_id)
        ).all()
    )
    deposits: dict[int, list[DepositRecord]] = defaultdict(list)
    for row in connection.execute(
        select(
            _deposits.c.wallet_id, _deposits.c.token, _deposits.c.amount, _deposits.c.date
        ).order_by(_deposits.c.wallet_id, _deposits.c.date, _deposits.c.id)
    ):
        deposits[row.wallet_id].append(
            DepositRecord(row.amount, row.token, None, None, _utc(row.date))
        )
    return [
        WalletFacts(
            row.chain_id,
            row.id,
            _standing(row),
            tuple(deposits.get(row.id, ())),
            counts.get(row.id, 0),
        )
        for row in connection.execute(
            select(
                _wallets.c.id,
                _wallets.c.chain_id,
                _wallets.c.status,
                _wallets.c.token,
                _wallets.c.idle,
                _wallets.c.allocation,
                _wallets.c.current_apr,
            )
        )
    ]


def replace_totals(connection: Connection, totals: Mapping[tuple[int, int], Totals]) -> None:
    """Replaces every chain's stored totals with ``totals`` (by chain id and stripe)."""
    connection.execute(delete(_totals))
    rows = [
        row
        for (chain_id, stripe), part in sorted(totals.items())
        for row in _rows(chain_id, stripe, part)
    ]
    if rows:
        connection.execute(insert(_totals), rows)


def totalled_chains(connection: Connection) -> list[int]:
    """The chains that have stored totals."""
    return sorted(row.chain_id for row in connection.execute(select(_totals.c.chain_id).distinct()))
