"""Chain totals (``domain.aggregates``): applied in the transaction of each wallet commit,
read in two small queries whatever the number of wallets, and rebuilt from the ledger.

**Exact and safe under replicas.** A key's totals are spread over ``STRIPES`` rows; a
wallet's commit changes row ``wallet id % STRIPES`` of each key it touches, in key order.
On PostgreSQL that is one ``INSERT … ON CONFLICT DO UPDATE SET x = x + excluded.x`` per
table: NUMERIC arithmetic, exact, and atomic under concurrent commits (the row lock is
held to the commit, so concurrent writers of the same stripe queue; of different stripes,
never). SQLite keeps amounts as decimal text, which its ``+`` would turn into a float; its
commits are serialized by the database's one write lock, which the commit holds from its
first write (the wallet's row), so there the new values are computed in Python from the
rows read under that lock.

The totals are applied before the events' advisory lock (``storage.events``), so that
lock is still taken last.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, delete, func, insert, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from yieldagent.domain.aggregates import (
    STRIPES,
    FirstDeposit,
    ProtocolTotals,
    Standing,
    TokenTotals,
    Totals,
    contribution,
    first_of,
    history,
)
from yieldagent.domain.wallet_states import WalletStatus
from yieldagent.domain.wallets import DepositRecord
from yieldagent.storage.tables import (
    DepositRow,
    ProtocolTotalsRow,
    TokenTotalsRow,
    TransactionRow,
    WalletRow,
)

_tokens = TokenTotalsRow.__table__  # type: ignore[attr-defined]
_protocols = ProtocolTotalsRow.__table__  # type: ignore[attr-defined]
_wallets = WalletRow.__table__  # type: ignore[attr-defined]
_deposits = DepositRow.__table__  # type: ignore[attr-defined]
_transactions = TransactionRow.__table__  # type: ignore[attr-defined]

TOKEN_FIGURES = tuple(f.name for f in fields(TokenTotals))
PROTOCOL_FIGURES = tuple(f.name for f in fields(ProtocolTotals))

_STANDING = select(
    _wallets.c.version,
    _wallets.c.status,
    _wallets.c.token,
    _wallets.c.idle,
    _wallets.c.allocation,
    _wallets.c.current_apr,
).where(_wallets.c.id == bindparam("wallet_id"))
_FIRST_DEPOSIT = (
    select(_deposits.c.token, _deposits.c.amount, _deposits.c.date)
    .where(_deposits.c.wallet_id == bindparam("wallet_id"))
    .order_by(_deposits.c.date, _deposits.c.id)
    .limit(1)
)
_TOKEN_ROWS = select(_tokens).where(_tokens.c.chain_id == bindparam("chain_id"))
_PROTOCOL_ROWS = select(_protocols).where(_protocols.c.chain_id == bindparam("chain_id"))


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


def stored_standing(session: Session, wallet_id: int) -> tuple[int, Standing] | None:
    """The stored wallet's version and standing, read in the caller's transaction."""
    row = session.execute(_STANDING, {"wallet_id": wallet_id}).first()
    return None if row is None else (row.version, _standing(row))


def first_deposit(session: Session, wallet_id: int) -> FirstDeposit | None:
    """The wallet's stored first deposit (earliest date, then first booked)."""
    row = session.execute(_FIRST_DEPOSIT, {"wallet_id": wallet_id}).first()
    return None if row is None else FirstDeposit(row.token, row.amount, _utc(row.date))


def _token_rows(chain_id: int, stripe: int, totals: Totals) -> list[dict[str, Any]]:
    return [
        {"chain_id": chain_id, "token": token, "stripe": stripe}
        | {name: getattr(figures, name) for name in TOKEN_FIGURES}
        for token, figures in sorted(totals.tokens.items())
    ]


def _protocol_rows(chain_id: int, stripe: int, totals: Totals) -> list[dict[str, Any]]:
    return [
        {"chain_id": chain_id, "protocol": protocol, "token": token, "stripe": stripe}
        | {name: getattr(figures, name) for name in PROTOCOL_FIGURES}
        for (protocol, token), figures in sorted(totals.protocols.items())
    ]


def apply_changes(session: Session, chain_id: int, wallet_id: int, delta: Totals) -> None:
    """Adds ``delta`` to the chain's totals (the wallet's stripe), in the caller's
    transaction."""
    if not delta:
        return
    stripe = wallet_id % STRIPES
    tables = (
        (
            _tokens,
            ("chain_id", "token", "stripe"),
            TOKEN_FIGURES,
            _token_rows(chain_id, stripe, delta),
        ),
        (
            _protocols,
            ("chain_id", "protocol", "token", "stripe"),
            PROTOCOL_FIGURES,
            _protocol_rows(chain_id, stripe, delta),
        ),
    )
    postgres = session.get_bind().dialect.name == "postgresql"
    for table, keys, figures, rows in tables:
        if not rows:
            continue
        if postgres:
            upsert = pg_insert(table).values(rows)
            session.execute(
                upsert.on_conflict_do_update(
                    index_elements=list(keys),
                    set_={name: table.c[name] + upsert.excluded[name] for name in figures},
                )
            )
            continue
        stored = {
            tuple(row._mapping[k] for k in keys): row._mapping
            for row in session.execute(
                select(table).where(table.c.chain_id == chain_id, table.c.stripe == stripe)
            )
        }
        for row in rows:
            old = stored.get(tuple(row[k] for k in keys))
            if old is not None:
                for name in figures:
                    row[name] += old[name]
        upsert_sqlite = sqlite_insert(table).values(rows)
        session.execute(
            upsert_sqlite.on_conflict_do_update(
                index_elements=list(keys),
                set_={name: upsert_sqlite.excluded[name] for name in figures},
            )
        )


def _totals_of(token_rows: Iterable[Any], protocol_rows: Iterable[Any]) -> Totals:
    totals = Totals()
    for row in token_rows:
        token = totals.token(row.token)
        for name in TOKEN_FIGURES:
            setattr(token, name, getattr(token, name) + getattr(row, name))
    for row in protocol_rows:
        placed = totals.protocol(row.protocol, row.token)
        placed.wallets += row.wallets
        placed.amount += row.amount
    return totals.pruned()


def read_totals(engine: Engine, chain_id: int) -> Totals:
    """The chain's totals: its stripes summed (at most ``STRIPES`` rows per key)."""
    with engine.connect() as connection:
        return chain_totals(connection, chain_id)


def recompute(connection: Connection) -> dict[tuple[int, int], Totals]:
    """Every chain's totals the slow way, from every wallet and its history, by
    (chain id, stripe)."""
    counts = dict(
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
    totals: dict[tuple[int, int], Totals] = defaultdict(Totals)
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
    ):
        into = totals[(row.chain_id, row.id % STRIPES)]
        contribution(_standing(row), into)
        booked = deposits.get(row.id, [])
        history(row.token, booked, counts.get(row.id, 0), first_of(None, booked), into)
    return {key: part.pruned() for key, part in totals.items()}


def rebuild(connection: Connection) -> None:
    """Replaces every chain's totals with a recomputation from the ledger (the migration
    that introduced them; an operator's repair). Run it while no replica commits."""
    connection.execute(delete(_protocols))
    connection.execute(delete(_tokens))
    for (chain_id, stripe), totals in sorted(recompute(connection).items()):
        token_rows = _token_rows(chain_id, stripe, totals)
        protocol_rows = _protocol_rows(chain_id, stripe, totals)
        if token_rows:
            connection.execute(insert(_tokens), token_rows)
        if protocol_rows:
            connection.execute(insert(_protocols), protocol_rows)


def chain_totals(connection: Connection, chain_id: int) -> Totals:
    """A chain's stored totals (its stripes summed), read on ``connection``."""
    params = {"chain_id": chain_id}
    return _totals_of(
        connection.execute(_TOKEN_ROWS, params), connection.execute(_PROTOCOL_ROWS, params)
    )
