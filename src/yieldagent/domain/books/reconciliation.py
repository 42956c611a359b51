"""Reconciliation: finishing what a crash, a chain error or a short pool left open.

One mechanism serves every kind of operation. For an open operation whose process died
(its wallet's lease lapsed), or a waiting one whose retry is due, it takes the lease,
settles the operation's pending steps from the chain's history (``Books.recover_steps``),
and hands it to its kind's **resume** handler, which rolls it forward or closes it:

    kind            resume
    activate        closes: the wallet is activated; the agent places what is idle
    top_up          closes: the deposit is booked; the agent places what is idle
    withdraw        rolls forward: pays the user what the stored split says, then the fee;
                    closes failed (nothing paid) if the chain refuses
    deactivate      rolls forward: takes what each pool gives, pays out (transfer=true),
                    and either deactivates or waits again while funds are stuck
    claim_rewards   rolls forward: swaps or sends what was claimed, places staked proceeds
    emergency       closes: what left the pools stays idle
    run             closes as recovered: the next run plans afresh

Every resume ends in ``Books.close``, which books every chain event since the wallet's
cursor, so the books agree with the chain whatever the operation did before it died. It
runs at start-up and on every worker tick (``reconcile``), for one wallet on an
operator's request (``reconcile_wallet``), and when an idempotent retry finds its first
call's process dead (``settled``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from yieldagent.domain.books.books import Books
from yieldagent.domain.books.leases import POLL_SECONDS
from yieldagent.domain.books.operations import Operation, OperationKind, OperationStatus, retryable
from yieldagent.domain.books.wallet_states import WalletAction, WalletStatus, transition
from yieldagent.domain.books.wallets import Wallet
from yieldagent.domain.errors import Conflict, NotFound
from yieldagent.domain.market.ports import MarketChain

log = logging.getLogger(__name__)

Resume = Callable[[MarketChain, Wallet, Operation, str], Awaitable[Operation]]
"""Rolls an operation (its pending steps settled) forward or closes it, committing the
wallet with it; returns the operation as it ended."""
Settled = Callable[[str | None], Awaitable[Operation | None]]
"""``Reconciler.settled``, as the use cases that take idempotency keys call it."""

_UNSTUCK = {
    WalletStatus.ACTIVATING: WalletStatus.ACTIVATED,
    WalletStatus.RUNNING: WalletStatus.ACTIVATED,
}


@dataclass(frozen=True, slots=True)
class Repair:
    """What reconciliation did to one wallet."""

    wallet: str
    chain_id: int
    operation: str | None
    kind: str | None
    status_before: str
    status_after: str
    outcome: str
    reason: str
    principal_before: int
    principal_after: int

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready dict (amounts as integers)."""
        return asdict(self)


class Reconciler:
    """Finishes open operations, with each kind's resume handler."""

    def __init__(self, books: Books, handlers: Mapping[OperationKind, Resume]) -> None:
        missing = set(OperationKind) - set(handlers)
        if missing:
            raise ValueError(f"no resume handler for {', '.join(sorted(missing))}")
        self._books = books
        self._handlers = dict(handlers)

    async def reconcile(self) -> list[Repair]:
        """Finishes every operation whose process died and every due retry, and frees
        wallets a crash left in a transient state without an operation."""
        books = self._books
        now = books.clock.time()
        repairs = []
        for operation in books.operations.abandoned(now):
            repair = await self._attempt(operation.wallet_id, operation.id)
            if repair is not None:
                repairs.append(repair)
        for wallet_id in books.operations.stuck(now):
            repair = await self._attempt(wallet_id, None)
            if repair is not None:
                repairs.append(repair)
        return repairs

    async def finish(self, operations: Sequence[Operation], at_once: int) -> list[Repair]:
        """Finishes ``operations`` (open ones no live process holds), up to ``at_once``
        of them at the same time, so that their transactions are mined together rather
        than one block after another; a wallet busy meanwhile is left for the next pass."""
        gate = asyncio.Semaphore(max(at_once, 1))

        async def one(operation: Operation) -> Repair | None:
            async with gate:
                return await self._attempt(operation.wallet_id, operation.id)

        done = await asyncio.gather(*(one(operation) for operation in operations))
        return [repair for repair in done if repair is not None]

    async def _attempt(self, wallet_id: int, operation_id: str | None) -> Repair | None:
        """Repairs one wallet if its lease is free now; None if busy or it failed (the next
        tick tries again)."""
        books = self._books
        wallet = books.wallets.get_by_id(wallet_id)
        if wallet is None:
            return None
        try:
            async with books.leases.hold(wallet_id, wait=False) as owner:
                return await self._repair(books.reread(wallet), operation_id, owner)
        except Conflict:
            return None
        except Exception:
            log.exception(
                "reconciliation failed", extra={"wallet": wallet.address, "operation": operation_id}
            )
            return None

    async def _repair(self, wallet: Wallet, operation_id: str | None, owner: str) -> Repair:
        books = self._books
        chain = books.chain(wallet.chain_id)
        operation = books.operations.get(operation_id) if operation_id is not None else None
        if operation is None or not operation.open:
            return await self._unstick(chain, wallet, owner)
        settled = await books.recover_steps(chain, wallet, operation)
        ended = await self._handlers[settled.kind](chain, wallet, settled, owner)
        after = books.reread(wallet)
        log.warning(
            "operation reconciled",
            extra={
                "wallet": wallet.address,
                "operation": ended.id,
                "kind": ended.kind,
                "status": ended.status,
                "reason": ended.reason,
            },
        )
        return Repair(
            wallet.address,
            wallet.chain_id,
            ended.id,
            ended.kind,
            str(wallet.status),
            str(after.status),
            ended.status,
            ended.reason,
            wallet.principal,
            after.principal,
        )

    async def _unstick(self, chain: MarketChain, wallet: Wallet, owner: str) -> Repair:
        """Books the wallet afresh and moves it out of a transient state no operation
        explains (a process died between two writes)."""
        target = _UNSTUCK.get(wallet.status, wallet.status)
        changed = replace(wallet, status=target)
        after = await self._books.close(chain, changed, owner)
        return Repair(
            wallet.address,
            wallet.chain_id,
            None,
            None,
            str(wallet.status),
            str(after.status),
            "synced",
            "",
            wallet.principal,
            after.principal,
        )

    async def reconcile_wallet(self, chain_id: int, address: str) -> list[Repair]:
        """Finishes every open operation of one wallet now (due or not) and books its
        chain events; waits for the wallet's lease like a partner call."""
        books = self._books
        wallet = books.wallet(chain_id, address)
        repairs = []
        async with books.leases.hold(wallet.id) as owner:
            for operation in books.operations.open_on(wallet.id):
                repairs.append(await self._repair(books.reread(wallet), operation.id, owner))
            repairs.append(await self._repair(books.reread(wallet), None, owner))
        return repairs

    async def settled(self, key: str | None) -> Operation | None:
        """The operation started with idempotency ``key``, once it has ended: waits while
        its process is still running it (at most the lease wait), and finishes it first if
        that process died. A waiting operation (funds stuck) is returned as it is. None if
        no operation has this key, or if it failed on the chain without moving anything (the
        key is then free for a new attempt, as a 5xx leaves an idempotency key free)."""
        books = self._books
        operation = books.operations.by_key(key) if key else None
        if operation is None:
            return None
        deadline = books.clock.monotonic() + books.leases.wait_seconds
        while operation.open and operation.status != OperationStatus.WAITING:
            repair = await self._attempt(operation.wallet_id, operation.id)
            if repair is None:
                if books.clock.monotonic() > deadline:
                    raise Conflict(
                        "The first request with this idempotency key is still in progress; retry",
                        retry_after_seconds=max(1, round(books.leases.seconds / 4)),
                    )
                await books.clock.sleep(POLL_SECONDS)
            current = books.operations.get(operation.id)
            if current is None:
                raise NotFound(f"Operation {operation.id} disappeared")
            operation = current
        if operation.status == OperationStatus.FAILED and retryable(operation):
            books.operations.release_key(operation.id)  # nothing moved: a retry starts anew
            return None
        return operation


async def recover_run(
    books: Books, chain: MarketChain, wallet: Wallet, operation: Operation, owner: str
) -> Operation:
    """A run a crash interrupted: what the chain mined is booked, the wallet goes back to
    ``activated``, and the run closes as ``recovered``; the next run plans afresh."""
    reason = f"{operation.steps_done} steps recovered after a crash"
    closed = operation.closed(OperationStatus.RECOVERED, reason)
    after = wallet
    if after.status == WalletStatus.RUNNING:
        after = replace(after, status=transition(after.status, WalletAction.RUN_FINISHED))
    await books.close(chain, after, owner, closed)
    log.warning("run recovered", extra={"wallet": wallet.address, "recorded": operation.steps_done})
    return closed
