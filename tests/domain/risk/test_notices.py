"""Which wallets hear of a pool's changed guard state, and what they are told."""

from __future__ import annotations

import pytest

from yieldagent.domain.books.events import RISK_CHANGED
from yieldagent.domain.market.ports import RiskRecord
from yieldagent.domain.risk.notices import changed, concerned, risk_changed

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
