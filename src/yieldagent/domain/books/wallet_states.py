"""The wallet's seven states and every transition between them: the one place they live.

    state         what it means
    activating    activation accepted; the first allocation is being placed
    activated     the agent is active and idle between runs
    running       the agent is rebalancing right now
    deactivating  a full withdrawal is under way
    deactivated   the agent is off; funds were returned (or left idle on request)
    blocked       the operator froze the wallet: nothing moves until unblocked
    emergency     the operator pulled everything out of the protocols; funds sit idle

``ALLOWED[action]`` maps each state a ``WalletAction`` is allowed in to the state it leads
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


class WalletAction(StrEnum):
    """What may happen to a wallet: a partner's call, a step of the service's own, or an
    operator's command. ``ALLOWED`` says in which states, and to which state it leads."""

    # partner calls
    ACTIVATE = "activate"
    WITHDRAW = "withdraw"
    DEACTIVATE = "deactivate"
    TOP_UP = "top_up"
    CLAIM_REWARDS = "claim_rewards"
    UPDATE_PROTOCOLS = "update_protocols"
    UPDATE_CONSTRAINTS = "update_constraints"
    SET_REWARD_STAKING = "set_reward_staking"
    RUN = "run"
    # the service's own steps
    ACTIVATION_PLACED = "activation_placed"
    ACTIVATION_FAILED = "activation_failed"
    RUN_FINISHED = "run_finished"
    DEACTIVATION_DONE = "deactivation_done"
    # the operator
    BLOCK = "block"
    UNBLOCK = "unblock"
    EMERGENCY = "emergency"
    RESUME = "resume"


S = WalletStatus
A = WalletAction

ALLOWED: dict[str, dict[WalletStatus, WalletStatus]] = {
    # partner calls
    A.ACTIVATE: {S.DEACTIVATED: S.ACTIVATING},  # a new wallet starts at activating too
    A.WITHDRAW: {S.ACTIVATED: S.ACTIVATED, S.EMERGENCY: S.EMERGENCY},
    A.DEACTIVATE: {S.ACTIVATED: S.DEACTIVATING, S.EMERGENCY: S.DEACTIVATING},
    A.TOP_UP: {S.ACTIVATED: S.ACTIVATED},
    A.CLAIM_REWARDS: {S.ACTIVATED: S.ACTIVATED},
    A.UPDATE_PROTOCOLS: {S.ACTIVATED: S.ACTIVATED, S.EMERGENCY: S.EMERGENCY},
    A.UPDATE_CONSTRAINTS: {S.ACTIVATED: S.ACTIVATED, S.EMERGENCY: S.EMERGENCY},
    A.SET_REWARD_STAKING: {
        S.ACTIVATING: S.ACTIVATING,
        S.ACTIVATED: S.ACTIVATED,
        S.RUNNING: S.RUNNING,
        S.BLOCKED: S.BLOCKED,
        S.EMERGENCY: S.EMERGENCY,
        S.DEACTIVATED: S.DEACTIVATED,
    },
    A.RUN: {S.ACTIVATED: S.RUNNING},
    # the service's own steps
    A.ACTIVATION_PLACED: {S.ACTIVATING: S.ACTIVATED},
    A.ACTIVATION_FAILED: {S.ACTIVATING: S.DEACTIVATED},
    A.RUN_FINISHED: {S.RUNNING: S.ACTIVATED},
    A.DEACTIVATION_DONE: {S.DEACTIVATING: S.DEACTIVATED},
    # the operator
    A.BLOCK: {S.ACTIVATED: S.BLOCKED, S.EMERGENCY: S.BLOCKED},
    A.UNBLOCK: {S.BLOCKED: S.ACTIVATED},
    A.EMERGENCY: {S.ACTIVATED: S.EMERGENCY, S.BLOCKED: S.EMERGENCY},
    A.RESUME: {S.EMERGENCY: S.ACTIVATED},
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
    """The state ``action`` (a ``WalletAction``) leads to from ``status``; Conflict if it is
    not allowed there."""
    target = ALLOWED[action].get(status)
    if target is None:
        raise Conflict(f"Cannot {action.replace('_', ' ')}: {_REASONS[status]}")
    return target


def allowed(status: WalletStatus, action: str) -> bool:
    """Whether ``action`` (a ``WalletAction``) may happen in ``status``."""
    return status in ALLOWED[action]
