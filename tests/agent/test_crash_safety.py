"""A killed agent loses nothing: after a restart, the ledger agrees with the chain.

A run stores its plan before it executes a step and notes each step as it completes.
Here ``yieldagent agent cycle`` processes are killed with SIGKILL at random moments, many
times: before they start working, between and during the steps of a run, while they
recover what an earlier kill left, and after they finished. After each round a cycle
runs to the end (it reconciles first), and then, for every wallet, the stored
allocation and idle funds are what the chain holds, every supply and withdrawal the
chain mined is in the wallet's history exactly once, no funds were lost or created, and
no wallet is left ``running``.

Every round pauses the protocols the wallets were moved into the round before, so a run
of a wallet sitting there must move its funds out (a required rebalance); the next round
pauses the others. Now and then simulated time moves on and interest accrues.

Lease expiry is not waited for: after a kill the test lets the dead process's leases run
out at once, as they would ``lease_seconds`` later.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import Session, col, select

from support.agent_setup import runs_of
from support.agent_world import (
    AgentWorld,
    CycleProcess,
    cycle_env,
    expire_leases,
    index_growth,
    ledger_disagreements,
    liquidity_indexes,
    make_due,
    open_world,
    user_eoa,
)
from support.wallet_setup import BASE, BASE_USDC, PROTOCOLS, USDC, activated, make_lifecycle
from yieldagent.catalog import load_catalog
from yieldagent.composition.chains import simulated_chains
from yieldagent.domain.books.operations import Operation
from yieldagent.domain.books.wallets import Wallet
from yieldagent.domain.money.lifecycle import Lifecycle
from yieldagent.storage.runs import RunStore
from yieldagent.storage.tables import OperationRow, WalletRow

ROUNDS = 15
KILLS = int(os.environ.get("YIELDAGENT_CRASH_KILLS", "0"))
"""Kills the first test makes at least (``make crash`` sets 20): rounds go on past
``ROUNDS`` until there were this many."""

pytestmark = [pytest.mark.crash, pytest.mark.timeout(240 + 15 * max(0, KILLS - 15))]

WALLETS = 20
SEED = 20_260_101
GROUPS = (("aave", "compound"), ("moonwell", "morpho_gauntlet_usdc_prime"))
"""Each round pauses one group, so every wallet must move its funds to the other."""
INTERVAL = "86400"
"""A cycle runs each due wallet once; the test makes them due again each round."""


async def _activate(
    lifecycle: Lifecycle, world: AgentWorld, amounts: Sequence[int]
) -> list[Wallet]:
    return [
        await activated(lifecycle, world.engine, world.market, world.partner_id, a, user_eoa(i))
        for i, a in enumerate(amounts)
    ]


@dataclass(frozen=True, slots=True)
class Kill:
    """How one process was killed, and what it left behind."""

    moment: str
    running: bool
    """Whether the process was still running when killed."""
    interrupted: frozenset[str]
    """What the kill left half done that was not before: runs left executing, wallets
    left running."""

    @property
    def mid_run(self) -> bool:
        """Whether the kill interrupted a run."""
        return bool(self.interrupted)


def _interrupted(engine: Engine) -> frozenset[str]:
    """Runs left executing and wallets left running."""
    with Session(engine) as session:
        executing = session.exec(
            select(OperationRow.id).where(OperationRow.status == "executing")
        ).all()
        running = session.exec(select(WalletRow.id).where(col(WalletRow.status) == "running")).all()
    return frozenset([*(f"run {r}" for r in executing), *(f"wallet {w}" for w in running)])


def _runs_of(engine: Engine, wallets: Sequence[Wallet]) -> list[Operation]:
    """Every run of ``wallets``."""
    return [run for wallet in wallets for run in runs_of(engine, wallet.id)]


LIQUIDITY_REFUSED = "failed: not enough liquidity in the pool"
"""The one way a run may fail here. The optimizer does not model a pool's available
liquidity: a move out of a protocol larger than the pool's cash is refused by the chain, the
run ends ``failed`` with what it did recorded, and a later run tries again. Which wallets
meet it depends on where the kills land, so on timing."""


def _unexpected_runs(engine: Engine) -> list[tuple[str, str]]:
    """The status and reason of every run that did not complete, find nothing to do, get
    recovered after a crash, or fail for the pool's liquidity."""
    with Session(engine) as session:
        rows = session.exec(
            select(OperationRow).where(
                col(OperationRow.status).not_in(("completed", "no_action", "recovered"))
            )
        )
        return [
            (run.status, run.reason) for run in rows if not run.reason.endswith(LIQUIDITY_REFUSED)
        ]


def _run_statuses(engine: Engine) -> dict[str, str]:
    """Every run's status, by id."""
    with Session(engine) as session:
        return {run.id: run.status for run in session.exec(select(OperationRow))}


def _watch(engine: Engine, process: CycleProcess, started: int = 0, executing: int = 0) -> None:
    """Waits until the process started ``started`` runs, ``executing`` of which were seen
    executing their plan, or until it ended."""
    known = set(_run_statuses(engine))
    seen: set[str] = set()
    while process.process.poll() is None:
        new = {run: status for run, status in _run_statuses(engine).items() if run not in known}
        seen |= {run for run, status in new.items() if status == "executing"}
        if len(new) >= started and len(seen) >= executing:
            return
        time.sleep(0.002)


def _kill_at_random(
    process: CycleProcess, engine: Engine, rng: random.Random, recovering: bool
) -> tuple[str, bool]:
    """Kills ``process`` at a random moment; returns which kind of moment, and whether
    the process was still running then.

    ``recovering``: an earlier kill left runs to recover, so the moment may fall in the
    middle of the recovery.
    """
    moments = ["start", "between runs", "steps", "steps", "steps", "steps", "finished"]
    if recovering:
        moments += ["recovery", "recovery", "recovery"]
    moment = rng.choice(moments)
    if moment == "start":  # while it starts, reconciles or runs its first wallets
        time.sleep(rng.uniform(0.0, 1.5))
    elif moment == "between runs":  # as a run is stored, or between two runs
        _watch(engine, process, started=rng.randint(1, WALLETS - 1))
    elif moment == "steps":  # while a run executes its plan, after some others did
        _watch(engine, process, executing=rng.randint(1, WALLETS // 2))
        time.sleep(rng.uniform(0.0, 0.025))
    elif moment == "recovery":  # right after it recovered a first run
        process.wait_for("run recovered", 1, timeout=120)
        time.sleep(rng.uniform(0.0, 0.01))
    else:  # after it ended on its own
        process.wait_ended(timeout=120)
    return moment, process.kill()


def test_killed_cycles_leave_a_ledger_that_agrees_with_the_chain(
    database_url: str, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    world = open_world(database_url)
    try:
        amounts = [rng.randrange(20_000, 900_000) * USDC for _ in range(WALLETS)]
        lifecycle = make_lifecycle(world.engine, simulated_chains(world.market, load_catalog()))
        wallets = asyncio.run(_activate(lifecycle, world, amounts))
        start = liquidity_indexes(world.market)
        runs = RunStore(world.engine)
        env = cycle_env(
            database_url,
            tmp_path,
            YIELDAGENT_AGENT_INTERVAL_SECONDS=INTERVAL,
            # every wallet moves between the two groups each round: no pool share or size
            # cap may leave part of the fleet behind (the guards' own tests cover them)
            YIELDAGENT_RISK_MAX_POOL_SHARE="1",
            YIELDAGENT_RISK_MIN_POOL_MULTIPLE="1",
        )
        kills: list[Kill] = []
        recovered: list[int] = []
        for round_ in itertools.count():
            if round_ >= ROUNDS and len(kills) >= KILLS:
                break
            leave, enter = GROUPS[round_ % 2], GROUPS[1 - round_ % 2]
            for protocol in leave:
                runs.pause(BASE, protocol)
            for protocol in enter:
                runs.resume(BASE, protocol)
            if round_ % 5 == 4:  # interest accrues; the wallets are valued afresh
                world.market.advance(rng.randint(1, 48) * 3600)
                assert asyncio.run(lifecycle.refresh(BASE)) == WALLETS
            make_due(world.engine)

            round_kills: list[Kill] = []
            for _ in range(rng.choice((1, 1, 2))):
                left = _interrupted(world.engine)
                process = CycleProcess(env)
                moment, running = _kill_at_random(process, world.engine, rng, bool(left))
                round_kills.append(Kill(moment, running, _interrupted(world.engine) - left))
                expire_leases(world.engine)  # as lease_seconds after the kill
            kills += round_kills

            result = CycleProcess(env).result()
            recovered.append(result.recovered)

            problems = ledger_disagreements(world, wallets, index_growth(world.market, start))
            assert problems == [], f"round {round_}, after {round_kills}: {problems}"
            assert _interrupted(world.engine) == frozenset()
            assert _unexpected_runs(world.engine) == []

        mid_run = [kill for kill in kills if kill.mid_run]
        print(
            f"{len(kills)} kills in {len(recovered)} rounds,"
            f" {sum(k.running for k in kills)} of running processes,"
            f" {len(mid_run)} mid-run ({sorted(k.moment for k in mid_run)});"
            f" recovered per round: {recovered}"
        )
        assert len(mid_run) >= 2, kills
        assert sum(1 for count in recovered if count > 0) >= 1, recovered
        # funds moved: wallets completed runs, each leaving the paused protocols
        completed = sum(1 for run in _runs_of(world.engine, wallets) if run.status == "completed")
        assert completed >= ROUNDS * 2, completed
    finally:
        world.engine.dispose()


SKIPPED_AFTER_A_CRASH = (
    "BUG: claim_due moves a claimed wallet's next run a whole interval ahead at claim time. "
    "When the process dies after claiming a batch, the wallets of the batch it had not run "
    "yet are neither due nor running: reconcile does not look at them and no cycle runs "
    "them before the next interval (an hour by default), although they were due. A wallet "
    "whose run the kill interrupted is recovered but not run either, so its required move "
    "stays half done."
)


class NotRun(AssertionError):
    """A due wallet did not run."""


def test_the_cycle_after_a_kill_runs_every_wallet_the_killed_one_did_not(
    database_url: str, tmp_path: Path
) -> None:
    world = open_world(database_url)
    try:
        lifecycle = make_lifecycle(world.engine, simulated_chains(world.market, load_catalog()))
        wallets = asyncio.run(_activate(lifecycle, world, [100_000 * USDC] * 8))
        held = {p for w in wallets for p in w.positions}
        assert held < set(PROTOCOLS)
        runs = RunStore(world.engine)
        for protocol in held:  # every run must move the wallet's funds elsewhere
            runs.pause(BASE, protocol)
        env = cycle_env(database_url, tmp_path, YIELDAGENT_AGENT_INTERVAL_SECONDS=INTERVAL)
        killed = CycleProcess(env)
        assert killed.wait_for("run completed", 1, timeout=120)
        assert killed.kill()
        expire_leases(world.engine)  # as lease_seconds after the kill

        result = CycleProcess(env).result()

        assert ledger_disagreements(world, wallets, Fraction(1)) == []
        not_moved = [
            wallet.id
            for wallet in wallets
            if not any(run.status == "completed" for run in runs_of(world.engine, wallet.id))
            or held & {p for p, _ in world.market.positions(BASE, BASE_USDC, wallet.address)}
        ]
        if not_moved:
            raise NotRun(f"wallets {not_moved} still sit in paused protocols ({result})")
    finally:
        world.engine.dispose()
