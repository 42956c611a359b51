"""What the service executed for a wallet, and its logs, as its owner reads them.

An **execution** is an operation (``domain.books.operations``): an agent run, an
activation's placement, a top-up, a withdrawal, a deactivation, a reward claim, an
emergency exit. Its **plan** is the moves it planned into and out of protocols (for a
run, the optimizer's answer), stored before anything executed; its **transactions** are
its steps, each with its transaction once the chain mined it. Its status reads as the
production client names it: ``running`` while open (executing, or waiting for a pool's
cash), ``failed``, or ``success`` (completed, nothing to do, or recovered after a crash).
A run that found nothing worth moving stores no operation, so it is no execution.

An execution's **logs** are what its record tells, in order: that it started (with what
was asked), each step, and how it ended. A wallet's logs are its events, the ones
webhooks deliver, for as long as the service keeps them
(``YIELDAGENT_EVENT_RETENTION_SECONDS``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from yieldagent.domain.books.events import WalletEvent
from yieldagent.domain.books.ledger import history_action
from yieldagent.domain.books.operations import (
    MOVES,
    Executed,
    Move,
    Operation,
    OperationStatus,
    Step,
)
from yieldagent.domain.books.ports import (
    EventPages,
    OperationPages,
    WalletRepository,
)
from yieldagent.domain.books.wallets import TransactionRecord, Wallet, require
from yieldagent.domain.catalog import Catalog
from yieldagent.domain.dates import iso
from yieldagent.domain.errors import NotFound
from yieldagent.domain.pagination import PageRequest, Pagination, pagination

RUNNING, FAILED, SUCCESS = "running", "failed", "success"
_STATUS = {
    OperationStatus.EXECUTING: RUNNING,
    OperationStatus.WAITING: RUNNING,
    OperationStatus.FAILED: FAILED,
    OperationStatus.COMPLETED: SUCCESS,
    OperationStatus.NO_ACTION: SUCCESS,
    OperationStatus.RECOVERED: SUCCESS,
}
"""An operation's status as the production client names an execution's."""


@dataclass(frozen=True, slots=True)
class Execution:
    """One operation as an execution: its plan, its steps as transactions, its times."""

    executed: Executed
    plan: tuple[Move, ...]
    transactions: tuple[TransactionRecord, ...]

    @property
    def status(self) -> str:
        """``running``, ``failed`` or ``success``."""
        return _STATUS[self.executed.operation.status]


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One line of a log: what happened, and its details as JSON values."""

    type: str
    data: Mapping[str, Any]


def _moment(timestamp: int) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


def _step_state(step: Step) -> str:
    if step.done:
        return "approved"
    return "failed" if step.abandoned else "pending"


def transaction_of(step: Step, executed: Executed) -> TransactionRecord:
    """A step as the transaction history names it; one not mined is dated when its
    operation began, and has no hash."""
    operation = executed.operation
    return TransactionRecord(
        action=history_action(step),
        token=step.token,
        amount=step.amount,
        tx_hash=step.tx_hash or "",
        date=executed.started_at if step.timestamp is None else _moment(step.timestamp),
        status=_step_state(step),
        protocol=step.protocol,
        new_token=step.token_out or None,
        apr=step.apr,
        block_number=step.block_number,
        correlation_id=operation.id,
        log_index=step.log_index,
    )


def execution_of(executed: Executed) -> Execution:
    """The execution an operation is."""
    operation = executed.operation
    plan = tuple(Move(s.action, s.protocol, s.amount) for s in operation.steps if s.action in MOVES)
    steps = tuple(transaction_of(step, executed) for step in operation.steps)
    return Execution(executed, plan, steps)


def execution_logs(executed: Executed) -> list[LogEntry]:
    """An execution's logs, oldest first: its start, each step, and its end (or its wait)."""
    operation: Operation = executed.operation
    entries = [
        LogEntry(
            "started",
            {
                "kind": str(operation.kind),
                "at": iso(executed.started_at),
                "start_block": operation.start_block,
                "params": dict(operation.params),
            },
        )
    ]
    for index, step in enumerate(operation.steps):
        entries.append(
            LogEntry(
                "step",
                {
                    "index": index,
                    "action": history_action(step),
                    "protocol": step.protocol,
                    "token": step.token,
                    "amount": str(step.amount),
                    "status": _step_state(step),
                    "tx_hash": step.tx_hash,
                    "block_number": step.block_number,
                },
            )
        )
    if operation.status == OperationStatus.WAITING:
        entries.append(LogEntry("waiting", {"reason": operation.reason}))
    elif not operation.open:
        ended = None if executed.finished_at is None else iso(executed.finished_at)
        entries.append(LogEntry(str(operation.status), {"reason": operation.reason, "at": ended}))
    return entries


def event_log(event: WalletEvent) -> LogEntry:
    """A wallet event as a log line: its type, and its details with its id and time."""
    return LogEntry(
        event.kind, {"id": event.id, "created_at": iso(event.created_at), **dict(event.data)}
    )


def _page_of(items: Sequence[LogEntry], page: PageRequest) -> list[LogEntry]:
    ordered = list(reversed(items)) if page.newest_first else list(items)
    return ordered[page.offset : page.offset + page.limit]


class Executions:
    """The owner's reads of a wallet's executions and logs."""

    def __init__(
        self,
        wallets: WalletRepository,
        pages: OperationPages,
        events: EventPages,
        catalog: Catalog,
    ) -> None:
        self._wallets = wallets
        self._pages = pages
        self._events = events
        self._catalog = catalog

    def _owned(self, partner_id: int, chain_id: int, address: str) -> Wallet:
        self._catalog.chain(chain_id)
        return require(self._wallets.get(chain_id, address), chain_id, address).owned_by(partner_id)

    def page(
        self, partner_id: int, chain_id: int, address: str, page: PageRequest
    ) -> tuple[list[Execution], Pagination]:
        """A page of the wallet's executions, by start."""
        wallet = self._owned(partner_id, chain_id, address)
        found, total = self._pages.page_of_wallet(wallet.id, page)
        return [execution_of(e) for e in found], pagination(page, total)

    def logs(
        self, partner_id: int, chain_id: int, address: str, execution_id: str, page: PageRequest
    ) -> tuple[list[LogEntry], Pagination]:
        """A page of one execution's logs; NotFound unless it is the wallet's."""
        wallet = self._owned(partner_id, chain_id, address)
        executed = self._pages.executed(execution_id)
        if executed is None or executed.operation.wallet_id != wallet.id:
            raise NotFound(f"Execution {execution_id} not found for wallet {wallet.address}")
        entries = execution_logs(executed)
        return _page_of(entries, page), pagination(page, len(entries))

    def wallet_logs(
        self, partner_id: int, chain_id: int, address: str, page: PageRequest
    ) -> tuple[list[LogEntry], Pagination]:
        """A page of the wallet's events, as logs."""
        wallet = self._owned(partner_id, chain_id, address)
        found, total = self._events.page_of_wallet(wallet.id, page)
        return [event_log(e) for e in found], pagination(page, total)
