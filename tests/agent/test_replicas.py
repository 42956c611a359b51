"""Replicas share the agent's work through database leases.

With PostgreSQL, any number of processes run ``yieldagent agent cycle`` on one database:
each claims batches of due wallets (``SELECT … FOR UPDATE SKIP LOCKED``) until none is
left. No wallet may run twice at the same time or twice in one cycle, none may be
skipped, and the work must be shared.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from fractions import Fraction
from pathlib import Path

import pytest
from sqlalchemy import Engine

from support.agent_setup import schedule_row
from support.agent_world import (
    CycleProcess,
    bulk_activated,
    cycle_env,
    ledger_disagreements,
    open_world,
    run_rows,
    schedule_rows,
    user_eoa,
    wallet_rows,
)
from support.databases import temporary_database
from support.wallet_setup import USDC, activated, make_lifecycle
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.agent.runs import Agent
from yieldagent.domain.agent.scheduler import AgentSettings
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.ports.credentials import Partner
from yieldagent.domain.ports.storage import RunEnd
from yieldagent.storage.runs import RunStore
from yieldagent.storage.wallets import WalletStore

WALLETS = 1000
"""Enough that the first process is still running its batches (100 each) when the others
have started: with 300, a cycle of settled wallets was over before they had imported."""
PROCESSES = 3
INTERVAL = 86_400.0
"""Long enough that no wallet falls due again within the cycle."""


def _overlapping(spans: list[tuple[datetime, datetime | None]]) -> bool:
    """Whether two of a wallet's runs overlap in time (an unfinished one lasts forever)."""
    ordered = sorted(spans, key=lambda span: span[0])
    return any(end is None or end > start for (_, end), (start, _) in itertools.pairwise(ordered))


@pytest.mark.postgres
@pytest.mark.timeout(300)
def test_three_processes_run_every_due_wallet_exactly_once(tmp_path: Path) -> None:
    with temporary_database("postgres", tmp_path) as url:
        world = open_world(url)
        try:
            wallets = bulk_activated(world, [100 * USDC + i for i in range(WALLETS)])
            assert {row.status for row in wallet_rows(world.engine)} == {"activated"}
            assert {r.next_run_at for r in schedule_rows(world.engine)} == {0.0}
            env = cycle_env(url, tmp_path, YIELDAGENT_AGENT_INTERVAL_SECONDS=str(INTERVAL))

            started = time.time()
            processes = [CycleProcess(env) for _ in range(PROCESSES)]
            try:
                results = [process.result(timeout=240) for process in processes]
            finally:
                for process in processes:
                    process.kill()

            runs = run_rows(world.engine)  # the runs that moved funds
            rows = wallet_rows(world.engine)
            schedule = schedule_rows(world.engine)
            ids = {wallet.id for wallet in wallets}
            # none skipped and none twice: every wallet ran once, and its next run moved a
            # whole interval ahead
            assert {r.wallet_id for r in schedule} == ids
            assert {r.wallet_id: r.runs for r in schedule if r.runs != 1} == {}
            assert [r.wallet_id for r in schedule if r.next_run_at < started + INTERVAL] == []
            assert {row.status for row in rows} == {"activated"}
            assert [r.wallet_id for r in schedule if r.lease_owner is not None] == []
            assert [result.recovered for result in results] == [0] * PROCESSES
            # every run ended, having found the wallet as activation left it
            outcomes = Counter(r.last_outcome for r in schedule)
            assert set(outcomes) <= {"no_action", "completed"}, outcomes
            assert len(runs) == outcomes["completed"]
            assert {run.status for run in runs} <= {"completed"}
            assert all(run.finished_at is not None for run in runs)
            # the work was shared: more than one process ran wallets
            assert sum(1 for result in results if result.ran > 0) > 1, results
            # no two runs of one wallet at the same time
            spans: defaultdict[int, list[tuple[datetime, datetime | None]]] = defaultdict(list)
            for run in runs:
                spans[run.wallet_id].append((run.started_at, run.finished_at))
            assert [w for w, s in spans.items() if _overlapping(s)] == []
            assert ledger_disagreements(world, wallets, growth=Fraction(1)) == []
            assert sum(result.ran for result in results) == WALLETS, results
        finally:
            world.engine.dispose()


class _AnotherReplicaAfterEachRelease(RunStore):
    """The schedule store, through which, as soon as a batch lets go of wallets (their
    next run set and their leases released, in one statement), another replica runs its
    own cycle: what happens when that replica's claim comes at this moment."""

    def __init__(self, engine: Engine, chains: dict[int, MarketChain]) -> None:
        super().__init__(engine)
        self.other = Agent(
            make_lifecycle(engine, chains),
            WalletStore(engine),
            RunStore(engine),
            AgentSettings(INTERVAL),
        )
        self.ran_by_other: list[int] = []

    def finish(self, ends: Sequence[RunEnd], owner: str, next_run_at: float, at: float) -> None:
        super().finish(ends, owner, next_run_at, at)
        # The store is synchronous: the other replica's cycle runs on a loop of its own.
        with ThreadPoolExecutor(1) as other:
            self.ran_by_other.append(other.submit(asyncio.run, self.other.run_due()).result())


async def test_a_wallet_that_just_ran_is_not_run_again_by_another_replica(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    """The moment a run ends is the riskiest for a second claim: the wallet is activated
    and unleased again. It must no longer be due then."""
    for i in range(3):
        lifecycle = make_lifecycle(engine, chains)
        await activated(lifecycle, engine, market, partner[0].id, 100 * USDC, eoa=user_eoa(i))
    replica = _AnotherReplicaAfterEachRelease(engine, chains)
    lifecycle = make_lifecycle(engine, chains)
    agent = Agent(lifecycle, WalletStore(engine), replica, AgentSettings(INTERVAL))

    assert await agent.run_due() == 3

    assert replica.ran_by_other and set(replica.ran_by_other) == {0}, replica.ran_by_other
    wallets = WalletStore(engine).wallets(8453)
    assert [schedule_row(engine, wallet.id).runs for wallet in wallets] == [1, 1, 1]
