"""The schedule's claims read the due wallets through the index of due wallets
(``ix_wallet_schedule_due``): a claim reads about its batch, whatever the size of the
fleet."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from sqlalchemy import event

from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.runs import RunStore


def test_a_claim_and_the_overdue_read_go_through_the_index_of_due_wallets(
    tmp_path: Path,
) -> None:
    database = tmp_path / "runs.db"
    engine = create_db_engine(f"sqlite:///{database}")
    migrate(engine)
    seen: list[tuple[str, Any]] = []

    @event.listens_for(engine, "before_cursor_execute")
    def note(_c: Any, _cur: Any, statement: str, parameters: Any, *_: Any) -> None:
        if "FROM wallet_schedule" in statement:
            seen.append((statement, parameters))

    runs = RunStore(engine)
    runs.claim_due(1e9, "agent", 1e9 + 60, 100)
    runs.oldest_due()
    engine.dispose()

    assert len(seen) == 3  # the claim, and the overdue read's two
    with sqlite3.connect(database) as connection:
        for statement, parameters in seen:
            plan = " ".join(
                row[-1] for row in connection.execute(f"EXPLAIN QUERY PLAN {statement}", parameters)
            )
            assert "ix_wallet_schedule_due" in plan, (statement, plan)
