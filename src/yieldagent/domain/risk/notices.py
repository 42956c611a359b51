"""The ``protocol.risk_changed`` event: which wallets hear that a pool's guard state
changed, and what they are told.

A pool's state (ok, no_new_funds, exit) changes rarely: on a guard trip or its end, or
an operator's clearing. Events are per wallet, so the change is told to each wallet it
concerns: one that holds part of the pool (at its last valuation), or one the agent runs
that selected the pool's protocol. Wallets that are deactivated or blocked hold nothing
the agent moves and hear nothing. So one change costs at most one event per live wallet
of the pool's token on its chain, and a change of reasons alone (the state staying the
same) is not an event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from yieldagent.domain.books.events import RISK_CHANGED, EventDraft
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.market.ports import RiskRecord

QUIET = frozenset({WalletStatus.DEACTIVATED, WalletStatus.BLOCKED})
"""Statuses whose wallets hear no pool's change."""


def concerned(
    status: str, allocation: Mapping[str, int], selected: Sequence[str], protocol: str
) -> bool:
    """Whether a wallet in ``status``, holding ``allocation`` and having selected
    ``selected``, hears of a change of ``protocol``'s pool (of the wallet's token)."""
    if allocation.get(protocol, 0) > 0:
        return True
    return status not in QUIET and protocol in selected


def changed(previous: str, record: RiskRecord) -> bool:
    """Whether storing ``record`` over a pool's stored state ``previous`` is an event."""
    return record.state != previous


def risk_changed(
    chain_id: int,
    wallet_id: int,
    partner_id: int,
    wallet: str,
    previous: str,
    record: RiskRecord,
) -> EventDraft:
    """The event telling one wallet that ``record``'s pool went from ``previous``."""
    return EventDraft(
        RISK_CHANGED,
        wallet_id,
        partner_id,
        chain_id,
        wallet,
        None,
        {
            "protocol": record.protocol,
            "token": record.token,
            "state": record.state,
            "previous_state": previous,
            "reasons": list(record.reasons),
        },
    )
