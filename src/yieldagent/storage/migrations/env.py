"""Alembic environment: migrates through the engine that yieldagent hands over."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Engine, text
from sqlmodel import SQLModel

import yieldagent.storage.tables  # noqa: F401  (registers the tables on SQLModel.metadata)

# Any constant works; it names the lock that serializes concurrent migrations.
_MIGRATION_LOCK = 7_112_024


def run_migrations_online() -> None:
    engine: Engine = context.config.attributes["engine"]
    with engine.connect() as connection:
        postgres = connection.dialect.name == "postgresql"
        if postgres:
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _MIGRATION_LOCK})
            connection.commit()
        try:
            context.configure(
                connection=connection,
                target_metadata=SQLModel.metadata,
                render_as_batch=connection.dialect.name == "sqlite",
                compare_type=True,
            )
            with context.begin_transaction():
                context.run_migrations()
        finally:
            if postgres:
                connection.execute(
                    text("SELECT pg_advisory_unlock(:key)"), {"key": _MIGRATION_LOCK}
                )
                connection.commit()


run_migrations_online()
