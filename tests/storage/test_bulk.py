"""storage.bulk: many rows in one statement, stored exactly as one row at a time stores them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, delete, select

from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.books.wallets import Journal, Wallet
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.ports.credentials import Partner
from yieldagent.storage.bulk import insert_many, update_many
from yieldagent.storage.tables import OperationRow, SimBalanceRow
from yieldagent.storage.wallets import WalletStore

_balances = SimBalanceRow.__table__  # type: ignore[attr-defined]
_operations = OperationRow.__table__  # type: ignore[attr-defined]
TOKEN = "0x" + "11" * 20
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _balance(holder: str, amount: int, token: str = TOKEN) -> dict[str, Any]:
    return {"chain_id": 8453, "token": token, "holder": holder, "amount": amount}


def _balances_in(engine: Engine) -> dict[tuple[str, str], int]:
    with engine.connect() as connection:
        rows = connection.execute(select(_balances.c.token, _balances.c.holder, _balances.c.amount))
        return {(token, holder): amount for token, holder, amount in rows}


def _operation(wallet_id: int, i: int, **changes: Any) -> dict[str, Any]:
    return {
        "id": f"op-{i}",
        "wallet_id": wallet_id,
        "chain_id": 8453,
        "kind": "run",
        "status": "running",
        "params": '{"amount": "12"}',
        "steps": '[{"action": "supply", "note": "a \\"quoted\\" \\\\ back\\\\slash"}]',
        "idempotency_key": None,
        "result": None,
        "reason": "",
        "retry_at": None,
        "start_block": 2**40 + i,
        "owner": "agent 1",
        "started_at": T0 + timedelta(seconds=i),
        "finished_at": None,
    } | changes


@pytest.fixture
def wallet_id(engine: Engine, partner: tuple[Partner, str]) -> int:
    """A stored wallet, which operations refer to."""
    assert partner[0].id is not None
    wallet = Wallet(
        id=0,
        chain_id=8453,
        address="0x" + "33" * 20,
        eoa="0x" + "44" * 20,
        partner_id=partner[0].id,
        status=WalletStatus.ACTIVATED,
        token=TOKEN,
        selected_protocols=("aave",),
        constraints=Constraints(),
        principal=0,
        positions={},
        idle=0,
        current_apr=0.0,
        valued_at=T0,
        is_staked=False,
        activation_date=T0,
        last_deactivation_date=None,
        last_reactivation_date=None,
    )
    return WalletStore(engine).create(Journal(wallet)).id


def test_inserted_rows_read_back_exactly(engine: Engine) -> None:
    amounts = [0, 1, 2**63, 2**64 + 5, 2**256 - 1]
    rows = [_balance(f"holder {i}", amount) for i, amount in enumerate(amounts)]
    with engine.begin() as connection:
        insert_many(connection, _balances, rows)
    assert _balances_in(engine) == {(TOKEN, r["holder"]): r["amount"] for r in rows}


def test_an_update_changes_the_named_rows_only(engine: Engine) -> None:
    other = "0x" + "22" * 20
    with engine.begin() as connection:
        insert_many(
            connection,
            _balances,
            [_balance("a", 1), _balance("b", 2), _balance("a", 3, token=other)],
        )
        update_many(
            connection,
            _balances,
            ("chain_id", "token", "holder"),
            [_balance("a", 2**200), _balance("nobody", 9)],
        )
    assert _balances_in(engine) == {(TOKEN, "a"): 2**200, (TOKEN, "b"): 2, (other, "a"): 3}


def test_of_two_updates_of_one_row_the_later_stays(engine: Engine, wallet_id: int) -> None:
    """As one row at a time; PostgreSQL's UPDATE ... FROM alone would take either."""
    with engine.begin() as connection:
        insert_many(connection, _operations, [_operation(wallet_id, i) for i in range(3)])
        update_many(
            connection,
            _operations,
            ("id",),
            [
                {"id": "op-1", "status": "waiting", "reason": "first"},
                {"id": "op-2", "status": "waiting", "reason": "only"},
                {"id": "op-1", "status": "completed", "reason": "second"},
            ],
        )
    with engine.connect() as connection:
        rows = connection.execute(
            select(_operations.c.id, _operations.c.status, _operations.c.reason)
        )
        stored = {row.id: (row.status, row.reason) for row in rows}
    assert stored == {
        "op-0": ("running", ""),
        "op-1": ("completed", "second"),
        "op-2": ("waiting", "only"),
    }


def test_every_column_type_round_trips(engine: Engine, wallet_id: int) -> None:
    """Text with quotes, backslashes and non-ASCII, nulls, floats, big integers and zoned
    datetimes (read back in UTC), inserted and then updated."""
    plus_two = timezone(timedelta(hours=2))
    rows = [
        _operation(wallet_id, 1),
        _operation(wallet_id, 2, retry_at=1.1, reason="übergeben ✓", idempotency_key="key 'two'"),
    ]
    later = datetime(2026, 3, 1, 12, 0, tzinfo=plus_two)
    with engine.begin() as connection:
        insert_many(connection, _operations, rows)
        update_many(
            connection,
            _operations,
            ("id",),
            [{"id": "op-1", "status": "completed", "finished_at": later, "retry_at": 0.1 + 0.2}],
        )
    with engine.connect() as connection:
        stored = {
            row.id: row._asdict()
            for row in connection.execute(select(_operations).order_by(_operations.c.id))
        }
    assert stored["op-2"] == rows[1]
    assert stored["op-1"] == rows[0] | {
        "status": "completed",
        "finished_at": later.astimezone(UTC),
        "retry_at": 0.1 + 0.2,
    }
    assert stored["op-1"]["finished_at"].tzinfo == UTC


def test_a_naive_datetime_is_refused(engine: Engine, wallet_id: int) -> None:
    naive = _operation(wallet_id, 1, started_at=datetime(2026, 1, 1))
    with pytest.raises(Exception, match="timezone-aware"), engine.begin() as connection:
        insert_many(connection, _operations, [naive])
    with engine.connect() as connection:
        assert connection.execute(select(_operations)).all() == []


def test_no_rows_is_no_statement(engine: Engine) -> None:
    with engine.begin() as connection:
        insert_many(connection, _balances, [])
        update_many(connection, _balances, ("chain_id", "token", "holder"), [])
    assert _balances_in(engine) == {}


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.dictionaries(
        st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=42),
        st.integers(min_value=0, max_value=2**256 - 1),
        max_size=20,
    ),
    st.data(),
)
def test_any_amounts_and_holders_round_trip(
    engine: Engine, amounts: dict[str, int], data: st.DataObject
) -> None:
    """Whatever the holders' text (NUL aside, which PostgreSQL's text refuses, and lone
    surrogates, which are no UTF-8) and the amounts, what one call stores and a second
    updates reads back exactly."""
    with engine.begin() as connection:
        connection.execute(delete(_balances))
        insert_many(connection, _balances, [_balance(h, a) for h, a in amounts.items()])
    names = st.lists(st.sampled_from(sorted(amounts)), unique=True) if amounts else st.just([])
    changed = {
        holder: data.draw(st.integers(min_value=0, max_value=2**256 - 1))
        for holder in data.draw(names)
    }
    with engine.begin() as connection:
        update_many(
            connection,
            _balances,
            ("chain_id", "token", "holder"),
            [_balance(h, a) for h, a in changed.items()],
        )
    expected = {(TOKEN, h): a for h, a in (amounts | changed).items()}
    assert _balances_in(engine) == expected
