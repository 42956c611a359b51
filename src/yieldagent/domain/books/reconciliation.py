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
import contextlib
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
ResumeMany = Callable[
    [MarketChain, Sequence[tuple[Wallet, Operation]], str],
    Awaitable[list[Operation | Exception]],
]
"""Rolls many operations of one chain forward or closes them, each with its wallet (their
pending steps settled, all leased by the one owner given), committing the wallets
together; returns, in order, each operation as it ended, or why it is left open."""
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

    async def finish_together(
        self, operations: Sequence[Operation], resume: ResumeMany
    ) -> list[Repair]:
        """Finishes ``operations`` (open ones no live process holds) together: each wallet
        whose lease is free now is leased by one owner, its pending steps settled, and
        those of one chain go to ``resume`` at once, so that their chain calls share
        requests and blocks rather than waiting one after another. A wallet busy
        meanwhile, or one ``resume`` leaves open, is the next pass's."""
        books = self._books
        owner = books.leases.owner("finish")
        held: list[int] = []
        keeper = asyncio.create_task(books.leases.keep(lambda: held, owner))
        try:
            for wallet_id in dict.fromkeys(operation.wallet_id for operation in operations):
                if books.leases.try_acquire(wallet_id, owner):
                    held.append(wallet_id)
            wanted = {operation.id for operation in operations}
            still_open = books.operations.open_on_many(held)
            by_chain: dict[int, list[tuple[Wallet, Operation]]] = {}
            for wallet in books.wallets.get_many(held):
                for operation in still_open.get(wallet.id, []):
                    if operation.id in wanted:  # not finished by another pass meanwhile
                        by_chain.setdefault(wallet.chain_id, []).append((wallet, operation))
            repairs = []
            for opened in by_chain.values():
                try:
                    repairs += await self._finish_on_chain(opened, resume, owner)
                except Exception:  # the next pass tries them again
                    log.exception("reconciliation failed", extra={"operations": len(opened)})
            return repairs
        finally:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
            for wallet_id in held:
                books.leases.release(wallet_id, owner)

    async def _finish_on_chain(
        self, opened: Sequence[tuple[Wallet, Operation]], resume: ResumeMany, owner: str
    ) -> list[Repair]:
        books = self._books
        chain = books.chain(opened[0][0].chain_id)
        settled = await asyncio.gather(
            *(books.recover_steps(chain, wallet, operation) for wallet, operation in opened),
            return_exceptions=True,
        )
        ready = []
        for (wallet, operation), got in zip(opened, settled, strict=True):
            if isinstance(got, Operation):
                ready.append((wallet, got))
            elif isinstance(got, Exception):
                _failed(wallet, operation.id, got)
            else:
                raise got
        ended = await resume(chain, ready, owner)
        after = {w.id: w for w in books.wallets.get_many([w.id for w, _ in ready])}
        repairs = []
        for (wallet, operation), end in zip(ready, ended, strict=True):
            if isinstance(end, Exception):
                _failed(wallet, operation.id, end)
            elif wallet.id in after:
                repairs.append(_repaired(wallet, end, after[wallet.id]))
        return repairs

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
        return _repaired(wallet, ended, books.reread(wallet))

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


def _repaired(wallet: Wallet, ended: Operation, after: Wallet) -> Repair:
    """What reconciliation did to ``wallet`` (as it was before), logged."""
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


def _failed(wallet: Wallet, operation_id: str, error: Exception) -> None:
    """Logs an operation left open by a failure (the next pass tries again); a wallet
    that changed meanwhile is no failure."""
    if isinstance(error, Conflict):
        return
    log.error(
        "reconciliation failed",
        extra={"wallet": wallet.address, "operation": operation_id},
        exc_info=error,
    )
