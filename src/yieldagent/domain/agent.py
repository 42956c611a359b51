"""The agent: runs that put each wallet's funds where they earn the most, and recovery
from runs a crash interrupted.

A **run** holds the wallet's lease and marks it ``running``. It values the wallet on
chain and asks the optimizer for a plan over the wallet's protocols less the paused
ones. It **stores the plan before executing anything**, then executes the moves in
order (withdrawals first), noting each step as it completes. Finally it records every
move as a transaction sharing the run's correlation id, and returns the wallet to
``activated``. A run that finds nothing worth moving answers ``no_action``; one the
chain or the rules refuse answers ``failed``, with the reason logged and stored.

**Scheduling** spreads runs over replicas: each claims a batch of due wallets (see
``storage.runs``), runs them and sets their next run one interval later.

**Reconciliation** repairs what a killed process left: a run still ``executing`` whose
lease expired, or a wallet ``running`` with no live lease. The chain is the truth, so
every supply and withdrawal the chain shows since the run began but the history does
not is recorded, the wallet is valued afresh, and it goes back to ``activated``. No
unit is lost or counted twice.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from yieldagent.chain.port import ChainPort
from yieldagent.domain.errors import InvalidRequest
from yieldagent.domain.lifecycle import Lifecycle
from yieldagent.domain.optimizer import Move, Plan, Thresholds, optimize
from yieldagent.domain.valuation import Valuation, execute, moment_of, value
from yieldagent.domain.wallet_states import WalletStatus, allowed, transition
from yieldagent.domain.wallets import Journal, TransactionRecord, Wallet, WalletRepository

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A stored run: its plan and how far it got."""

    id: str
    wallet_id: int
    chain_id: int
    status: str
    moves: tuple[Move, ...]
    steps_done: int
    start_block: int
    owner: str


class RunRepository(Protocol):
    """Where runs, the schedule and protocol pauses are kept."""

    def claim_due(self, now: float, owner: str, lease_until: float, limit: int) -> list[int]:
        """Leases up to ``limit`` due wallets for ``owner``; returns their ids."""

    def renew(self, wallet_ids: Sequence[int], owner: str, until: float) -> None:
        """Extends to ``until`` the leases ``owner`` still holds among ``wallet_ids``."""

    def schedule(self, wallet_id: int, next_run_at: float) -> None:
        """Sets when the wallet runs next."""

    def start(self, run: RunRecord, reason: str | None = None) -> None:
        """Stores a run and its plan before any step executes; with ``reason``, a run that
        is already over (it moved nothing)."""

    def step_done(self, run_id: str, steps_done: int) -> None:
        """Notes that the first ``steps_done`` steps executed."""

    def finish(self, run_id: str, status: str, reason: str) -> None:
        """Closes a run."""

    def unfinished(self, now: float) -> Sequence[RunRecord]:
        """Runs still executing whose lease expired."""

    def stuck(self, now: float) -> Sequence[int]:
        """Wallets left ``running`` without a live lease."""

    def known_hashes(self, wallet_id: int, hashes: Sequence[str]) -> set[str]:
        """Which of ``hashes`` the wallet's history already records."""

    def paused(self, chain_id: int) -> frozenset[str]:
        """Protocols the operator paused on ``chain_id``."""


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """How often wallets run and when a rebalance pays."""

    interval_seconds: float = 3600.0
    thresholds: Thresholds = field(default_factory=Thresholds)
    batch: int = 100


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """What a run did: completed (funds moved), no_action or failed, and why."""

    status: str
    reason: str
    run_id: str


class Agent:
    """Runs wallets' agents, on schedule or on request, and recovers interrupted runs."""

    def __init__(
        self,
        lifecycle: Lifecycle,
        wallets: WalletRepository,
        runs: RunRepository,
        settings: AgentSettings,
    ) -> None:
        self._lifecycle = lifecycle
        self._wallets = wallets
        self._runs = runs
        self._settings = settings
        self._owner = f"agent-{uuid.uuid4().hex[:12]}"

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
        already in progress, then runs."""
        wallet = self._lifecycle.wallet(chain_id, address, partner_id)
        async with self._lifecycle.exclusive(wallet, owner) as current:
            # The state is checked once the lease is held: a run in progress is waited for.
            if not allowed(current.status, "run"):
                if partner_id is not None:
                    transition(current.status, "run")
                return RunOutcome("no_action", f"the wallet is {current.status}", "")
            return await self._run(current)

    async def _plan(self, chain: ChainPort, wallet: Wallet) -> tuple[Valuation, Plan]:
        paused = self._runs.paused(wallet.chain_id)
        protocols = [p for p in wallet.selected_protocols if p not in paused]
        valuation = await value(chain, wallet)
        costs = await self._lifecycle.costs(chain, wallet)
        plan = optimize(
            valuation.positions,
            valuation.idle,
            valuation.candidates(protocols),
            wallet.constraints,
            costs,
            self._settings.thresholds,
        )
        return valuation, plan

    async def _run(self, wallet: Wallet) -> RunOutcome:
        chain = self._lifecycle.chain(wallet.chain_id)
        run_id = str(uuid.uuid4())
        head = await chain.head()
        # Planning only reads, and the lease keeps every other call away meanwhile: the
        # wallet turns `running` only when there is something to move.
        try:
            valuation, plan = await self._plan(chain, wallet)
        except Exception as refused:  # infeasible rules, or the chain failed to answer
            reason = (
                refused.detail
                if isinstance(refused, InvalidRequest)
                else (f"planning failed: {refused}")
            )
            self._log_run(run_id, wallet, head.number, "failed", reason)
            log.warning("run failed", extra={"wallet": wallet.address, "reason": reason})
            return RunOutcome("failed", reason, run_id)
        if not plan.moves:
            self._back_to_activated(wallet, valuation, [])
            self._log_run(run_id, wallet, head.number, "no_action", plan.reason)
            return RunOutcome("no_action", plan.reason, run_id)
        running = replace(wallet, status=transition(wallet.status, "run"))
        self._wallets.commit(Journal(running), expected=wallet.status)
        run = RunRecord(
            run_id, wallet.id, wallet.chain_id, "executing", plan.moves, 0, head.number, self._owner
        )
        self._runs.start(run)  # the plan is stored before any step executes
        records: list[TransactionRecord] = []
        try:
            for step, move in enumerate(plan.moves, 1):
                records.append(await execute(chain, running, move, valuation, run_id))
                self._runs.step_done(run_id, step)
        except Exception as error:  # the chain refused a step: record what did happen
            reason = f"step {len(records) + 1} failed: {error}"
            self._back_to_activated(running, await value(chain, running), records)
            self._runs.finish(run_id, "failed", reason)
            log.warning("run failed", extra={"wallet": wallet.address, "reason": reason})
            return RunOutcome("failed", reason, run_id)
        self._back_to_activated(running, await value(chain, running), records)
        self._runs.finish(run_id, "completed", plan.reason)
        log.info(
            "run completed",
            extra={"wallet": wallet.address, "moves": len(records), "reason": plan.reason},
        )
        return RunOutcome("completed", plan.reason, run_id)

    def _log_run(self, run_id: str, wallet: Wallet, block: int, status: str, reason: str) -> None:
        """Records a run that moved nothing, so that every run leaves a trace."""
        self._runs.start(
            RunRecord(run_id, wallet.id, wallet.chain_id, status, (), 0, block, self._owner),
            reason=reason,
        )

    def _back_to_activated(
        self, wallet: Wallet, valuation: Valuation, records: list[TransactionRecord]
    ) -> None:
        after = self._lifecycle.with_valuation(wallet, valuation)
        if after.status == WalletStatus.RUNNING:
            after.status = transition(after.status, "run_finished")
        self._wallets.commit(Journal(after, transactions=records))

    # -- the schedule ----------------------------------------------------------------------

    async def run_due(self) -> int:
        """Claims a batch of due wallets, runs each once, and returns how many ran.

        The claim's lease is held to the end: the next run is set (an interval on) before
        the lease is released, so no replica can find the wallet due and free in between.
        While the batch runs, the leases of its wallets not yet done are renewed every
        third of a lease, so a batch may take longer than one lease. If this process
        dies, the renewals stop and its wallets are due again once their lease lapses.
        """
        now = time.time()
        owner = f"{self._owner}:{uuid.uuid4().hex[:8]}"
        seconds = self._lifecycle.lease_seconds
        pending = deque(self._runs.claim_due(now, owner, now + seconds, self._settings.batch))
        if not pending:
            return 0
        keeper = asyncio.create_task(self._keep_leases(pending, owner, seconds))
        ran = 0
        try:
            while pending:
                ran += await self._run_claimed(pending[0], owner, now)
                pending.popleft()
        finally:
            keeper.cancel()
        return ran

    async def _run_claimed(self, wallet_id: int, owner: str, claimed_at: float) -> int:
        """Runs a wallet of the batch, sets its next run and releases it; 1 if it ran."""
        wallet = self._wallets.get_by_id(wallet_id)
        if wallet is None:
            return 0
        try:
            await self.run(wallet.chain_id, wallet.address, owner=owner)
            return 1
        except Exception:
            log.exception("scheduled run failed", extra={"wallet": wallet.address})
            return 0
        finally:
            self._runs.schedule(wallet_id, claimed_at + self._settings.interval_seconds)
            self._wallets.release_lease(wallet_id, owner)

    async def _keep_leases(self, pending: deque[int], owner: str, seconds: float) -> None:
        """Every third of a lease, renews the leases of the batch's wallets not yet done
        (the one running included) until cancelled."""
        while True:
            await asyncio.sleep(seconds / 3)
            if pending:
                self._runs.renew(list(pending), owner, time.time() + seconds)

    # -- recovery --------------------------------------------------------------------------

    async def reconcile(self) -> int:
        """Repairs runs and wallets a killed process left behind; returns how many."""
        now = time.time()
        repaired = 0
        for run in self._runs.unfinished(now):
            wallet = self._wallets.get_by_id(run.wallet_id)
            if wallet is not None:
                await self._recover(wallet, run)
                repaired += 1
        for wallet_id in self._runs.stuck(now):
            wallet = self._wallets.get_by_id(wallet_id)
            if wallet is not None:
                await self._recover(wallet, None)
                repaired += 1
        return repaired

    async def _recover(self, wallet: Wallet, run: RunRecord | None) -> None:
        chain = self._lifecycle.chain(wallet.chain_id)
        async with self._lifecycle.exclusive(wallet) as current:
            records: list[TransactionRecord] = []
            if run is not None:
                moves = [
                    t
                    for t in await chain.history(current.address, run.start_block)
                    if t.kind in ("supply", "withdraw")
                ]
                known = self._runs.known_hashes(current.id, [t.tx_hash for t in moves])
                records = [
                    TransactionRecord(
                        action="deposit" if t.kind == "supply" else "withdraw",
                        token=t.token,
                        amount=t.amount,
                        tx_hash=t.tx_hash,
                        date=moment_of(t.timestamp),
                        protocol=t.recipient if t.kind == "supply" else t.sender,
                        block_number=t.block_number,
                        correlation_id=run.id,
                    )
                    for t in moves
                    if t.tx_hash not in known
                ]
            self._back_to_activated(current, await value(chain, current), records)
            if run is not None:
                self._runs.finish(
                    run.id, "recovered", f"{len(records)} unrecorded steps recovered after a crash"
                )
            log.warning(
                "run recovered", extra={"wallet": current.address, "recorded": len(records)}
            )
