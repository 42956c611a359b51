"""storage.db.one_of: rows by a batch of keys, the same on both databases, one statement
text on PostgreSQL whatever the batch's size."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, insert, select

from yieldagent.storage.db import one_of
from yieldagent.storage.tables import SimBalanceRow

_balances = SimBalanceRow.__table__  # type: ignore[attr-defined]
TOKEN = "0x" + "11" * 20
_BY_HOLDERS = (
    select(_balances.c.holder)
    .where(_balances.c.token == TOKEN, one_of(_balances.c.holder, "holders"))
    .order_by(_balances.c.holder)
)


@pytest.fixture
def stored(engine: Engine) -> None:
    rows = [{"chain_id": 8453, "token": TOKEN, "holder": f"h{i}", "amount": i} for i in range(5)]
    with engine.begin() as connection:
        connection.execute(insert(_balances), rows)


@pytest.mark.parametrize(
    ("asked", "found"),
    [
        (["h1", "h3", "nobody"], ["h1", "h3"]),
        (["h4"], ["h4"]),
        ([], []),
        ([f"h{i}" for i in range(600)], [f"h{i}" for i in range(5)]),
    ],
)
@pytest.mark.usefixtures("stored")
def test_one_of_finds_the_rows_of_the_keys_asked(
    engine: Engine, asked: list[str], found: list[str]
) -> None:
    with engine.connect() as connection:
        assert connection.execute(_BY_HOLDERS, {"holders": asked}).scalars().all() == found


def test_postgresql_gets_one_array_and_sqlite_an_in_list(engine: Engine) -> None:
    rendered = str(_BY_HOLDERS.compile(dialect=engine.dialect))
    if engine.dialect.name == "postgresql":
        assert "sim_balances.holder = ANY (CAST(%(holders)s AS VARCHAR(42)[]))" in rendered
    else:
        assert "sim_balances.holder IN (__[POSTCOMPILE_holders])" in rendered
        assert "= 1" not in rendered  # a comparison, not a boolean column
