"""Money operations: what the service means to do on a chain, stored before it does it.

An **operation** is one money-moving use case on one wallet: an activation's first
placement, a top-up's placement, a withdrawal, a deactivation, a reward claim, an
operator's emergency exit, an agent run. Like a ledger's two-phase transfer:

1. its **intent** (kind, parameters, idempotency key) is stored before its first chain
   call, while the wallet's lease is held;
2. each chain call is a **step**, stored as *planned* before the call and marked with its
   transaction once mined;
3. it is **closed** (completed, failed, no_action, recovered) in the same database
   transaction that books what it did (``domain.books.ledger``), or left **waiting** when funds
   are stuck and a later attempt must finish it.

A step planned but not marked is *pending*: the process may have died before or after the
chain mined it. ``attribute`` decides from the chain's history, by kind, counterparty,
token and amount, which pending steps happened; the others are marked *abandoned*.
``domain.books.reconciliation`` does that for every operation a crash left open, then rolls it
forward or closes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from yieldagent.domain.books.accounting import WithdrawalSplit
from yieldagent.domain.errors import YieldAgentError, error_named
from yieldagent.domain.ports.chain import ChainKind, ChainTx, TxReceipt


class OperationKind(StrEnum):
    """What an operation does (its resume handler in ``domain.books.reconciliation``)."""

    ACTIVATE = "activate"
    TOP_UP = "top_up"
    WITHDRAW = "withdraw"
    DEACTIVATE = "deactivate"
    CLAIM = "claim_rewards"
    EMERGENCY = "emergency"
    RUN = "run"


class OperationStatus(StrEnum):
    """Where an operation stands."""

    EXECUTING = "executing"
    """Intent stored; steps are being executed (or the process died doing so)."""
    WAITING = "waiting"
    """Some funds could not move yet (a pool short of cash); retried at ``retry_at``."""
    COMPLETED = "completed"
    FAILED = "failed"
    NO_ACTION = "no_action"
    RECOVERED = "recovered"


OPEN = frozenset({OperationStatus.EXECUTING, OperationStatus.WAITING})
"""The statuses of an operation not yet closed."""


class StepAction(StrEnum):
    """What one chain call of an operation does, named as the wallet's history names it."""

    DEPOSIT = "deposit"
    """Into a protocol (a supply, as the chain port names it)."""
    WITHDRAW = "withdraw"
    """Out of a protocol."""
    PAYOUT = "transfer"
    """The user's part of a withdrawal, to the EOA."""
    FEE = "fee_transfer"
    """The fee's part of a withdrawal, to the fee collector."""
    SEND = "send"
    """Reward tokens sent to the EOA."""
    SWAP = "swap"
    CLAIM = "claim"

    @property
    def chain_kind(self) -> ChainKind:
        """The kind of chain transaction this step mines (the one mapping between the
        books' names and the chain port's)."""
        return _CHAIN_KIND[self]


_CHAIN_KIND = {
    StepAction.DEPOSIT: ChainKind.SUPPLY,
    StepAction.WITHDRAW: ChainKind.WITHDRAW,
    StepAction.PAYOUT: ChainKind.TRANSFER,
    StepAction.FEE: ChainKind.TRANSFER,
    StepAction.SEND: ChainKind.TRANSFER,
    StepAction.SWAP: ChainKind.SWAP,
    StepAction.CLAIM: ChainKind.CLAIM,
}
MOVES = frozenset({StepAction.DEPOSIT, StepAction.WITHDRAW})
"""The step actions that move funds between the account and its protocols."""


@dataclass(frozen=True, slots=True)
class Move:
    """Funds into (``DEPOSIT``) or out of (``WITHDRAW``) one protocol: what the optimizer
    plans and what a run's steps carry out."""

    action: StepAction
    protocol: str
    amount: int


@dataclass(frozen=True, slots=True)
class Step:
    """One chain call of an operation: planned, then marked with its transaction."""

    action: StepAction
    token: str
    amount: int
    protocol: str = ""
    """The protocol of a supply or withdrawal."""
    recipient: str = ""
    """The receiver of a transfer."""
    token_out: str = ""
    """What a swap buys."""
    min_out: int = 0
    """The least a swap may give."""
    split: WithdrawalSplit | None = None
    """How the withdrawal a payout carries divides (principal, yield, fee)."""
    apr: float | None = None
    """The protocol's APR when the step was planned (shown in the history)."""
    tx_hash: str | None = None
    log_index: int = 0
    block_number: int | None = None
    timestamp: int | None = None
    abandoned: bool = False
    """Planned, but the chain never mined it (its call failed, or its process died first)."""
    whole: bool = False
    """A withdrawal of the whole position: ``amount`` is its value when planned; the chain
    pays what it holds when mined (interest accrues meanwhile), and the step learns it."""

    @property
    def done(self) -> bool:
        """Whether the chain mined it."""
        return self.tx_hash is not None

    @property
    def pending(self) -> bool:
        """Planned, and not known to be mined or abandoned yet."""
        return not self.done and not self.abandoned

    def mined(
        self, receipt: TxReceipt, log_index: int | None = None, amount: int | None = None
    ) -> Step:
        """This step, marked with the transaction (and log) that carried it out; a claim
        learns its ``amount`` then."""
        if amount is None:
            amount = self.amount if receipt.amount is None else receipt.amount
        return replace(
            self,
            amount=amount,
            tx_hash=receipt.tx_hash,
            log_index=receipt.log_index if log_index is None else log_index,
            block_number=receipt.block_number,
            timestamp=receipt.timestamp,
        )

    def matches(self, event: ChainTx, holder: str) -> bool:
        """Whether ``event`` is what this step, planned for ``holder``, would have mined."""
        if event.kind != self.action.chain_kind or event.token != self.token:
            return False
        if self.action == StepAction.CLAIM:  # what a claim collects is known once mined
            return event.recipient == holder
        if event.amount != self.amount and not self.whole:
            return False
        if self.action == StepAction.DEPOSIT:
            return event.sender == holder and event.recipient == self.protocol
        if self.action == StepAction.WITHDRAW:
            return event.sender == self.protocol and event.recipient == holder
        if self.action == StepAction.SWAP:
            return event.sender == holder
        return event.sender == holder and event.recipient == self.recipient


@dataclass(frozen=True, slots=True)
class Operation:
    """A money operation on one wallet: its intent, its steps, and how it ended."""

    id: str
    wallet_id: int
    chain_id: int
    kind: OperationKind
    status: OperationStatus
    steps: tuple[Step, ...]
    start_block: int
    owner: str
    params: Mapping[str, Any] = field(default_factory=dict)
    """What was asked, as JSON values (amounts as decimal strings)."""
    key: str | None = None
    """The idempotency key, scoped by the partner: the same key finds this operation."""
    result: Mapping[str, Any] | None = None
    """What the caller was answered, as JSON values, once closed."""
    reason: str = ""
    retry_at: float | None = None

    @property
    def open(self) -> bool:
        """Whether it still has to be finished."""
        return self.status in OPEN

    @property
    def steps_done(self) -> int:
        """How many steps the chain mined."""
        return sum(1 for step in self.steps if step.done)

    @property
    def moves(self) -> tuple[Move, ...]:
        """A run's moves: its steps into and out of protocols, in order."""
        return tuple(Move(s.action, s.protocol, s.amount) for s in self.steps if s.action in MOVES)

    def with_step(self, index: int, step: Step) -> Operation:
        """This operation with step ``index`` replaced (or appended at the end)."""
        steps = list(self.steps)
        if index == len(steps):
            steps.append(step)
        else:
            steps[index] = step
        return replace(self, steps=tuple(steps))

    def closed(
        self, status: OperationStatus, reason: str, result: Mapping[str, Any] | None = None
    ) -> Operation:
        """This operation, ended."""
        return replace(self, status=status, reason=reason, result=result, retry_at=None)

    def payouts(self) -> list[Step]:
        """The payout steps the chain mined, each carrying its withdrawal's split."""
        return [s for s in self.steps if s.action == StepAction.PAYOUT and s.done]


@dataclass(frozen=True, slots=True)
class Executed:
    """A stored operation with when it began and, once closed, when it ended."""

    operation: Operation
    started_at: datetime
    finished_at: datetime | None


def attribute(operation: Operation, events: Sequence[ChainTx], holder: str) -> Operation:
    """Marks each pending step of ``operation`` that the chain mined, found among
    ``events`` (the holder's history since the operation began). An event (a transaction's
    log) is given to one step at most, in order, never to one already marked."""
    taken = {(s.tx_hash, s.log_index) for s in operation.steps if s.done}
    for index, step in enumerate(operation.steps):
        if not step.pending:
            continue
        for event in events:
            if (event.tx_hash, event.log_index) not in taken and step.matches(event, holder):
                taken.add((event.tx_hash, event.log_index))
                receipt = TxReceipt(event.tx_hash, event.block_number, event.timestamp)
                operation = operation.with_step(
                    index, step.mined(receipt, event.log_index, event.amount)
                )
                break
    return operation


def mined_steps(operations: Iterable[Operation]) -> dict[tuple[str, int], Step]:
    """The mined steps of ``operations``, by transaction hash and log index."""
    return {
        (s.tx_hash, s.log_index): s for op in operations for s in op.steps if s.tx_hash is not None
    }


def scoped(partner_id: int, kind: str, key: str | None) -> str | None:
    """An idempotency key as stored: scoped by the partner that sent it and the kind of
    operation it names."""
    return f"{partner_id}:{kind}:{key}" if key else None


def failure(error: YieldAgentError) -> dict[str, str]:
    """An operation's stored answer when it failed: the error, to replay it."""
    return {"error": type(error).__name__, "detail": error.detail}


def retryable(operation: Operation) -> bool:
    """Whether a failed operation may simply be tried again: the chain refused it before
    anything reached the user (ChainUnavailable)."""
    result = operation.result or {}
    return result.get("error") == "ChainUnavailable" and not operation.payouts()


def outcome(operation: Operation) -> Mapping[str, Any]:
    """What a closed operation answered; raises the error it failed with."""
    result = operation.result or {}
    if "error" in result:
        raise error_named(str(result["error"]), str(result.get("detail", operation.reason)))
    return result
