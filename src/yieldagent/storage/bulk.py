"""Writing many rows of one table at once: ``insert_many`` and ``update_many``.

SQLite takes them as one executemany: one prepared statement stepped once per row, in
the process. PostgreSQL takes one statement with every row in one JSON document, which the
server unpacks with the table's column types (``json_to_recordset``): one parameter, one
statement text per set of columns, one round trip. As an executemany (one statement per
row, pipelined), as multi-row VALUES (one parameter per value) or with one array per
column (which psycopg quotes value by value in Python), these writes cost more per
row, the server's part included (``docs/performance.md``).

Values go into the document as JSON has them: integers exactly, whatever their size;
floats as Python prints them, which reads back the same; datetimes, which must carry
their zone, as ISO 8601 text. Bytes are refused (no table written here has any).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from functools import cache
from typing import Any

from sqlalchemy import Connection, Table, TextClause, bindparam, insert, text, update
from sqlalchemy.dialects import postgresql
from sqlalchemy.types import TypeEngine

_DIALECT = postgresql.dialect()  # type: ignore[no-untyped-call]


def insert_many(connection: Connection, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """Inserts ``rows`` (each with the same columns) into ``table``."""
    if not rows:
        return
    if connection.dialect.name != "postgresql":
        connection.execute(insert(table), list(rows))
        return
    connection.execute(_postgres_insert(table, tuple(rows[0])), {"rows": document(rows)})


def update_many(
    connection: Connection,
    table: Table,
    keys: Sequence[str],
    rows: Sequence[Mapping[str, Any]],
) -> None:
    """Sets, in the row of ``table`` whose ``keys`` columns equal each of ``rows``', that
    row's other columns (each of ``rows`` with the same columns), in order: of two rows
    with the same keys, the later one is what stays."""
    if not rows:
        return
    columns = tuple(rows[0])
    if connection.dialect.name != "postgresql":
        named = [{_NAMED[c in keys] + c: row[c] for c in columns} for row in rows]
        connection.execute(_update(table, tuple(keys), columns), named)
        return
    # An UPDATE ... FROM changes a row once, with any one of the source rows that match
    # it, so only each key's last row goes in.
    last = {tuple(row[k] for k in keys): row for row in rows}
    statement = _postgres_update(table, tuple(keys), columns)
    connection.execute(statement, {"rows": document(list(last.values()))})


_NAMED = {True: "key_", False: "new_"}
"""The executemany's parameter names: ``key_`` and a key column, ``new_`` and a column
(a parameter may not take the name of a column the statement sets)."""


def document(rows: Sequence[Mapping[str, Any]]) -> str:
    """``rows`` as the JSON document that ``recordset`` unpacks."""
    return json.dumps(rows, default=_json_value, allow_nan=False, separators=(",", ":"))


def recordset(columns: Mapping[str, TypeEngine[Any]]) -> str:
    """PostgreSQL: the rows of the JSON document in the parameter ``rows``, as the relation
    ``v`` of ``columns`` (their names and types)."""
    typed = ", ".join(f"{c} {t.compile(dialect=_DIALECT)}" for c, t in columns.items())
    return f"json_to_recordset(CAST(:rows AS json)) AS v({typed})"


def _json_value(value: object) -> object:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("datetimes must be timezone-aware")
        return value.isoformat()
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return int(value)
    raise TypeError(f"cannot store {type(value).__name__} in a bulk write")


def _rows(table: Table, columns: tuple[str, ...]) -> str:
    return recordset({c: table.c[c].type for c in columns})


@cache
def _postgres_insert(table: Table, columns: tuple[str, ...]) -> TextClause:
    names = ", ".join(columns)
    return text(f"INSERT INTO {table.name} ({names}) SELECT {names} FROM {_rows(table, columns)}")  # noqa: S608


@cache
def _postgres_update(table: Table, keys: tuple[str, ...], columns: tuple[str, ...]) -> TextClause:
    changed = ", ".join(f"{c} = v.{c}" for c in columns if c not in keys)
    matched = " AND ".join(f"{table.name}.{k} = v.{k}" for k in keys)
    return text(f"UPDATE {table.name} SET {changed} FROM {_rows(table, columns)} WHERE {matched}")  # noqa: S608


@cache
def _update(table: Table, keys: tuple[str, ...], columns: tuple[str, ...]) -> Any:
    """The one-row UPDATE that an executemany steps (parameters named as ``_NAMED``)."""
    matched = [table.c[k] == bindparam(f"key_{k}") for k in keys]
    values = {c: bindparam(f"new_{c}", type_=table.c[c].type) for c in columns if c not in keys}
    return update(table).where(*matched).values(values)
