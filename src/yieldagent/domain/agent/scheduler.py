"""The schedule: every activated wallet runs once an interval, its runs spread over
replicas.

Each replica claims a batch of due wallets (see ``storage.runs``), runs them and sets their
next run one interval later, renewing the batch's leases while it works. A batch is read
and planned at once: every wallet of a chain is valued at one head, with the chain's pauses
and costs read once, its pools judged by the risk guards once (``domain.risk.survey``),
and planned by one ``Planner`` (``domain.agent.plan``), so that
wallets with the same holdings and rules are checked once. Runs that move nothing are
noted, rescheduled and released together, in one transaction, before the runs with moves
execute together (``domain.agent.rounds``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from yieldagent.domain.agent import rounds
from yieldagent.domain.agent.plan import NoMoves, Planner, refusal
from yieldagent.domain.agent.ports import RunObserver
from yieldagent.domain.agent.rounds import PlannedRun, RunOutcome
from yieldagent.domain.books.books import Books
from yieldagent.domain.books.operations import OperationStatus
from yieldagent.domain.books.ports import WalletRepository
from yieldagent.domain.books.valuation import UNREAD, value_many
from yieldagent.domain.books.wallet_states import WalletAction, allowed
from yieldagent.domain.books.wallets import Wallet
from yieldagent.domain.constraints import Thresholds
from yieldagent.domain.errors import Conflict
from yieldagent.domain.optimizer.placement import moving_costs
from yieldagent.domain.optimizer.rebalance import Costs
from yieldagent.domain.ports.storage import RunEnd, RunRepository
from yieldagent.domain.risk.survey import UNGUARDED, RiskSurvey, RiskView, risk_view

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """How often wallets run and when a rebalance pays."""

    interval_seconds: float = 3600.0
    thresholds: Thresholds = field(default_factory=Thresholds)
    batch: int = 100
    concurrent_batches: int = 2
    """Batches one cycle runs at once: while one batch's transactions wait to be mined,
    the next is claimed, read, planned and sent, so the chain's blocks stay full."""


class Scheduler:
    """Runs every due wallet once, batch after batch; each run's end goes to ``observer``."""

    def __init__(
        self,
        books: Books,
        wallets: WalletRepository,
        runs: RunRepository,
        settings: AgentSettings,
        observer: RunObserver,
        risk: RiskSurvey | None = None,
    ) -> None:
        self._books = books
        self._wallets = wallets
        self._runs = runs
        self._risk = risk
        self._settings = settings
        self._observer = observer
        self._overlapping = False
        """Whether a batch's last write may go on while the next batch runs (``run_cycle``)."""
        self._writing: asyncio.Future[None] | None = None
        """That write, while in flight."""
        self._write_turn = asyncio.Lock()
        """Held from waiting for the write in flight to starting the next, so that batches
        run at once still write one at a time, in order."""
        self._exiting: set[tuple[int, str, str]] = set()
        """(chain, token, protocol) of the pools the guards exit whose wallets were all
        made due (``_hasten_exits``), until the pool is no longer exited."""
        self._running = 0
        """Lanes of the cycle with a batch in flight."""
        self._progress = asyncio.Event()
        """Set (and replaced) when a lane's batch ends or an exit makes wallets due: what a
        lane that found nothing due waits for while another lane's batch runs."""

    async def run_cycle(self, stopping: Callable[[], bool] = lambda: False) -> int:
        """Runs batches (``run_due``) until none is due or ``stopping`` says so; returns
        how many ran. ``AgentSettings.concurrent_batches`` lanes claim and run batches at
        once (the claims never share a wallet), so that a batch waiting for its receipts
        does not leave the chain's blocks empty.

        Each batch ends with one write: its runs' outcomes, next runs and lease releases. Here
        that write goes to the database from a thread while the next batch is claimed,
        read and planned, one write at a time and in order, and the cycle returns once
        the last is stored. The wallets of a write in flight are still leased, so no
        claim can take them meanwhile; a process that dies first leaves them to run again
        once their leases lapse, as it would have before the write. So the database
        server's work on the write overlaps the planning, where the database takes writes
        in parallel (``RunRepository.parallel_writes``; SQLite does not).
        """
        self._overlapping = self._runs.parallel_writes
        try:
            lanes = max(self._settings.concurrent_batches, 1)
            ran = await asyncio.gather(*(self._drain(stopping) for _ in range(lanes)))
        finally:
            self._overlapping = False
            await self._written()
        return sum(ran)

    async def _drain(self, stopping: Callable[[], bool]) -> int:
        """One lane of a cycle: batch after batch until none is due and no other lane's
        batch runs. A lane that finds nothing due while another lane's batch runs waits
        for that batch to end, or for an exit to make wallets due, and claims again: an
        exit found by one batch makes the pool's wallets due, and every lane takes them.
        A batch that claimed wallets but ran none (the chain failed to answer) ends its
        lane."""
        ran = 0
        while not stopping():
            progress = self._progress
            ended = True
            self._running += 1
            try:
                batch = await self._claim_and_run()
                ended = batch is not None
            finally:
                self._running -= 1
                if ended:  # a batch ended (or raised): the waiting lanes claim again
                    self._progressed()
            if batch is not None:
                ran += batch
                if not batch:
                    break
            elif self._running:
                await progress.wait()
            else:
                break
        return ran

    def _progressed(self) -> None:
        """Wakes the lanes waiting for another lane's batch (``_drain``)."""
        self._progress.set()
        self._progress = asyncio.Event()

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
        return await self._claim_and_run() or 0

    async def _claim_and_run(self) -> int | None:
        """``run_due``; None when nothing was due."""
        leases = self._books.leases
        now = self._books.clock.time()
        owner = leases.owner("agent")
        claimed = self._runs.claim_due(now, owner, now + leases.seconds, self._settings.batch)
        if not claimed:
            return None
        pending = set(claimed)
        last_moves = {wallet_id: at for wallet_id, at in claimed.items() if at is not None}
        keeper = asyncio.create_task(leases.keep(lambda: sorted(pending), owner))
        try:
            return await self._run_batch(
                pending, last_moves, owner, now + self._settings.interval_seconds
            )
        finally:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper

    async def _run_batch(
        self, pending: set[int], last_moves: Mapping[int, float], owner: str, next_run: float
    ) -> int:
        """Runs the claimed wallets ``pending`` (emptied as each is rescheduled and
        released), ``last_moves``: when those that ever moved funds last did. Every wallet of a
        chain is valued at one head, with the chain's pauses and costs read once, and
        wallets with the same holdings and rules share one settled check. Returns how many
        ran."""
        wallets = self._wallets.get_many(sorted(pending))
        pending.intersection_update(w.id for w in wallets)  # vanished rows: nothing to free
        by_chain: dict[int, list[Wallet]] = {}
        for wallet in wallets:
            by_chain.setdefault(wallet.chain_id, []).append(wallet)
        ran = 0
        for chain_id, group in by_chain.items():
            ran += await self._run_chain_batch(
                chain_id, group, last_moves, owner, next_run, pending
            )
        return ran

    async def _run_chain_batch(
        self,
        chain_id: int,
        wallets: list[Wallet],
        last_moves: Mapping[int, float],
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
            if allowed(wallet.status, WalletAction.RUN):
                runnable.append(wallet)
            else:  # claimed wallets are activated; as ``run``, not a run otherwise
                ends.append(RunEnd(wallet.id))
                ran += 1
        risk = UNGUARDED
        try:
            valuations = await value_many(chain, runnable, head, partial=True)
            unread = [wallet for wallet in runnable if wallet.id not in valuations]
            ends += [_ended(wallet, OperationStatus.FAILED, UNREAD) for wallet in unread]
            runnable = [wallet for wallet in runnable if wallet.id in valuations]
            risk = await risk_view(
                self._risk,
                chain_id,
                chain,
                runnable,
                valuations,
                head.timestamp,
                self._now(),
                last_moves,
            )
        except Exception as refused:  # the chain, or the guards' store, failed to answer
            valuations = {}
            reason = refusal(refused)
            ends += [_ended(wallet, OperationStatus.FAILED, reason) for wallet in runnable]
            runnable = []
        self._hasten_exits(chain_id, risk)
        planner = Planner(paused, self._settings.thresholds, risk)
        costs: dict[str, Costs] = {}
        planned: list[PlannedRun] = []
        for wallet in runnable:
            try:
                if wallet.token not in costs:
                    costs[wallet.token] = await moving_costs(chain, self._books.token_info(wallet))
            except Exception as refused:  # the chain failed to answer
                ends.append(_ended(wallet, OperationStatus.FAILED, refusal(refused)))
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

    async def watch_exits(self) -> int:
        """Judges, on every chain, the pools the service holds funds in, as a batch's
        survey judges them, and makes due now the wallets of each pool the guards newly
        exit (``_hasten_exits``), and those of any exited pool whose last run failed
        (``_retry_exits``); returns how many it made due. So a pool that fails is seen
        within a watch's period even when no wallet is due, and the next cycle leaves it.
        A chain that fails to answer is read again at the next watch."""
        if self._risk is None:
            return 0
        hastened = 0
        catalog = self._books.catalog
        for chain_id in catalog.chain_ids():
            held = {
                token.address: names
                for token in catalog.chain(chain_id).tokens
                if (names := self._risk.held(chain_id, token.address))
            }
            if not held:
                continue
            try:
                chain = self._books.chain(chain_id)
                head = await chain.head()
                quotes = {
                    token: {q.protocol: q for q in await chain.quotes(token, names)}
                    for token, names in held.items()
                }
                view = await self._risk.view(chain_id, chain, quotes, head.timestamp)
            except Exception:  # the chain, or the guards' store, failed to answer
                log.warning("the guards' watch failed", extra={"chain_id": chain_id})
                continue
            hastened += self._hasten_exits(chain_id, view) + self._retry_exits(chain_id, view)
        return hastened

    def _retry_exits(self, chain_id: int, risk: RiskView) -> int:
        """The wallets that still hold funds in a pool the guards exit and whose last run
        failed, due now again (once per watch): a refusal the chain gave once (an error of
        the node, an estimate answered from a block being mined) keeps no wallet in the
        pool until its next interval. Returns how many."""
        retried = 0
        for token, protocol in sorted(k for k, pool in risk.pools.items() if pool.verdict.exit):
            retried += self._runs.hasten(chain_id, token, [protocol], self._now(), failed_only=True)
        if retried:
            self._progressed()
            log.warning("failed exits run again", extra={"chain_id": chain_id, "wallets": retried})
        return retried

    def _hasten_exits(self, chain_id: int, risk: RiskView) -> int:
        """When the guards first exit a pool, makes every wallet that holds funds there due
        now, so that the fleet leaves it in this cycle (batch after batch) rather than
        each wallet at its own next run while the pool's cash runs out. Returns how many
        wallets it made due."""
        exits = {
            (chain_id, token, protocol)
            for (token, protocol), pool in risk.pools.items()
            if pool.verdict.exit
        }
        self._exiting = {e for e in self._exiting if e[0] != chain_id} | (exits & self._exiting)
        total = 0
        for key in sorted(exits - self._exiting):
            _, token, protocol = key
            hastened = self._runs.hasten(chain_id, token, [protocol], self._now())
            self._exiting.add(key)
            if hastened:
                self._progressed()  # the lanes that found nothing due take them
            total += hastened
            log.warning(
                "wallets leave an exited pool now",
                extra={"chain_id": chain_id, "protocol": protocol, "wallets": hastened},
            )
        return total

    async def _finish(
        self, ends: list[RunEnd], owner: str, next_run: float, pending: set[int]
    ) -> None:
        """Notes the ``ends``, sets the wallets' next run and releases their leases: at
        once, or, within ``run_cycle``, from a thread while the cycle goes on."""
        if ends:
            finishing = (ends, owner, next_run, self._now())
            if self._overlapping:
                async with self._write_turn:
                    await self._written()  # one write at a time, in order
                    self._writing = asyncio.ensure_future(
                        asyncio.to_thread(self._runs.finish, *finishing)
                    )
            else:
                self._runs.finish(*finishing)
        pending.difference_update(end.wallet_id for end in ends)

    def _now(self) -> float:
        """Wall-clock unix time, as the schedule keeps it."""
        return self._books.clock.time()

    async def _written(self) -> None:
        """Waits for the write in flight, if any (a failed one is logged: its wallets'
        leases lapse and they run again, as if this process had died)."""
        writing, self._writing = self._writing, None
        if writing is not None:
            try:
                await writing
            except Exception:
                log.exception("storing the end of scheduled runs failed")


_UNFINISHED = Conflict("the runs did not finish")
"""A moving run's outcome until its rounds return (they raised, or were cancelled)."""


def _ended(wallet: Wallet, status: str, reason: str) -> RunEnd:
    """The end of a run that moved nothing; a failed one is logged."""
    if status == OperationStatus.FAILED:
        log.warning("run failed", extra={"wallet": wallet.address, "reason": reason})
    return RunEnd(wallet.id, status, reason)


def _end_of(wallet: Wallet, outcome: RunOutcome | Conflict) -> RunEnd:
    """The end of a moving run: its operation's outcome, or not run (it did not finish)."""
    if isinstance(outcome, Conflict):
        return RunEnd(wallet.id)
    return RunEnd(wallet.id, outcome.status, outcome.reason)
