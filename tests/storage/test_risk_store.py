"""The guards' records: stored, replaced and read back per chain."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError

from yieldagent.domain.books.ports import RiskChange
from yieldagent.domain.market.history import Snapshot
from yieldagent.domain.market.ports import RiskRecord
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


def test_a_pool_history_is_kept_exactly(engine: Engine) -> None:
    store = RiskStore(engine)
    history = (
        Snapshot(1_800_000_000, 2**256 - 1, 10**30, 10**27 + 1),
        Snapshot(1_800_001_800, 5, 4, 3, supply_paused=True, frozen=True),
        Snapshot(1_800_003_600, 0, 0, 0, withdraw_paused=True),
    )
    store.save(8453, [RiskRecord("aave", TOKEN, history=history)])
    [kept] = store.records(8453)
    assert kept.history == history


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


def test_a_change_judged_from_a_state_no_longer_stored_is_handed_back(engine: Engine) -> None:
    store = RiskStore(engine)
    full = RiskRecord("aave", TOKEN, state="no_new_funds", reasons=("full",))
    store.save(8453, [full])
    late = RiskChange(RiskRecord("aave", TOKEN, state="exit", reasons=("TVL fell",)), "ok")
    assert store.save_changes(8453, [late]) == [late]
    assert store.records(8453) == [full]  # nothing of a stale change is stored
    current = RiskChange(late.record, "no_new_funds")
    assert store.save_changes(8453, [current]) == []
    assert store.records(8453) == [late.record]
