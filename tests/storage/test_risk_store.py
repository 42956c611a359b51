"""The guards' records: stored, replaced and read back per chain."""

from __future__ import annotations

from sqlalchemy import Engine

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
