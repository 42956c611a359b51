"""Runs with moves, executed together: many wallets' plans in a few transactions.

A batch of planned runs on one chain goes through three phases:

1. **Intent.** Every run's operation, each move a planned step, is stored with its
   wallet turning ``running``, all in one commit, before any step executes. The commit
   checks each wallet's version and lease: a wallet that changed meanwhile is left out,
   nothing of it stored, and moves nothing.
2. **Rounds.** Round *k* sends wave *k* of every run still going, each step its own
   transaction, at once (``Books.perform_many``). A wave is a run of consecutive steps
   of one kind (``waves``): a plan's withdrawals, from different pools, go out together,
   and so do its supplies, which the idle balance and the withdrawals before them fund;
   the supplies wait for the withdrawals' wave. A placement of new funds over several
   pools is one round, not one a pool. The round's mined steps are marked, in one
   statement, before the next round. A step the chain refuses ends its run's rounds; the
   chain's history then says which of its steps happened (``Books.recover_many``: the
   refused runs' histories read at once).
3. **Close.** The runs are booked from the chain's events and closed, each wallet back
   to ``activated``, in one commit (``Books.close_many``).

A crash at any point leaves stored intents that reconciliation finishes from the
chain's history, as for a single run.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

from yieldagent.domain.books.books import Books
from yieldagent.domain.books.operations import (
    MOVES,
    Operation,
    OperationKind,
    OperationStatus,
    Step,
)
from yieldagent.domain.books.wallet_states import WalletAction, transition
from yieldagent.domain.books.wallets import Journal, Wallet
from yieldagent.domain.errors import Conflict, YieldAgentError
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.optimizer.rebalance import Plan

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """What a run did: completed (funds moved), no_action or failed, and why."""

    status: str
    reason: str
    run_id: str
    """The run's operation, if it moved funds ("" otherwise)."""
    moved: tuple[tuple[str, str, int], ...] = ()
    """(token, action, amount) of each move the chain mined."""
    ran: bool = True
    """False when the wallet's state allowed no run."""


@dataclass(frozen=True, slots=True)
class PlannedRun:
    """A wallet (activated, its lease held) and the steps its plan makes."""

    wallet: Wallet
    plan: Plan
    steps: tuple[Step, ...]
    moving_out: str = ""
    """The wallet's ``status_reason`` while the run moves it out of pools the guards
    exit ("" when it leaves none)."""
    left_behind: str = ""
    """Its ``status_reason`` after the run: what the pools it exits could not yet return
    ("" when nothing is left); a later run takes the rest."""


_CHANGED = "The wallet changed meanwhile; retry"


async def execute(
    books: Books, chain: MarketChain, block: int, owner: str, planned: Sequence[PlannedRun]
) -> list[RunOutcome | Conflict]:
    """Executes ``planned`` (wallets of ``chain``, their leases held by ``owner``) and books
    the outcomes; for each run, its outcome, or Conflict when its wallet changed
    meanwhile (then nothing moved, or, if the close was refused, its operation stays
    open for reconciliation)."""
    operations = [
        books.begin(p.wallet, OperationKind.RUN, block, owner, steps=p.steps) for p in planned
    ]
    running = [
        replace(
            p.wallet,
            status=transition(p.wallet.status, WalletAction.RUN),
            status_reason=p.moving_out,
        )
        for p in planned
    ]
    stored = books.commits.commit_many(
        [Journal(w, operation=op, owner=owner) for w, op in zip(running, operations, strict=True)]
    )
    live = [i for i, ok in enumerate(stored) if ok]
    sent = await _rounds(books, chain, [(running[i], operations[i]) for i in live])
    refused = [
        (running[i], op) for i, (op, error) in zip(live, sent, strict=True) if error is not None
    ]
    recovered = iter(await books.recover_many(chain, refused))
    closing: list[tuple[Wallet, Operation]] = []
    for i, (operation, error) in zip(live, sent, strict=True):
        if error is not None:
            operation = next(recovered)
            failed = next((n for n, st in enumerate(operation.steps, 1) if not st.done), 0)
            reason = f"step {failed} failed: {error.detail}"
            operation = operation.closed(OperationStatus.FAILED, reason)
        else:
            operation = operation.closed(OperationStatus.COMPLETED, planned[i].plan.reason)
        back = replace(
            running[i],
            status=transition(running[i].status, WalletAction.RUN_FINISHED),
            status_reason=planned[i].left_behind,
        )
        closing.append((back, operation))
    closed = await books.close_many(chain, closing, owner)
    outcomes: list[RunOutcome | Conflict] = [Conflict(_CHANGED) for _ in planned]
    for i, (wallet, operation), booked in zip(live, closing, closed, strict=True):
        if booked is None:
            log.warning("run left open: its close was refused", extra={"wallet": wallet.address})
            continue
        moved = tuple((s.token, s.action, s.amount) for s in operation.steps if s.done)
        outcomes[i] = RunOutcome(operation.status, operation.reason, operation.id, moved)
        _log(wallet, operation)
    return outcomes


def waves(steps: Sequence[Step]) -> list[range]:
    """``steps``' indexes in the order they can be sent: consecutive supplies or
    consecutive withdrawals together, any other step alone. A wave's steps do not fund
    each other: withdrawals draw on their own pools, and supplies on the idle balance
    that the waves before them left, which the plan's amounts never exceed."""
    found: list[range] = []
    start = 0
    for index in range(1, len(steps) + 1):
        if (
            index == len(steps)
            or steps[index].action not in MOVES
            or steps[index].action != steps[start].action
        ):
            found.append(range(start, index))
            start = index
    return found


async def _rounds(
    books: Books, chain: MarketChain, runs: Sequence[tuple[Wallet, Operation]]
) -> list[tuple[Operation, YieldAgentError | None]]:
    """Sends the runs' steps wave by wave. Returns each run's operation with its mined
    steps marked, and the error that ended it, if one did."""
    done: list[tuple[Operation, YieldAgentError | None]] = [(op, None) for _, op in runs]
    planned = [waves(operation.steps) for _, operation in runs]
    for index in range(max(map(len, planned), default=0)):
        going = [
            (at, step)
            for at, (_, error) in enumerate(done)
            if error is None and index < len(planned[at])
            for step in planned[at][index]
        ]
        sent = await books.perform_many(
            chain, [(runs[at][0], done[at][0], step) for at, step in going]
        )
        marked: dict[int, Operation] = {}
        for (at, step), answer in zip(going, sent, strict=True):
            operation, error = done[at]
            if isinstance(answer, YieldAgentError):
                done[at] = (operation, error or answer)
            else:
                done[at] = (operation.with_step(step, answer.steps[step]), error)
                marked[at] = done[at][0]
        books.operations.save_steps(list(marked.values()))  # before the next round
    return done


def _log(wallet: Wallet, operation: Operation) -> None:
    if operation.status == OperationStatus.FAILED:
        log.warning("run failed", extra={"wallet": wallet.address, "reason": operation.reason})
    else:
        log.info(
            "run completed",
            extra={
                "wallet": wallet.address,
                "moves": len(operation.steps),
                "reason": operation.reason,
            },
        )
