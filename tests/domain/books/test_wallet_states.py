"""The wallet state machine: every (state, action) pair, checked against a table written out
by hand from ``domain.books.wallet_states``' documentation."""

from __future__ import annotations

import itertools

import pytest

from yieldagent.domain.books.wallet_states import ACTIVE, ALLOWED, WalletStatus, allowed, transition
from yieldagent.domain.errors import Conflict

S = WalletStatus
ACTIVATING, ACTIVATED, RUNNING = S.ACTIVATING, S.ACTIVATED, S.RUNNING
DEACTIVATING, DEACTIVATED = S.DEACTIVATING, S.DEACTIVATED
BLOCKED, EMERGENCY = S.BLOCKED, S.EMERGENCY

# action -> {state it is allowed in: the state it leads to}; every other state: Conflict.
EXPECTED: dict[str, dict[WalletStatus, WalletStatus]] = {
    # partner calls
    "activate": {DEACTIVATED: ACTIVATING},
    "withdraw": {ACTIVATED: ACTIVATED, EMERGENCY: EMERGENCY},
    "deactivate": {ACTIVATED: DEACTIVATING, EMERGENCY: DEACTIVATING},
    "top_up": {ACTIVATED: ACTIVATED},
    "claim_rewards": {ACTIVATED: ACTIVATED},
    "update_protocols": {ACTIVATED: ACTIVATED, EMERGENCY: EMERGENCY},
    "update_constraints": {ACTIVATED: ACTIVATED, EMERGENCY: EMERGENCY},
    "set_reward_staking": {
        ACTIVATING: ACTIVATING,
        ACTIVATED: ACTIVATED,
        RUNNING: RUNNING,
        BLOCKED: BLOCKED,
        EMERGENCY: EMERGENCY,
        DEACTIVATED: DEACTIVATED,
    },
    "run": {ACTIVATED: RUNNING},
    # the service's own steps
    "activation_placed": {ACTIVATING: ACTIVATED},
    "activation_failed": {ACTIVATING: DEACTIVATED},
    "run_finished": {RUNNING: ACTIVATED},
    "deactivation_done": {DEACTIVATING: DEACTIVATED},
    # the operator
    "block": {ACTIVATED: BLOCKED, EMERGENCY: BLOCKED},
    "unblock": {BLOCKED: ACTIVATED},
    "emergency": {ACTIVATED: EMERGENCY, BLOCKED: EMERGENCY},
    "resume": {EMERGENCY: ACTIVATED},
}

# What a refusal in each state says (a word or phrase that names the reason).
REASONS: dict[WalletStatus, str] = {
    ACTIVATING: "the agent is being activated",
    ACTIVATED: "the agent is already active",
    RUNNING: "the agent is running; retry when the run ends",
    DEACTIVATING: "the wallet is being deactivated",
    DEACTIVATED: "the agent is not active",
    BLOCKED: "the wallet is blocked by the operator",
    EMERGENCY: "the wallet is in emergency mode",
}

MATRIX = list(itertools.product(list(WalletStatus), sorted(EXPECTED)))


def test_there_are_seven_states_with_their_contract_names() -> None:
    assert [str(s) for s in WalletStatus] == [
        "activating",
        "activated",
        "running",
        "deactivating",
        "deactivated",
        "blocked",
        "emergency",
    ]


def test_the_table_covers_exactly_the_documented_actions() -> None:
    assert set(ALLOWED) == set(EXPECTED)


@pytest.mark.parametrize(("status", "action"), MATRIX, ids=[f"{s}-{a}" for s, a in MATRIX])
def test_every_state_and_action_pair(status: WalletStatus, action: str) -> None:
    target = EXPECTED[action].get(status)
    if target is None:
        with pytest.raises(Conflict) as caught:
            transition(status, action)
        assert caught.value.detail == f"Cannot {action.replace('_', ' ')}: {REASONS[status]}"
        assert not allowed(status, action)
    else:
        assert transition(status, action) is target
        assert allowed(status, action)


@pytest.mark.parametrize(("status", "action"), MATRIX, ids=[f"{s}-{a}" for s, a in MATRIX])
def test_allowed_agrees_with_transition(status: WalletStatus, action: str) -> None:
    try:
        transition(status, action)
    except Conflict:
        refused = True
    else:
        refused = False
    assert allowed(status, action) is not refused


@pytest.mark.parametrize("status", list(WalletStatus))
def test_every_state_has_a_reason_of_its_own(status: WalletStatus) -> None:
    # "activate" is refused everywhere but in deactivated; "run_finished" everywhere but running.
    action = "run_finished" if status is DEACTIVATED else "activate"
    with pytest.raises(Conflict, match=r"^Cannot (activate|run finished): ") as caught:
        transition(status, action)
    assert caught.value.detail.endswith(REASONS[status])


def test_refusal_messages_differ_between_states() -> None:
    details = set()
    for status in WalletStatus:
        with pytest.raises(Conflict) as caught:
            transition(status, "resume" if status is not EMERGENCY else "unblock")
        details.add(caught.value.detail.split(": ", 1)[1])
    assert len(details) == len(WalletStatus)


def test_the_multiword_action_is_named_in_words() -> None:
    with pytest.raises(Conflict, match=r"^Cannot claim rewards: the wallet is blocked"):
        transition(BLOCKED, "claim_rewards")


def test_active_states_are_those_of_an_active_agent() -> None:
    assert frozenset({ACTIVATING, ACTIVATED, RUNNING}) == ACTIVE
    for status in WalletStatus:
        assert (status in ACTIVE) is (status in {ACTIVATING, ACTIVATED, RUNNING})


def test_money_moves_only_from_activated_or_emergency() -> None:
    movers = ("withdraw", "deactivate", "top_up", "claim_rewards")
    states = {s for action in movers for s in EXPECTED[action]}
    assert states == {ACTIVATED, EMERGENCY}
    for status in (ACTIVATING, RUNNING, DEACTIVATING, DEACTIVATED, BLOCKED):
        assert not any(allowed(status, action) for action in movers)


def test_every_state_is_reachable_and_every_state_can_be_left() -> None:
    targets = {t for table in EXPECTED.values() for t in table.values()}
    assert targets == set(WalletStatus)
    for status in WalletStatus:
        leaving = [a for a, table in ALLOWED.items() if table.get(status, status) is not status]
        assert leaving, f"{status} is a dead end"


def test_a_full_life_cycle() -> None:
    status = ACTIVATING  # a new wallet starts here
    for action, expected in [
        ("activation_placed", ACTIVATED),
        ("run", RUNNING),
        ("run_finished", ACTIVATED),
        ("block", BLOCKED),
        ("emergency", EMERGENCY),
        ("resume", ACTIVATED),
        ("deactivate", DEACTIVATING),
        ("deactivation_done", DEACTIVATED),
        ("activate", ACTIVATING),
        ("activation_failed", DEACTIVATED),
    ]:
        status = transition(status, action)
        assert status is expected


def test_an_unknown_action_is_a_programming_error() -> None:
    with pytest.raises(KeyError):
        transition(ACTIVATED, "teleport")
    with pytest.raises(KeyError):
        allowed(ACTIVATED, "teleport")
