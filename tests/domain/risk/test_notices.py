"""Which wallets hear of a pool's changed guard state, and what they are told."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from yieldagent.domain.books.events import RISK_CHANGED
from yieldagent.domain.books.ports import PoolWallet, RiskChange
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.market.ports import RiskRecord
from yieldagent.domain.risk.notices import changed, concerned, risk_changed, tell

TOKEN = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"


@pytest.mark.parametrize(
    ("status", "allocation", "selected", "told"),
    [
        ("activated", {"aave": 5}, (), True),  # holds it
        ("blocked", {"aave": 5}, ("aave",), True),  # still holds it, though blocked
        ("activated", {}, ("aave", "compound"), True),  # the agent may place funds there
        ("deactivated", {}, ("aave",), False),  # selected, but the agent runs it no more
        ("activated", {"aave": 0, "compound": 9}, ("compound",), False),
    ],
)
def test_holders_and_live_selectors_are_told(
    status: str, allocation: dict[str, int], selected: tuple[str, ...], told: bool
) -> None:
    assert concerned(status, allocation, selected, "aave") is told


def test_only_a_new_state_is_an_event_and_it_carries_the_reasons() -> None:
    record = RiskRecord("aave", TOKEN, state="exit", reasons=("supply is paused",))
    assert changed("ok", record)
    assert not changed("exit", record)  # new reasons alone tell nothing
    draft = risk_changed(8453, 7, 3, "0x" + "ab" * 20, "ok", record)
    assert (draft.kind, draft.wallet_id, draft.partner_id, draft.amount) == (
        RISK_CHANGED,
        7,
        3,
        None,
    )
    assert draft.data == {
        "protocol": "aave",
        "token": TOKEN,
        "state": "exit",
        "previous_state": "ok",
        "reasons": ["supply is paused"],
    }


class _Outbox:
    """An in-memory outbox whose pool another process moves on before our first save."""

    def __init__(self, stored: RiskRecord, meanwhile: RiskRecord) -> None:
        self.kept = {(stored.protocol, stored.token): stored}
        self.meanwhile: RiskRecord | None = meanwhile
        self.saved: list[RiskChange] = []

    def records(self, chain_id: int) -> list[RiskRecord]:
        return list(self.kept.values())

    def save(self, chain_id: int, records: Sequence[RiskRecord]) -> None:
        raise AssertionError("an outbox is saved with its changes")

    def exposure(self, chain_id: int, token: str) -> Mapping[str, int]:
        return {}

    def last_moves(self, wallet_ids: Sequence[int]) -> Mapping[int, float]:
        return {}

    def wallets_of(self, chain_id: int, token: str) -> list[PoolWallet]:
        held = PoolWallet(7, 3, "0x" + "ab" * 20, WalletStatus.ACTIVATED, {"aave": 5}, ())
        away = PoolWallet(8, 3, "0x" + "cd" * 20, WalletStatus.DEACTIVATED, {}, ("aave",))
        return [held, away]

    def save_changes(self, chain_id: int, changes: Sequence[RiskChange]) -> list[RiskChange]:
        if self.meanwhile is not None:
            self.kept[("aave", TOKEN)], self.meanwhile = self.meanwhile, None
        stale = [
            c for c in changes if self.kept[(c.record.protocol, c.record.token)].state != c.previous
        ]
        for change in changes:
            if change not in stale:
                self.kept[(change.record.protocol, change.record.token)] = change.record
                self.saved.append(change)
        return stale


def test_a_change_is_told_from_the_state_another_process_stored_meanwhile() -> None:
    store = _Outbox(RiskRecord("aave", TOKEN), RiskRecord("aave", TOKEN, state="no_new_funds"))
    exit_ = RiskRecord("aave", TOKEN, state="exit", reasons=("supply is paused",))
    tell(store, 8453, [exit_], {("aave", TOKEN): "ok"})
    [saved] = store.saved
    assert (saved.record, saved.previous) == (exit_, "no_new_funds")
    assert [(e.wallet_id, e.data["previous_state"]) for e in saved.events] == [(7, "no_new_funds")]
    assert store.records(8453) == [exit_]
