"""A wallet's events: what partners hear about as it happens (WatchWallet, webhooks).

Events are never written by the use cases themselves. They are **derived from the commit
that makes them true**: every change of a wallet goes through one ``Journal``, committed
in one database transaction (``WalletRepository.commit``), and the repository records the
events ``derive`` finds in that journal in the same transaction (an outbox). So an event
exists exactly when its state change does, whatever path (a call, the worker, a
reconciliation after a crash) made it:

============== =================================================================
kind           derived from
============== =================================================================
activated      the wallet going from ``activating`` to ``activated`` (first
               activation and reactivation alike, recovered ones included)
deposit        a deposit record: the books counting an inflow for the first time
               (once its block is final; the database refuses a second record of
               the same chain event, so a deposit is credited once)
run_completed  an agent run (operation kind ``run``) closing with moves the chain
               mined: completed, failed midway or recovered after a crash
withdrawn      a withdrawal record: the service's payouts (a withdrawal, a
               deactivation's payout) and withdrawals the owner made directly
deactivated    the wallet going from ``deactivating`` to ``deactivated``
reward_claimed a reward record of a claim
============== =================================================================

A journal's events are ordered: deposits, reward claims, withdrawals, then what the
operation or the status change concludes. Each stored event gets an id that grows with
commit order (a resume cursor) and the time it was recorded.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from yieldagent.domain.books.operations import (
    COMPLETED,
    DEACTIVATE,
    FAILED,
    OPEN,
    RECOVERED,
    RUN,
    SUPPLY,
    WITHDRAW_STEP,
    Operation,
)
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.books.wallets import (
    DepositRecord,
    Journal,
    RewardRecord,
    Wallet,
    WithdrawalRecord,
)
from yieldagent.domain.dates import iso
from yieldagent.domain.ports.storage import EventRepository

ACTIVATED = "activated"
DEPOSIT_CREDITED = "deposit_credited"
RUN_COMPLETED = "run_completed"
WITHDRAWN = "withdrawn"
DEACTIVATED = "deactivated"
REWARD_CLAIMED = "reward_claimed"
KINDS = (ACTIVATED, DEPOSIT_CREDITED, RUN_COMPLETED, WITHDRAWN, DEACTIVATED, REWARD_CLAIMED)
"""Every event kind, as it appears in ``type``."""

IDLE = ""
"""The ``from_protocol`` or ``to_protocol`` of a run's move that is the smart account's
own idle balance."""
_RUN_ENDS = (COMPLETED, FAILED, RECOVERED)


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


# -- derivation ----------------------------------------------------------------------------


def _deposit(record: DepositRecord) -> dict[str, Any]:
    return {
        "token": record.token,
        "amount": str(record.amount),
        "tx_hash": record.tx_hash,
        "log_index": record.log_index,
        "block_number": record.block_number,
        "date": iso(record.date),
    }


def _withdrawal(record: WithdrawalRecord) -> dict[str, Any]:
    return {
        "kind": record.kind,
        "token": record.token,
        "amount": str(record.amount),
        "principal_amount": str(record.principal),
        "yield_amount": str(record.yield_),
        "fee_amount": str(record.fee),
        "received_amount": str(record.amount - record.fee),
        "tx_hash": record.tx_hash,
        "log_index": record.log_index,
        "block_number": record.block_number,
        "date": iso(record.date),
    }


def _reward(record: RewardRecord) -> dict[str, Any]:
    return {
        "token": record.token,
        "token_symbol": record.token_symbol,
        "amount": str(record.amount),
        "decimals": record.decimals,
        "is_staked": record.is_staked,
        "tx_hash": record.tx_hash,
        "date": iso(record.date),
    }


def run_moves(operation: Operation) -> list[dict[str, Any]]:
    """A run's moves the chain mined, in order: a withdrawal goes from its protocol to
    the account's idle balance (``""``), a supply from the idle balance to its protocol."""
    moves = []
    for step in operation.steps:
        if not step.done or step.action not in (SUPPLY, WITHDRAW_STEP):
            continue
        withdraw = step.action == WITHDRAW_STEP
        moves.append(
            {
                "from_protocol": step.protocol if withdraw else IDLE,
                "to_protocol": IDLE if withdraw else step.protocol,
                "token": step.token,
                "amount": str(step.amount),
                "tx_hash": step.tx_hash,
            }
        )
    return moves


def _run_completed(operation: Operation, previous: str | None) -> Mapping[str, Any] | None:
    """The details of a run that ends in this commit having moved funds, else None."""
    if operation.kind != RUN or operation.status not in _RUN_ENDS:
        return None
    if previous is not None and previous not in OPEN:
        return None  # it had ended before: stored again, not ended again
    moves = run_moves(operation)
    if not moves:
        return None
    return {
        "run_id": operation.id,
        "outcome": operation.status,
        "reason": operation.reason,
        "moves": moves,
    }


def _allocation(wallet: Wallet) -> dict[str, str]:
    return {name: str(amount) for name, amount in sorted(wallet.allocation.items()) if amount}


def derive(
    journal: Journal,
    previous_status: WalletStatus | None,
    previous_operation_status: str | None,
) -> list[EventDraft]:
    """The events a journal makes true, in order.

    ``previous_status`` is the wallet's status as stored before the commit (None for a new
    wallet); ``previous_operation_status`` the stored status of ``journal.operation``
    (None when the commit stores it for the first time).
    """
    wallet = journal.wallet
    drafts: list[EventDraft] = []

    def add(kind: str, amount: int | None, data: Mapping[str, Any]) -> None:
        drafts.append(
            EventDraft(
                kind, wallet.id, wallet.partner_id, wallet.chain_id, wallet.address, amount, data
            )
        )

    for deposit in journal.deposits:
        add(DEPOSIT_CREDITED, deposit.amount, _deposit(deposit))
    for reward in journal.rewards:
        add(REWARD_CLAIMED, reward.amount, _reward(reward))
    for withdrawal in journal.withdrawals:
        add(WITHDRAWN, withdrawal.amount, _withdrawal(withdrawal))
    operation = journal.operation
    if operation is not None and (run := _run_completed(operation, previous_operation_status)):
        moved = sum(int(move["amount"]) for move in run["moves"] if move["to_protocol"] != IDLE)
        add(RUN_COMPLETED, moved, run)
    status = wallet.status
    if previous_status == WalletStatus.ACTIVATING and status == WalletStatus.ACTIVATED:
        add(
            ACTIVATED,
            wallet.principal,
            {
                "token": wallet.token,
                "selected_protocols": list(wallet.selected_protocols),
                "principal": str(wallet.principal),
                "allocation": _allocation(wallet),
                "idle": str(wallet.idle),
                "reactivation": wallet.last_reactivation_date is not None,
            },
        )
    if previous_status == WalletStatus.DEACTIVATING and status == WalletStatus.DEACTIVATED:
        transfer = True
        if operation is not None and operation.kind == DEACTIVATE:
            transfer = bool(operation.params.get("transfer", True))
        add(
            DEACTIVATED,
            None,
            {"token": wallet.token, "transfer": transfer, "idle": str(wallet.idle)},
        )
    return drafts


def may_change_status(journal: Journal) -> bool:
    """Whether ``derive`` needs the wallet's previous status for this journal (only a
    commit to ``activated`` or ``deactivated`` can conclude an event)."""
    return journal.wallet.status in (WalletStatus.ACTIVATED, WalletStatus.DEACTIVATED)


# -- following a wallet ---------------------------------------------------------------------


Wait = Callable[[float], Awaitable[None]]
"""Returns when new events may have been stored, or after the given seconds at most."""


async def follow(
    events: EventRepository,
    wallet_id: int,
    cursor: int,
    wait: Wait,
    poll_seconds: float,
    closing: Callable[[], bool] = lambda: False,
    batch: int = 100,
) -> AsyncIterator[WalletEvent]:
    """The wallet's events after ``cursor``: first those stored, then new ones as they
    are stored, until ``closing`` turns true. Between reads it waits for a notice of new
    events (``wait``), or ``poll_seconds`` at most, so events another process stores
    arrive within that bound."""
    while not closing():
        found = events.after(wallet_id, cursor, batch)
        for event in found:
            cursor = event.id
            yield event
        if len(found) < batch:
            await wait(poll_seconds)
        else:
            await asyncio.sleep(0)
