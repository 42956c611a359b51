"""The TokenAmount column: exact integers of any size in and out, nothing else accepted."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlalchemy.exc import StatementError
from sqlmodel import Session, select

from yieldagent.storage.tables import SimBalanceRow
from yieldagent.storage.types import TokenAmount

AMOUNTS = [0, 1, 2**63 - 1, 2**63, 2**64, 10**30 + 7, 2**256 - 1]


def _row(holder: str, amount: Any) -> SimBalanceRow:
    return SimBalanceRow(chain_id=8453, token="0x" + "11" * 20, holder=holder, amount=amount)


def test_amounts_round_trip_exactly_as_int(engine: Engine) -> None:
    with Session(engine) as session:
        for i, amount in enumerate(AMOUNTS):
            session.add(_row(f"holder {i}", amount))
        session.commit()
    with Session(engine) as session:
        rows = {r.holder: r.amount for r in session.exec(select(SimBalanceRow))}
    assert rows == {f"holder {i}": amount for i, amount in enumerate(AMOUNTS)}
    assert all(type(amount) is int for amount in rows.values())


def test_an_amount_can_be_updated_past_64_bits(engine: Engine) -> None:
    key = (8453, "0x" + "11" * 20, "holder")
    with Session(engine) as session:
        session.add(_row("holder", 2**64 - 1))
        session.commit()
    with Session(engine) as session:
        row = session.get(SimBalanceRow, key)
        assert row is not None
        row.amount += 2**200
        session.add(row)
        session.commit()
    with Session(engine) as session:
        row = session.get(SimBalanceRow, key)
        assert row is not None
        assert row.amount == 2**64 - 1 + 2**200


@pytest.mark.parametrize("amount", [1.0, 1.5, True, False, Decimal(5), "5"])
def test_anything_but_an_int_is_refused(engine: Engine, amount: object) -> None:
    with Session(engine) as session:
        session.add(_row("holder", amount))
        with pytest.raises(StatementError) as caught:
            session.commit()
    assert isinstance(caught.value.orig, TypeError)
    assert "token amounts are int" in str(caught.value.orig)
    with Session(engine) as session:
        assert list(session.exec(select(SimBalanceRow))) == []


@pytest.mark.parametrize("amount", [1.0, True, Decimal(1)])
def test_the_bind_processor_raises_type_error(engine: Engine, amount: object) -> None:
    with pytest.raises(TypeError, match="token amounts are int"):
        TokenAmount().process_bind_param(amount, engine.dialect)  # type: ignore[arg-type]


def test_none_passes_through(engine: Engine) -> None:
    column = TokenAmount()
    assert column.process_bind_param(None, engine.dialect) is None
    assert column.process_result_value(None, engine.dialect) is None
