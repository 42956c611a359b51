"""The ``protocol.risk_changed`` event: which wallets hear that a pool's guard state
changed, and what they are told.

A pool's state (ok, no_new_funds, exit) changes rarely: on a guard trip or its end, or
an operator's clearing. Events are per wallet, so the change is told to each wallet it
concerns: one that holds part of the pool (at its last valuation), or one the agent runs
that selected the pool's protocol. Wallets that are deactivated or blocked hold nothing
the agent moves and hear nothing. So one change costs at most one event per live wallet
of the pool's token on its chain, and a change of reasons alone (the state staying the
same) is not an event.

The events are derived here, against the state the pool was judged from, and stored with
the pool's record (``tell``): a store that is an outbox (``RiskOutbox``) keeps them in the
record's transaction, and refuses a change whose pool another process changed meanwhile,
which is then derived again from what that process stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from yieldagent.domain.books.events import RISK_CHANGED, EventDraft
from yieldagent.domain.books.ports import PoolWallet, RiskChange, RiskOutbox
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.market.ports import RiskRecord, RiskRepository
from yieldagent.domain.market.readings import RiskState

QUIET = frozenset({WalletStatus.DEACTIVATED, WalletStatus.BLOCKED})
"""Statuses whose wallets hear no pool's change."""


def concerned(
    status: str, positions: Mapping[str, int], selected: Sequence[str], protocol: str
) -> bool:
    """Whether a wallet in ``status``, holding ``positions`` and having selected
    ``selected``, hears of a change of ``protocol``'s pool (of the wallet's token)."""
    if positions.get(protocol, 0) > 0:
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


def notices(
    chain_id: int, previous: str, record: RiskRecord, wallets: Sequence[PoolWallet]
) -> tuple[EventDraft, ...]:
    """The events telling those of ``wallets`` it concerns that ``record``'s pool went from
    ``previous``."""
    return tuple(
        risk_changed(chain_id, w.wallet_id, w.partner_id, w.address, previous, record)
        for w in wallets
        if concerned(w.status, w.positions, w.selected, record.protocol)
    )


def tell(
    store: RiskRepository,
    chain_id: int,
    records: Sequence[RiskRecord],
    stored: Mapping[tuple[str, str], str],
) -> None:
    """Stores ``records``, each with the events its change from the pool's ``stored``
    state (by protocol and token; ``ok`` when missing) tells, when ``store`` keeps events;
    a change whose pool another process changed meanwhile is derived again from the
    state that process stored."""
    if not isinstance(store, RiskOutbox):
        store.save(chain_id, records)
        return
    pending, states = list(records), stored
    while pending:
        wallets: dict[str, list[PoolWallet]] = {}
        changes = []
        for record in pending:
            previous = states.get((record.protocol, record.token), RiskState.OK)
            events: tuple[EventDraft, ...] = ()
            if changed(previous, record):
                if record.token not in wallets:
                    wallets[record.token] = store.wallets_of(chain_id, record.token)
                events = notices(chain_id, previous, record, wallets[record.token])
            changes.append(RiskChange(record, previous, events))
        pending = [change.record for change in store.save_changes(chain_id, changes)]
        if pending:
            states = {(r.protocol, r.token): r.state for r in store.records(chain_id)}
