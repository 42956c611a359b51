"""Migrations: idempotent, at the head revision, and in step with the table models."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect, text
from sqlmodel import SQLModel

from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.storage.db import alembic_config, create_db_engine, migrate, migration_lock
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.types import TokenAmount, UtcDateTime

HEAD = "0038"
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
    "pool_yields",
    "idempotency_keys",
    "chain_nonces",
    "chain_nonce_leases",
    "wallet_events",
    "partner_webhooks",
    "webhook_deliveries",
    "chain_totals",
    "module_changes",
    "module_change_cursors",
    "wallet_money_calls",
    "sim_sequencers",
    "chain_watch_cursors",
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


_USDC, _USDT = "0x" + "a" * 40, "0x" + "b" * 40


def _ledger_of_revision_0009(engine: Engine) -> None:
    """Three wallets of one chain as revision 0009 stores them: an active one holding idle
    funds and two positions (one empty), a deactivated one, a blocked one."""
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    partners = sa.table(
        "partners",
        *(sa.column(n) for n in ("id", "name", "api_key_digest", "active", "permissions")),
        sa.column("created_at", UtcDateTime()),
        sa.column("updated_at", UtcDateTime()),
    )
    wallets = sa.table(
        "wallets",
        *(sa.column(n) for n in ("id", "chain_id", "address", "eoa", "partner_id", "status")),
        *(sa.column(n) for n in ("token", "selected_protocols", "constraints", "allocation")),
        *(sa.column(n) for n in ("current_apr", "is_staked", "version")),
        *(sa.column(n, TokenAmount()) for n in ("principal", "idle")),
        *(sa.column(n, UtcDateTime()) for n in ("valued_at", "activation_date")),
        *(sa.column(n, UtcDateTime()) for n in ("created_at", "updated_at")),
    )
    deposits = sa.table(
        "wallet_deposits",
        *(sa.column(n) for n in ("id", "wallet_id", "chain_id", "token", "tx_hash")),
        sa.column("amount", TokenAmount()),
        sa.column("date", UtcDateTime()),
    )
    transactions = sa.table(
        "wallet_transactions",
        *(sa.column(n) for n in ("wallet_id", "action", "status", "token", "tx_hash")),
        sa.column("protocol"),
        sa.column("amount", TokenAmount()),
        sa.column("date", UtcDateTime()),
    )
    stamps = {"created_at": moment, "updated_at": moment}

    def wallet(wallet_id: int, status: str, idle: int, held: dict[str, int], apr: float) -> Any:
        return {
            "id": wallet_id,
            "chain_id": 8453,
            "address": f"0x{wallet_id:040x}",
            "eoa": f"0x{wallet_id + 100:040x}",
            "partner_id": 1,
            "status": status,
            "token": _USDC,
            "selected_protocols": "[]",
            "constraints": "{}",
            "allocation": json.dumps({k: str(v) for k, v in held.items()}),
            "current_apr": apr,
            "is_staked": False,
            "version": 0,
            "principal": 0,
            "idle": idle,
            "valued_at": moment,
            "activation_date": moment,
        } | stamps

    def day(n: int) -> datetime:
        return moment.replace(day=n)

    with engine.begin() as connection:
        acme = {"id": 1, "name": "acme", "api_key_digest": "0" * 64, "active": True}
        connection.execute(partners.insert(), [acme | {"permissions": "wallets"} | stamps])
        connection.execute(
            wallets.insert(),
            [
                wallet(1, "activated", 5, {"aave": 2**200, "compound": 0}, 2.5),
                wallet(2, "deactivated", 0, {"aave": 50}, 1.0),
                wallet(9, "blocked", 1, {}, 0.0),
            ],
        )
        connection.execute(
            deposits.insert(),
            [
                {"id": n, "wallet_id": w, "chain_id": 8453, "token": token, "amount": amount}
                | {"tx_hash": f"0x{n:064x}", "date": day(d)}
                for n, w, token, amount, d in (
                    (1, 1, _USDT, 7, 2),
                    (2, 1, _USDC, 2**200, 1),
                    (3, 2, _USDC, 30, 1),
                )
            ],
        )
        connection.execute(
            transactions.insert(),
            [
                {"wallet_id": w, "action": "deposit", "status": "approved", "token": _USDC}
                | {"tx_hash": f"0x{n:064x}", "protocol": "", "amount": 1, "date": moment}
                for n, w in ((1, 1), (2, 1), (3, 2))
            ],
        )


def test_the_totals_backfill_counts_the_ledger_of_its_revision(
    database_url: str, engine: Engine
) -> None:
    """0010 carries its own recomputation: the totals of a ledger written at 0009, by
    stripe (wallet id % 8), each key's figures as the books counted them then."""
    engine.dispose()
    _empty(engine)
    config = alembic_config(engine)
    command.upgrade(config, "0009")
    _ledger_of_revision_0009(engine)
    command.upgrade(config, "0010")
    totals = sa.table(
        "chain_totals",
        *(sa.column(n) for n in ("chain_id", "token", "protocol", "stripe", "wallets")),
        *(sa.column(n) for n in ("active_wallets", "first_wallets", "transactions")),
        *(sa.column(n, TokenAmount()) for n in ("amount", "apr_units", "deposited")),
        sa.column("first_deposited", TokenAmount()),
    )
    figures = (
        "stripe", "token", "protocol", "wallets", "amount", "active_wallets", "apr_units",
        "deposited", "first_wallets", "first_deposited", "transactions",
    )  # fmt: skip
    with engine.connect() as connection:
        rows = connection.execute(
            sa.select(*(totals.c[n] for n in figures)).order_by(
                totals.c.stripe, totals.c.token, totals.c.protocol
            )
        ).all()
    apr = 5 * 2**127  # 2.5 percent in units of 2**-128
    assert [tuple(row) for row in rows] == [
        # stripe 1: the active wallet 1 and the blocked wallet 9 hold; 1 is a user
        (1, _USDC, "", 2, 5 + 2**200 + 1, 1, apr, 2**200, 1, 2**200, 2),
        (1, _USDC, "aave", 1, 2**200, 0, 0, 0, 0, 0, 0),
        (1, _USDC, "compound", 1, 0, 0, 0, 0, 0, 0, 0),
        (1, _USDT, "", 0, 0, 0, 0, 7, 0, 0, 0),
        # stripe 2: the deactivated wallet 2 holds nothing, its history still counts
        (2, _USDC, "", 0, 0, 0, 0, 30, 1, 30, 1),
    ]
    command.upgrade(config, "head")
    assert _revision(engine) == HEAD
