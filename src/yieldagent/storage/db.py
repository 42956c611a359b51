"""The database engine, and applying migrations.

SQLite (the embedded default) and PostgreSQL (for several replicas) are both
used through a synchronous SQLAlchemy engine. Each store method is one short
transaction that never spans an ``await``, so it can run on the event loop.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import (
    Boolean,
    ColumnElement,
    Engine,
    any_,
    bindparam,
    cast,
    create_engine,
    event,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import make_url
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.visitors import InternalTraversal

MIGRATIONS = Path(__file__).with_name("migrations")


IN_LIST = 500
"""Ids per IN list: SQLite allows 999 variables in a statement (32766 since 3.32)."""


def chunks(ids: Sequence[Any], size: int = IN_LIST) -> Iterator[list[Any]]:
    """``ids`` in lists of at most ``size``, for IN lists."""
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])


class OneOf(ColumnElement[bool]):
    """``column`` is one of the list passed as the parameter ``name``: the statement's
    way to look rows up by a batch of keys.

    SQLite gets an IN list (one variable per key). PostgreSQL gets the whole list as one
    array, ``column = ANY(CAST(:name AS type[]))``: one statement text whatever the list's
    length, so the driver parses it once and SQLAlchemy expands nothing. With an IN list of
    500 keys both did, and PostgreSQL planned each of them, a cost paid by every batch.
    """

    inherit_cache = True
    type = Boolean()
    _is_implicitly_boolean = True  # a comparison already: SQLite must not add "= 1"
    _traverse_internals = [  # noqa: RUF012 (SQLAlchemy reads it from the class)
        ("column", InternalTraversal.dp_clauseelement),
        ("name", InternalTraversal.dp_string),
    ]

    def __init__(self, column: ColumnElement[Any], name: str) -> None:
        self.column = column
        self.name = name


@compiles(OneOf)
def _in_list(element: OneOf, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(element.column.in_(bindparam(element.name, expanding=True)), **kw)


@compiles(OneOf, "postgresql")
def _any_of_array(element: OneOf, compiler: SQLCompiler, **kw: Any) -> str:
    array = cast(bindparam(element.name), ARRAY(element.column.type))
    return compiler.process(element.column == any_(array), **kw)


def one_of(column: ColumnElement[Any], name: str) -> OneOf:
    """``column`` is one of the keys passed as ``name`` (see ``OneOf``)."""
    return OneOf(column, name)


def is_sqlite(url: str) -> bool:
    """Whether ``url`` names an SQLite database."""
    return make_url(url).get_backend_name() == "sqlite"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")  # readers never wait for the writer
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


def create_db_engine(url: str) -> Engine:
    """An engine for ``url``, creating the SQLite file's directory when needed."""
    if is_sqlite(url):
        database = make_url(url).database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    url = str(make_url(url).set(drivername="postgresql+psycopg"))
    return create_engine(url, pool_size=10, max_overflow=10, pool_pre_ping=True)


class FirstRow:
    """A hot single-row read, run on a pooled DBAPI connection without SQLAlchemy's
    per-execution work (contexts, result objects, type processing): for statements whose
    parameters and columns need no conversion (integers and text). The statement is
    compiled once per dialect."""

    __slots__ = ("_compiled", "_statement")

    def __init__(self, statement: Executable) -> None:
        self._statement = statement
        self._compiled: dict[str, tuple[str, tuple[str, ...] | None, dict[str, Any]]] = {}

    def __call__(self, engine: Engine, params: dict[str, Any]) -> tuple[Any, ...] | None:
        """The statement's first row with ``params``, or None."""
        compiled = self._compiled.get(engine.dialect.name)
        if compiled is None:
            compiled = self._compile(engine)
        sql, order, defaults = compiled
        values = {**defaults, **params}
        connection = engine.raw_connection()
        try:
            cursor = connection.cursor()
            try:
                cursor.execute(sql, values if order is None else tuple(values[n] for n in order))
                row = cursor.fetchone()
            finally:
                cursor.close()
        finally:
            connection.close()  # back to the pool, which ends the transaction
        return None if row is None else tuple(row)

    def _compile(self, engine: Engine) -> tuple[str, tuple[str, ...] | None, dict[str, Any]]:
        compiled = self._statement.compile(dialect=engine.dialect)  # type: ignore[attr-defined]
        order = tuple(compiled.positiontup) if compiled.positional else None
        entry = (compiled.string, order, dict(compiled.params))
        self._compiled[engine.dialect.name] = entry
        return entry


def alembic_config(engine: Engine) -> Config:
    """An Alembic configuration that migrates through ``engine``."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["engine"] = engine
    return config


# Any constant works; it names the PostgreSQL lock that serializes migrations.
_MIGRATION_LOCK_KEY = 7_112_024


@contextmanager
def migration_lock(engine: Engine) -> Iterator[None]:
    """Holds a lock that only one migrating process at a time can hold.

    PostgreSQL: a session advisory lock. SQLite: an exclusive lock on a file beside
    the database. An in-memory SQLite database is private to its process.
    """
    if engine.dialect.name == "postgresql":
        with engine.connect() as connection:
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _MIGRATION_LOCK_KEY})
            connection.commit()
            try:
                yield
            finally:
                connection.execute(
                    text("SELECT pg_advisory_unlock(:key)"), {"key": _MIGRATION_LOCK_KEY}
                )
                connection.commit()
        return
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        yield
        return
    with open(f"{database}.migrate-lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def migrate(engine: Engine) -> None:
    """Brings the schema to the newest migration. Safe to run from several processes."""
    with migration_lock(engine):
        command.upgrade(alembic_config(engine), "head")


def ping(engine: Engine) -> None:
    """Raises if the database does not answer."""
    with engine.connect() as connection:
        connection.exec_driver_sql("SELECT 1")
