"""One wallet's run: on request, or as the schedule plans it.

A **run** is an operation (``domain.books.operations``, kind ``run``). It holds the wallet's
lease, values the wallet on chain, judges its pools by the risk guards
(``domain.risk.survey``) and plans (``domain.agent.plan``) over the wallet's protocols
less the paused ones. A plan with moves turns the wallet ``running`` and is
stored, every move a planned step, in the same commit, before anything executes. The
moves then execute in order (withdrawals first), each step marked with its transaction
as it is mined; the run closes by booking what the chain shows (``Books.close``) and
returning the wallet to ``activated``. A run that finds nothing worth moving answers
``no_action``; one the chain or the rules refuse before anything moves answers ``failed``.
Every run leaves its outcome and reason on the wallet's schedule row (its last run, and a
count of runs); a run that moved funds is also an operation, with its steps.

**Scheduling** is ``domain.agent.scheduler``'s: the ``Agent`` runs its cycles. Each run's
end is told to the agent's ``RunObserver`` (the metrics, in the service).

**Recovery** of a run a crash interrupted is ``domain.books.reconciliation``'s, as for every
operation: its steps are settled from the chain's history, the wallet is booked afresh
and returned to ``activated``, and the run is closed as ``recovered``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from yieldagent.domain.agent import rounds
from yieldagent.domain.agent.plan import NoMoves, Planner, refusal
from yieldagent.domain.agent.ports import UNOBSERVED, RunObserver
from yieldagent.domain.agent.rounds import PlannedRun, RunOutcome
from yieldagent.domain.agent.scheduler import AgentSettings, Scheduler
from yieldagent.domain.books.books import Books
from yieldagent.domain.books.operations import OperationStatus
from yieldagent.domain.books.ports import WalletRepository
from yieldagent.domain.books.reconciliation import Repair
from yieldagent.domain.books.valuation import value
from yieldagent.domain.books.wallet_states import WalletAction, allowed, transition
from yieldagent.domain.books.wallets import Wallet
from yieldagent.domain.constraints import Thresholds
from yieldagent.domain.errors import Conflict, YieldAgentError
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.optimizer.placement import moving_costs
from yieldagent.domain.ports.storage import RunEnd, RunRepository
from yieldagent.domain.risk.survey import RiskSurvey, risk_view

log = logging.getLogger(__name__)


class Operations(Protocol):
    """What the agent asks of the money use cases (``domain.money.lifecycle.Lifecycle``
    answers it): the books they keep, and finishing what a crash left open."""

    @property
    def books(self) -> Books:
        """The books every use case commits through."""

    async def reconcile(self) -> list[Repair]:
        """Finishes every operation a dead process left open and every due retry."""


class Agent:
    """Runs wallets' agents, on schedule or on request."""

    def __init__(
        self,
        lifecycle: Operations,
        wallets: WalletRepository,
        runs: RunRepository,
        settings: AgentSettings,
        observer: RunObserver = UNOBSERVED,
        risk: RiskSurvey | None = None,
    ) -> None:
        self._lifecycle = lifecycle
        self._books = lifecycle.books
        self._runs = runs
        self._settings = settings
        self._observer = observer
        self._risk = risk
        self._schedule = Scheduler(lifecycle.books, wallets, runs, settings, observer, risk)

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
            if not allowed(current.status, WalletAction.RUN):
                if partner_id is not None:
                    transition(current.status, WalletAction.RUN)
                return RunOutcome(
                    OperationStatus.NO_ACTION, f"the wallet is {current.status}", "", ran=False
                )
            return await self._run(current, holder)

    async def _run(self, wallet: Wallet, owner: str) -> RunOutcome:
        chain = self._books.chain(wallet.chain_id)
        head = await chain.head()
        # Planning only reads, and the lease keeps every other call away meanwhile: the
        # wallet turns `running` only when there is something to move.
        try:
            paused = self._runs.paused(wallet.chain_id)
            valuation = await value(chain, wallet, head=head)
            costs = await moving_costs(chain, self._books.token_info(wallet))
            risk = await risk_view(
                self._risk,
                wallet.chain_id,
                chain,
                [wallet],
                {wallet.id: valuation},
                head.timestamp,
                self._now(),
            )
        except Exception as refused:  # the chain, or a store, failed to answer
            return self._note(wallet, OperationStatus.FAILED, refusal(refused))
        decision = Planner(paused, self.thresholds, risk).plan(wallet, valuation, costs)
        if isinstance(decision, NoMoves):
            return self._note(wallet, decision.status, decision.reason)
        return await self._execute(chain, head.number, owner, decision)

    async def _execute(
        self, chain: MarketChain, block: int, owner: str, planned: PlannedRun
    ) -> RunOutcome:
        """Executes the planned run's moves and books the outcome (see
        ``domain.agent.rounds``); Conflict when the wallet changed since it was read."""
        [outcome] = await rounds.execute(self._books, chain, block, owner, [planned])
        if isinstance(outcome, Conflict):
            raise outcome
        self._runs.note(RunEnd(planned.wallet.id, outcome.status, outcome.reason), self._now())
        return outcome

    def _note(self, wallet: Wallet, status: str, reason: str) -> RunOutcome:
        """Notes a run on request that moved nothing; a failed one is logged."""
        if status == OperationStatus.FAILED:
            log.warning("run failed", extra={"wallet": wallet.address, "reason": reason})
        self._runs.note(RunEnd(wallet.id, status, reason), self._now())
        return RunOutcome(status, reason, "")

    def _now(self) -> float:
        """Wall-clock unix time, as the schedule keeps it."""
        return self._books.clock.time()

    # -- the schedule ----------------------------------------------------------------------

    async def run_cycle(self, stopping: Callable[[], bool] = lambda: False) -> int:
        """Runs due wallets until none is due or ``stopping`` says so; returns how many ran
        (see ``Scheduler.run_cycle``)."""
        return await self._schedule.run_cycle(stopping)

    async def run_due(self) -> int:
        """Claims a batch of due wallets, runs each once, and returns how many ran (see
        ``Scheduler.run_due``)."""
        return await self._schedule.run_due()

    async def watch_exits(self) -> int:
        """Makes due now the wallets of every pool the guards newly exit, whether or not
        any wallet is due; returns how many (see ``Scheduler.watch_exits``)."""
        return await self._schedule.watch_exits()

    # -- recovery --------------------------------------------------------------------------

    async def reconcile(self) -> list[Repair]:
        """Finishes every operation (runs among them) a killed process left open."""
        return await self._lifecycle.reconcile()
