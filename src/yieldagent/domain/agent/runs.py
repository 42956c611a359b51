"""The agent: runs that put each wallet's funds where they earn the most.

A **run** is an operation (``domain.books.operations``, kind ``run``). It holds the wallet's
lease, values the wallet on chain and asks the optimizer for a plan over the wallet's
protocols less the paused ones. A plan with moves turns the wallet ``running`` and is
stored, every move a planned step, in the same commit, before anything executes. The
moves then execute in order (withdrawals first), each step marked with its transaction
as it is mined; the run closes by booking what the chain shows (``Books.close``) and
returning the wallet to ``activated``. A run that finds nothing worth moving answers
``no_action``; one the chain or the rules refuse before anything moves answers ``failed``.
Every run leaves its outcome and reason on the wallet's schedule row (its last run, and a
count of runs); a run that moved funds is also an operation, with its steps.

**Scheduling** spreads runs over replicas: each claims a batch of due wallets (see
``storage.runs``), runs them and sets their next run one interval later, renewing the
batch's leases while it works.

**Recovery** of a run a crash interrupted is ``domain.books.reconciliation``'s, as for every
operation: its steps are settled from the chain's history, the wallet is booked afresh
and returned to ``activated``, and the run is closed as ``recovered``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from yieldagent.domain.agent import rounds
from yieldagent.domain.agent.plan import NoMoves, Planner, refusal
from yieldagent.domain.agent.rounds import PlannedRun, RunOutcome
from yieldagent.domain.books.operations import (
    FAILED,
    RECOVERED,
    RUN,
    Operation,
)
from yieldagent.domain.books.reconciliation import Repair
from yieldagent.domain.books.valuation import value, value_many
from yieldagent.domain.books.wallet_states import WalletStatus, allowed, transition
from yieldagent.domain.books.wallets import Wallet, WalletRepository
from yieldagent.domain.errors import Conflict, YieldAgentError
from yieldagent.domain.money.lifecycle import Lifecycle
from yieldagent.domain.optimizer.rebalance import Costs, Thresholds
from yieldagent.domain.ports.chain import ChainPort
from yieldagent.domain.ports.observers import UNOBSERVED, RunObserver

log = logging.getLogger(__name__)


class RunRepository(Protocol):
    """Where the schedule and protocol pauses are kept."""

    def claim_due(self, now: float, owner: str, lease_until: float, limit: int) -> list[int]:
        """Leases up to ``limit`` due wallets for ``owner``; returns their ids."""

    def schedule(self, wallet_id: int, next_run_at: float) -> None:
        """Sets when the wallet runs next."""

    def finish(self, ends: Sequence[RunEnd], owner: str, next_run_at: float, at: float) -> None:
        """In one transaction, for each of ``ends``: notes the run's outcome (at ``at``) if
        the wallet ran, sets its next run, and releases the lease ``owner`` still holds."""

    def note(self, end: RunEnd, at: float) -> None:
        """Notes the outcome of a run made on request (``Agent.run``)."""

    def paused(self, chain_id: int) -> frozenset[str]:
        """Protocols the operator paused on ``chain_id``."""

    @property
    def parallel_writes(self) -> bool:
        """Whether a ``finish`` from another thread can proceed while this one writes
        (False where the database has one writer: the second would only wait)."""


@dataclass(frozen=True, slots=True)
class RunEnd:
    """How a wallet's turn ended: its run's outcome (``no_action``, ``failed`` or a moving
    run's operation status) and why, or ``status`` None when the wallet was not run (no
    longer activated, or the chain did not answer before its run began)."""

    wallet_id: int
    status: str | None = None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """How often wallets run and when a rebalance pays."""

    interval_seconds: float = 3600.0
    thresholds: Thresholds = field(default_factory=Thresholds)
    batch: int = 100


class Agent:
    """Runs wallets' agents, on schedule or on request."""

    def __init__(
        self,
        lifecycle: Lifecycle,
        wallets: WalletRepository,
        runs: RunRepository,
        settings: AgentSettings,
        observer: RunObserver = UNOBSERVED,
    ) -> None:
        self._lifecycle = lifecycle
        self._books = lifecycle.books
        self._wallets = wallets
        self._runs = runs
        self._settings = settings
        self._observer = observer
        self._overlapping = False
        """Whether a batch's last write may go on while the next batch runs (``run_cycle``)."""
        self._writing: asyncio.Future[None] | None = None
        """That write, while in flight."""
        lifecycle.reconciler.register(RUN, self._resume)

    @property
    def thresholds(self) -> Thresholds:
        """When a rebalance is worth its cost."""
        return self._settings.thresholds

    # -- one run -----------------------------------------------------------------------

    async def run(
        self,
        chain_id: int,
        address: str,
        partner_id: int | None = None,
        owner: str | None = None,
    ) -> RunOutcome:
        """Runs the wallet's agent now. With ``partner_id`` (a manual run) the partner must
        own it and its state must allow a run (else 409); a manual run waits for a run
        already in progress, then runs. The observer hears of the run (``RunObserver``)."""
        try:
            outcome = await self._run_now(chain_id, address, partner_id, owner)
        except YieldAgentError:
            if partner_id is None:  # a partner's request the service refused is no run
                self._observer.run_ended(chain_id, None)
            raise
        except Exception:
            self._observer.run_ended(chain_id, None)
            raise
        self._observer.run_ended(chain_id, outcome)
        return outcome

    async def _run_now(
        self, chain_id: int, address: str, partner_id: int | None, owner: str | None
    ) -> RunOutcome:
        wallet = self._books.wallet(chain_id, address, partner_id)
        async with self._books.leases.hold(wallet.id, owner) as holder:
            current = self._books.reread(wallet)
            # The state is checked once the lease is held: a run in progress is waited for.
            if not allowed(current.status, "run"):
                if partner_id is not None:
                    transition(current.status, "run")
                return RunOutcome("no_action", f"the wallet is {current.status}", "", ran=False)
            return await self._run(current, holder)

    async def _run(self, wallet: Wallet, owner: str) -> RunOutcome:
        chain = self._books.chain(wallet.chain_id)
        head = await chain.head()
        # Planning only reads, and the lease keeps every other call away meanwhile: the
        # wallet turns `running` only when there is something to move.
        try:
            paused = self._runs.paused(wallet.chain_id)
            valuation = await value(chain, wallet)
            costs = await self._books.costs(chain, wallet)
        except Exception as refused:  # the chain failed to answer
            return self._note(wallet, FAILED, refusal(refused))
        decision = Planner(paused, self.thresholds).plan(wallet, valuation, costs)
        if isinstance(decision, NoMoves):
            return self._note(wallet, decision.status, decision.reason)
        return await self._execute(chain, head.number, owner, decision)

    async def _execute(
        self, chain: ChainPort, block: int, owner: str, planned: PlannedRun
    ) -> RunOutcome:
        """Executes the planned run's moves and books the outcome (see
        ``domain.agent.rounds``); Conflict when the wallet changed since it was read."""
        [outcome] = await rounds.execute(self._books, chain, block, owner, [planned])
        if isinstance(outcome, Conflict):
            raise outcome
        self._runs.note(RunEnd(planned.wallet.id, outcome.status, outcome.reason), self._now())
        return outcome

    def _note(self, wallet: Wallet, status: str, reason: str) -> RunOutcome:
        """Notes a run on request that moved nothing."""
        self._runs.note(_ended(wallet, status, reason), self._now())
        return RunOutcome(status, reason, "")

    def _now(self) -> float:
        """Wall-clock unix time, as the schedule keeps it."""
        return self._books.clock.time()

    async def _back_to_activated(
        self, chain: ChainPort, wallet: Wallet, operation: Operation, owner: str
    ) -> Wallet:
        after = wallet
        if after.status == WalletStatus.RUNNING:
            after = replace(after, status=transition(after.status, "run_finished"))
        return await self._books.close(chain, after, owner, operation)

    async def _resume(
        self, chain: ChainPort, wallet: Wallet, operation: Operation, owner: str
    ) -> Operation:
        """A run a crash interrupted: what the chain mined is booked, the wallet goes back to
        ``activated``, and the next run plans afresh."""
        reason = f"{operation.steps_done} steps recovered after a crash"
        closed = operation.closed(RECOVERED, reason)
        await self._back_to_activated(chain, wallet, closed, owner)
        log.warning(
            "run recovered", extra={"wallet": wallet.address, "recorded": operation.steps_done}
        )
        return closed

    # -- the schedule ----------------------------------------------------------------------

    async def run_cycle(self, stopping: Callable[[], bool] = lambda: False) -> int:
        """Runs batches (``run_due``) until none is due or ``stopping`` says so; returns
        how many ran.

        Each batch ends with one write: its runs' outcomes, next runs and lease releases. Here
        that write goes to the database from a thread while the next batch is claimed,
        read and planned, one write at a time and in order, and the cycle returns once
        the last is stored. The wallets of a write in flight are still leased, so no
        claim can take them meanwhile; a process that dies first leaves them to run again
        once their leases lapse, as it would have before the write. So the database
        server's work on the write overlaps the planning, where the database takes writes
        in parallel (``RunRepository.parallel_writes``; SQLite does not).
        """
        ran = 0
        self._overlapping = self._runs.parallel_writes
        try:
            while not stopping() and (batch := await self.run_due()):
                ran += batch
        finally:
            self._overlapping = False
            await self._written()
        return ran

    async def run_due(self) -> int:
        """Claims a batch of due wallets, runs each once, and returns how many ran.

        The claim's lease is held to the end: the next run is set (an interval on) before
        the lease is released, so no replica can find the wallet due and free in between.
        While the batch runs, the leases of its wallets not yet done are renewed every
        third of a lease, so a batch may take longer than one lease. If this process
        dies, the renewals stop and its wallets are due again once their lease lapses.

        The batch is read and planned at once (see ``_run_batch``); runs that move
        nothing are noted, rescheduled and released together, in one transaction,
        before the runs with moves execute together (``domain.agent.rounds``).
        """
        leases = self._books.leases
        now = self._books.clock.time()
        owner = leases.owner("agent")
        pending = set(self._runs.claim_due(now, owner, now + leases.seconds, self._settings.batch))
        if not pending:
            return 0
        keeper = asyncio.create_task(leases.keep(lambda: sorted(pending), owner))
        try:
            return await self._run_batch(pending, owner, now + self._settings.interval_seconds)
        finally:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper

    async def _run_batch(self, pending: set[int], owner: str, next_run: float) -> int:
        """Runs the claimed wallets ``pending`` (emptied as each is rescheduled and
        released): every wallet of a chain is valued at one head, with the chain's pauses
        and costs read once, and wallets with the same holdings and rules share one
        settled check. Returns how many ran."""
        wallets = self._wallets.get_many(sorted(pending))
        pending.intersection_update(w.id for w in wallets)  # vanished rows: nothing to free
        by_chain: dict[int, list[Wallet]] = {}
        for wallet in wallets:
            by_chain.setdefault(wallet.chain_id, []).append(wallet)
        ran = 0
        for chain_id, group in by_chain.items():
            ran += await self._run_chain_batch(chain_id, group, owner, next_run, pending)
        return ran

    async def _run_chain_batch(
        self,
        chain_id: int,
        wallets: list[Wallet],
        owner: str,
        next_run: float,
        pending: set[int],
    ) -> int:
        ends: list[RunEnd] = []  # of the runs that move nothing, and the wallets not run
        try:
            chain = self._books.chain(chain_id)
            head = await chain.head()
            paused = self._runs.paused(chain_id)
        except Exception:
            log.exception("scheduled runs failed", extra={"chain_id": chain_id})
            await self._finish([RunEnd(w.id) for w in wallets], owner, next_run, pending)
            for _ in wallets:
                self._observer.run_ended(chain_id, None)
            return 0
        ran = 0
        runnable: list[Wallet] = []
        for wallet in wallets:
            if allowed(wallet.status, "run"):
                runnable.append(wallet)
            else:  # claimed wallets are activated; as ``run``, not a run otherwise
                ends.append(RunEnd(wallet.id))
                ran += 1
        try:
            valuations = await value_many(chain, runnable, head)
        except Exception as refused:  # the chain failed to answer
            valuations = {}
            reason = refusal(refused)
            ends += [_ended(wallet, FAILED, reason) for wallet in runnable]
            runnable = []
        planner = Planner(paused, self._settings.thresholds)
        costs: dict[str, Costs] = {}
        planned: list[PlannedRun] = []
        for wallet in runnable:
            try:
                if wallet.token not in costs:
                    costs[wallet.token] = await self._books.costs(chain, wallet)
            except Exception as refused:  # the chain failed to answer
                ends.append(_ended(wallet, FAILED, refusal(refused)))
                continue
            decision = planner.plan(wallet, valuations[wallet.id], costs[wallet.token])
            if isinstance(decision, NoMoves):
                ends.append(_ended(wallet, decision.status, decision.reason))
            else:
                planned.append(decision)
        # What moves nothing is done: noted and let go at once, in one transaction.
        await self._finish(ends, owner, next_run, pending)
        for end in ends:
            if end.status is not None:
                self._observer.run_ended(chain_id, RunOutcome(end.status, end.reason, ""))
                ran += 1
        outcomes: Sequence[RunOutcome | Conflict] = [_UNFINISHED] * len(planned)
        try:
            outcomes = await rounds.execute(self._books, chain, head.number, owner, planned)
        except Exception:
            log.exception("scheduled runs failed", extra={"chain_id": chain_id})
        finally:
            moved = [_end_of(p.wallet, o) for p, o in zip(planned, outcomes, strict=True)]
            await self._finish(moved, owner, next_run, pending)
        for outcome in outcomes:
            if isinstance(outcome, Conflict):
                self._observer.run_ended(chain_id, None)
            else:
                self._observer.run_ended(chain_id, outcome)
                ran += 1
        return ran

    async def _finish(
        self, ends: list[RunEnd], owner: str, next_run: float, pending: set[int]
    ) -> None:
        """Notes the ``ends``, sets the wallets' next run and releases their leases: at
        once, or, within ``run_cycle``, from a thread while the cycle goes on."""
        if ends:
            finishing = (ends, owner, next_run, self._now())
            if self._overlapping:
                await self._written()  # one write at a time, in order
                self._writing = asyncio.ensure_future(
                    asyncio.to_thread(self._runs.finish, *finishing)
                )
            else:
                self._runs.finish(*finishing)
        pending.difference_update(end.wallet_id for end in ends)

    async def _written(self) -> None:
        """Waits for the write in flight, if any (a failed one is logged: its wallets'
        leases lapse and they run again, as if this process had died)."""
        writing, self._writing = self._writing, None
        if writing is not None:
            try:
                await writing
            except Exception:
                log.exception("storing the end of scheduled runs failed")

    # -- recovery --------------------------------------------------------------------------

    async def reconcile(self) -> list[Repair]:
        """Finishes every operation (runs among them) a killed process left open."""
        return await self._lifecycle.reconcile()


_UNFINISHED = Conflict("the runs did not finish")
"""A moving run's outcome until its rounds return (they raised, or were cancelled)."""


def _ended(wallet: Wallet, status: str, reason: str) -> RunEnd:
    """The end of a run that moved nothing; a failed one is logged."""
    if status == FAILED:
        log.warning("run failed", extra={"wallet": wallet.address, "reason": reason})
    return RunEnd(wallet.id, status, reason)


def _end_of(wallet: Wallet, outcome: RunOutcome | Conflict) -> RunEnd:
    """The end of a moving run: its operation's outcome, or not run (it did not finish)."""
    if isinstance(outcome, Conflict):
        return RunEnd(wallet.id)
    return RunEnd(wallet.id, outcome.status, outcome.reason)
