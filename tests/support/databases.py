"""Throwaway databases for tests: an SQLite file, or a PostgreSQL schema of its own."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

POSTGRES_URL = os.environ.get("YIELDAGENT_TEST_DATABASE_URL")
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@contextmanager
def temporary_database(backend: str, directory: Path) -> Iterator[str]:
    """Yields the URL of an empty database, removed afterwards."""
    if backend == "sqlite":
        yield f"sqlite:///{directory / 'test.db'}"
        return
    if not POSTGRES_URL:
        pytest.skip("YIELDAGENT_TEST_DATABASE_URL is not set")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    base = make_url(POSTGRES_URL).set(drivername="postgresql+psycopg")
    admin = create_engine(base)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        url = base.update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
