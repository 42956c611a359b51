"""The wallet's seven states and every transition between them: the one place they live.

    state         what it means
    activating    activation accepted; the first allocation is being placed
    activated     the agent is active and idle between runs
    running       the agent is rebalancing right now
    deactivating  a full withdrawal is under way
    deactivated   the agent is off; funds were returned (or left idle on request)
    blocked       the operator froze the wallet: nothing moves until unblocked
    emergency     the operator pulled everything out of the protocols; funds sit idle

``ALLOWED[action]`` maps each state the action is allowed in to the state it leads
to. A call the state forbids raises Conflict (REST 409) and changes nothing.
"""

from __future__ import annotations

from enum import StrEnum

from yieldagent.domain.errors import Conflict


class WalletStatus(StrEnum):
    """The contract's seven wallet states."""

    ACTIVATING = "activating"
    ACTIVATED = "activated"
    RUNNING = "running"
    DEACTIVATING = "deactivating"
    DEACTIVATED = "deactivated"
    BLOCKED = "blocked"
    EMERGENCY = "emergency"


S = WalletStatus

ALLOWED: dict[str, dict[WalletStatus, WalletStatus]] = {
    # partner calls
    "activate": {S.DEACTIVATED: S.ACTIVATING},  # a new wallet starts at activating too
    "withdraw": {S.ACTIVATED: S.ACTIVATED, S.EMERGENCY: S.EMERGENCY},
    "deactivate": {S.ACTIVATED: S.DEACTIVATING, S.EMERGENCY: S.DEACTIVATING},
    "top_up": {S.ACTIVATED: S.ACTIVATED},
    "claim_rewards": {S.ACTIVATED: S.ACTIVATED},
    "update_protocols": {S.ACTIVATED: S.ACTIVATED, S.EMERGENCY: S.EMERGENCY},
    "set_reward_staking": {
        S.ACTIVATING: S.ACTIVATING,
        S.ACTIVATED: S.ACTIVATED,
        S.RUNNING: S.RUNNING,
        S.BLOCKED: S.BLOCKED,
        S.EMERGENCY: S.EMERGENCY,
        S.DEACTIVATED: S.DEACTIVATED,
    },
    "run": {S.ACTIVATED: S.RUNNING},
    # the service's own steps
    "activation_placed": {S.ACTIVATING: S.ACTIVATED},
    "activation_failed": {S.ACTIVATING: S.DEACTIVATED},
    "run_finished": {S.RUNNING: S.ACTIVATED},
    "deactivation_done": {S.DEACTIVATING: S.DEACTIVATED},
    # the operator
    "block": {S.ACTIVATED: S.BLOCKED, S.EMERGENCY: S.BLOCKED},
    "unblock": {S.BLOCKED: S.ACTIVATED},
    "emergency": {S.ACTIVATED: S.EMERGENCY, S.BLOCKED: S.EMERGENCY},
    "resume": {S.EMERGENCY: S.ACTIVATED},
}

ACTIVE = frozenset({S.ACTIVATING, S.ACTIVATED, S.RUNNING})
"""States in which the agent counts as active (a user in the statistics)."""

_REASONS = {
    S.ACTIVATING: "the agent is being activated",
    S.RUNNING: "the agent is running; retry when the run ends",
    S.DEACTIVATING: "the wallet is being deactivated",
    S.DEACTIVATED: "the agent is not active",
    S.BLOCKED: "the wallet is blocked by the operator",
    S.EMERGENCY: "the wallet is in emergency mode",
    S.ACTIVATED: "the agent is already active",
}


def transition(status: WalletStatus, action: str) -> WalletStatus:
    """The state ``action`` leads to from ``status``; Conflict if it is not allowed there."""
    target = ALLOWED[action].get(status)
    if target is None:
        raise Conflict(f"Cannot {action.replace('_', ' ')}: {_REASONS[status]}")
    return target


def allowed(status: WalletStatus, action: str) -> bool:
    """Whether ``action`` may happen in ``status``."""
    return status in ALLOWED[action]
