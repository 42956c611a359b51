"""Alembic environment: migrates through the engine that yieldagent hands over.

``yieldagent.storage.db.migrate`` holds the lock that keeps concurrent processes
from migrating at once; run migrations through it.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Engine
from sqlmodel import SQLModel

import yieldagent.storage.tables  # noqa: F401  (registers the tables on SQLModel.metadata)


def run_migrations_online() -> None:
    engine: Engine = context.config.attributes["engine"]
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=SQLModel.metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()


run_migrations_online()
