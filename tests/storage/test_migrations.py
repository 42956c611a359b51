"""Migrations: idempotent, at the head revision, and in step with the table models."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect, text
from sqlmodel import SQLModel

from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.storage.db import alembic_config, create_db_engine, migrate, migration_lock
from yieldagent.storage.partners import PartnerStore

HEAD = "0017"
TABLES = {
    "partners",
    "smart_accounts",
    "sim_clock",
    "sim_pools",
    "sim_positions",
    "sim_balances",
    "sim_transactions",
    "sim_prices",
    "wallets",
    "wallet_schedule",
    "wallet_deposits",
    "wallet_withdrawals",
    "wallet_transactions",
    "wallet_rewards",
    "performance_points",
    "operations",
    "protocol_pauses",
    "pool_risks",
    "idempotency_keys",
    "chain_nonces",
    "chain_nonce_leases",
    "wallet_events",
    "partner_webhooks",
    "webhook_deliveries",
    "chain_totals",
}
_MIGRATE = (
    "import sys\n"
    "from yieldagent.storage.db import create_db_engine, migrate, migration_lock\n"
    "migrate(create_db_engine(sys.argv[1]))\n"
)


def _revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def _schema(engine: Engine) -> dict[str, Any]:
    """Tables, their columns, indexes and unique constraints, comparable with ==."""
    inspector = inspect(engine)
    schema: dict[str, Any] = {}
    for table in sorted(inspector.get_table_names()):
        schema[table] = (
            [(c["name"], str(c["type"]), c["nullable"]) for c in inspector.get_columns(table)],
            sorted(
                (i["name"], tuple(i["column_names"]), bool(i["unique"]))
                for i in inspector.get_indexes(table)
            ),
            sorted(tuple(u["column_names"]) for u in inspector.get_unique_constraints(table)),
        )
    return schema


def _migrate_in_another_process(url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _MIGRATE, url], capture_output=True, text=True, check=False
    )


def test_an_empty_database_has_no_revision(database_url: str) -> None:
    engine = create_db_engine(database_url)
    try:
        assert _revision(engine) is None
        assert not TABLES & set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def _empty(engine: Engine) -> None:
    """Drops every table, migrations' bookkeeping included."""
    SQLModel.metadata.drop_all(engine)
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE alembic_version"))


def test_the_tables_exist(engine: Engine) -> None:
    assert set(inspect(engine).get_table_names()) == TABLES | {"alembic_version"}


def test_the_revision_is_the_head(engine: Engine) -> None:
    assert ScriptDirectory.from_config(alembic_config(engine)).get_current_head() == HEAD
    assert _revision(engine) == HEAD


def test_migrating_again_changes_nothing(engine: Engine, partners: PartnerStore) -> None:
    created, _ = partners.create("acme", PERMISSIONS)
    before = _schema(engine)
    migrate(engine)
    migrate(engine)
    assert _schema(engine) == before
    assert _revision(engine) == HEAD
    with engine.connect() as connection:
        versions = connection.execute(text("SELECT version_num FROM alembic_version")).all()
    assert [v for (v,) in versions] == [HEAD]
    credentials = partners.credentials("acme")
    assert credentials is not None and credentials.partner == created


def test_the_migrations_match_the_table_models(engine: Engine) -> None:
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, SQLModel.metadata) == []


def test_the_schema_enforces_the_partner_foreign_key(engine: Engine) -> None:
    with engine.connect() as connection:
        foreign_keys = inspect(connection).get_foreign_keys("smart_accounts")
    assert [
        (fk["constrained_columns"], fk["referred_table"], fk["referred_columns"])
        for fk in foreign_keys
    ] == [(["partner_id"], "partners", ["id"])]


def test_concurrent_migrations_from_several_processes_agree(
    database_url: str, engine: Engine
) -> None:
    """An advisory lock (PostgreSQL) or a file lock (SQLite) serializes migrations."""
    engine.dispose()
    _empty(engine)
    assert _revision(engine) is None
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _MIGRATE, database_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outcomes = [(process.wait(), process.communicate()[1]) for process in processes]
    assert [code for code, _ in outcomes] == [0] * len(processes), outcomes
    assert _revision(engine) == HEAD


def test_a_second_process_waits_while_one_migrates(database_url: str, engine: Engine) -> None:
    """While this process holds the migration lock, another one cannot migrate."""
    engine.dispose()
    _empty(engine)
    with migration_lock(engine):
        other = subprocess.Popen(
            [sys.executable, "-c", _MIGRATE, database_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        with pytest.raises(subprocess.TimeoutExpired):
            other.wait(timeout=2)  # blocked on the lock, not merely slow: see the revision
        assert _revision(engine) is None
    _, errors = other.communicate(timeout=60)
    assert other.returncode == 0, errors
    assert _revision(engine) == HEAD
