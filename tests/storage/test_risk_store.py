"""The guards' records: stored, replaced and read back per chain."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError

from yieldagent.domain.ports.storage import RiskRecord
from yieldagent.storage.risk import RiskStore

TOKEN = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"


def test_records_are_stored_replaced_and_kept_per_chain(engine: Engine) -> None:
    store = RiskStore(engine)
    assert store.records(8453) == []
    excluded = RiskRecord("aave", TOKEN, True, None, "exit", ("a loss", "TVL fell"))
    store.save(8453, [excluded, RiskRecord("compound", TOKEN)])
    store.save(1, [RiskRecord("aave", TOKEN, state="no_new_funds", reasons=("full",))])
    assert store.records(8453) == [excluded, RiskRecord("compound", TOKEN)]
    cleared = RiskRecord("aave", TOKEN, False, 1_800_000_000, "ok", (), 10**27 + 5)
    store.save(8453, [cleared])
    assert store.records(8453)[0] == cleared
    assert store.records(1) == [RiskRecord("aave", TOKEN, state="no_new_funds", reasons=("full",))]


def test_nothing_held_and_no_moves_read_empty(engine: Engine) -> None:
    store = RiskStore(engine)
    assert store.exposure(8453, TOKEN) == {}
    assert store.last_moves([1, 2, 3]) == {}


def test_a_first_record_another_process_stored_meanwhile_is_updated(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, other = RiskStore(engine), RiskStore(engine)
    save = store._save
    raced: list[bool] = []

    def racing(chain_id: int, records: Sequence[RiskRecord]) -> None:
        if not raced:  # the other process inserts the row first, and our insert loses
            raced.append(True)
            other.save(chain_id, [RiskRecord("aave", TOKEN, state="no_new_funds")])
            raise IntegrityError("INSERT INTO pool_risks", {}, Exception("duplicate key"))
        save(chain_id, records)

    monkeypatch.setattr(store, "_save", racing)
    store.save(8453, [RiskRecord("aave", TOKEN, state="exit", reasons=("TVL fell",))])
    assert store.records(8453) == [RiskRecord("aave", TOKEN, state="exit", reasons=("TVL fell",))]
