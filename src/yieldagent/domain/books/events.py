"""A wallet's events: what partners hear about as it happens (WatchWallet, webhooks).

Events are never written by the use cases themselves. They are **derived from the commit
that makes them true** (``domain.books.effects``): every change of a wallet goes through
one ``Journal``, and the repository records the journal's events in the same database
transaction as the journal (an outbox). So an event exists exactly when its state change
does, whatever path (a call, the worker, a reconciliation after a crash) made it.

This module holds the kinds and the shapes; each stored event gets an id that grows with
commit order (a resume cursor) and the time it was recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from yieldagent.domain.dates import iso

ACTIVATED = "activated"
DEPOSIT_CREDITED = "deposit_credited"
RUN_COMPLETED = "run_completed"
WITHDRAWN = "withdrawn"
DEACTIVATED = "deactivated"
REWARD_CLAIMED = "reward_claimed"
BLOCKED = "blocked"
RISK_CHANGED = "protocol.risk_changed"
"""A pool the wallet holds or selected changed its guard state (``domain.risk.notices``);
its proto member is ``protocol_risk_changed`` (the kind with ``_`` for ``.``)."""
MODULE_CHANGE_PROPOSED = "module.change_proposed"
"""The chain's operator module has a change pending (``domain.books.module_changes``): told
to every wallet on the chain, with the time from which the admin can apply it; its proto
member is ``module_change_proposed``."""
KINDS = (
    ACTIVATED,
    DEPOSIT_CREDITED,
    RUN_COMPLETED,
    WITHDRAWN,
    DEACTIVATED,
    REWARD_CLAIMED,
    BLOCKED,
    RISK_CHANGED,
    MODULE_CHANGE_PROPOSED,
)
"""Every event kind, as it appears in ``type``."""

IDLE = ""
"""The ``from_protocol`` or ``to_protocol`` of a run's move that is the smart account's
own idle balance."""


@dataclass(frozen=True, slots=True)
class EventDraft:
    """An event derived from a journal, not stored yet (no id, no time)."""

    kind: str
    wallet_id: int
    partner_id: int
    chain_id: int
    wallet: str
    amount: int | None
    """The event's main amount in the token's smallest unit (a deposit's, a withdrawal's,
    a claim's, the sum a run moved), when it has one."""
    data: Mapping[str, Any]
    """The kind's details as JSON values; amounts as decimal strings."""


@dataclass(frozen=True, slots=True)
class WalletEvent:
    """A stored event."""

    id: int
    """Grows with commit order, per service: resume after it."""
    created_at: datetime
    """When the service recorded it (the wall clock, UTC)."""
    kind: str
    wallet_id: int
    partner_id: int
    chain_id: int
    wallet: str
    amount: int | None
    data: Mapping[str, Any]

    def body(self) -> dict[str, Any]:
        """The event as JSON: the webhook body, field for field what WatchWallet sends."""
        return {
            "id": self.id,
            "type": self.kind,
            "created_at": iso(self.created_at),
            "chain_id": self.chain_id,
            "wallet": self.wallet,
            "data": dict(self.data),
        }
