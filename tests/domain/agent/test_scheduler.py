"""``Agent.run_cycle``: batch after batch until none is due, each batch's last write (its
runs' outcomes, next runs and lease releases) stored from a thread while the next batch runs,
where the database takes writes in parallel; the guards' minimum wait from the claim."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from typing import Any

import pytest
from sqlalchemy import Engine, text

from support.agent_setup import (
    AMOUNT,
    INTERVAL,
    PartnerKey,
    rebalancing_wallet,
    runs_of,
    schedule_row,
)
from support.wallet_setup import activated, make_lifecycle
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.agent.runs import Agent
from yieldagent.domain.agent.scheduler import AgentSettings
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.money.lifecycle import Lifecycle
from yieldagent.domain.ports.storage import RunEnd
from yieldagent.domain.risk.settings import RiskSettings
from yieldagent.domain.risk.survey import RiskSurvey, RiskView
from yieldagent.storage.risk import RiskStore
from yieldagent.storage.runs import RunStore
from yieldagent.storage.wallets import WalletStore

pytestmark = pytest.mark.usefixtures("books_balance_after")


class Runs(RunStore):
    """The run store, its writes in parallel or not as the test says, failing the first
    ``fail`` ends of runs, and noting how many wallets each end covered."""

    def __init__(self, engine: Engine, parallel: bool, fail: int = 0) -> None:
        super().__init__(engine)
        self._parallel = parallel
        self._fail = fail
        self.ends: list[int] = []

    @property
    def parallel_writes(self) -> bool:
        return self._parallel

    def finish(self, ends: Sequence[RunEnd], owner: str, next_run_at: float, at: float) -> None:
        if self._fail:
            self._fail -= 1
            raise RuntimeError("the database went away")
        super().finish(ends, owner, next_run_at, at)
        self.ends.append(len(ends))


def agent_of(engine: Engine, lifecycle: Lifecycle, runs: RunStore, lanes: int = 1) -> Agent:
    """An agent claiming two wallets per batch, ``lanes`` batches at once."""
    settings = AgentSettings(interval_seconds=INTERVAL, batch=2, concurrent_batches=lanes)
    return Agent(lifecycle, WalletStore(engine), runs, settings)


@pytest.mark.parametrize("lanes", [1, 2], ids=["one-lane", "two-lanes"])
@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
async def test_a_cycle_runs_every_due_wallet_once_and_stores_every_end_before_it_returns(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: PartnerKey,
    parallel: bool,
    lanes: int,
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    movers = [
        await rebalancing_wallet(lifecycle, engine, market, owner, agent_id=f"mover-{n}")
        for n in range(2)
    ]
    idle = [
        await activated(lifecycle, engine, market, owner.id, AMOUNT, agent_id=f"idle-{n}")
        for n in range(3)
    ]
    runs = Runs(engine, parallel)
    agent = agent_of(engine, lifecycle, runs, lanes)

    assert await agent.run_cycle() == 5

    assert sum(runs.ends) == 5
    for wallet in [*movers, *idle]:
        row = schedule_row(engine, wallet.id)
        assert row.runs == 1
        assert (row.lease_owner, row.lease_until) == (None, None)
        assert row.next_run_at > time.time()
    assert [len(runs_of(engine, w.id)) for w in [*movers, *idle]] == [1, 1, 0, 0, 0]
    assert {r.status for w in movers for r in runs_of(engine, w.id)} == {"completed"}
    assert {schedule_row(engine, w.id).last_outcome for w in movers} == {"completed"}
    assert {schedule_row(engine, w.id).last_outcome for w in idle} == {"no_action"}
    assert await agent.run_cycle() == 0


async def test_a_cycle_stops_when_told(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    for n in range(3):
        await activated(lifecycle, engine, market, owner.id, AMOUNT, agent_id=f"idle-{n}")
    runs = Runs(engine, parallel=True)
    agent = agent_of(engine, lifecycle, runs)
    batches = iter([False, True])

    assert await agent.run_cycle(lambda: next(batches)) == 2

    assert runs.ends == [2]


async def test_an_end_that_fails_to_be_stored_is_logged_and_its_wallets_keep_their_lease(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: PartnerKey,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As if the process had died before the write: the wallets run again once their
    leases lapse. The cycle goes on with the other batches."""
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallets = [
        await activated(lifecycle, engine, market, owner.id, AMOUNT, agent_id=f"idle-{n}")
        for n in range(4)
    ]
    runs = Runs(engine, parallel=True, fail=1)
    agent = agent_of(engine, lifecycle, runs)

    with caplog.at_level(logging.ERROR):
        assert await agent.run_cycle() == 4

    assert "storing the end of scheduled runs failed" in caplog.text
    assert runs.ends == [2]
    leased = [w for w in wallets if schedule_row(engine, w.id).lease_owner is not None]
    assert len(leased) == 2
    assert all(schedule_row(engine, w.id).runs == 0 for w in leased)


class Surveyed(RiskSurvey):
    """The guards, keeping each view a batch planned with."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(RiskStore(engine), RiskSettings())
        self.views: list[RiskView] = []

    async def view(self, *args: Any, **kwargs: Any) -> RiskView:
        found = await super().view(*args, **kwargs)
        self.views.append(found)
        return found


async def test_a_batch_waits_out_each_wallets_last_move_as_its_claim_read_it(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: PartnerKey,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    mover = await rebalancing_wallet(lifecycle, engine, market, owner, agent_id="mover")
    idle = await activated(lifecycle, engine, market, owner.id, AMOUNT, agent_id="idle")
    survey = Surveyed(engine)
    agent = Agent(
        lifecycle,
        WalletStore(engine),
        RunStore(engine),
        AgentSettings(interval_seconds=INTERVAL, batch=2),
        risk=survey,
    )
    assert await agent.run_cycle() == 2  # the mover moves: its last move is now
    moved_at = schedule_row(engine, mover.id).last_moved_at
    assert moved_at is not None
    assert schedule_row(engine, idle.id).last_moved_at is None

    def unread(*_: object) -> object:
        raise AssertionError("the claim told when the wallets last moved")

    monkeypatch.setattr(RiskStore, "last_moves", unread)
    with engine.begin() as connection:
        connection.execute(text("UPDATE wallet_schedule SET next_run_at = 0"))
    assert await agent.run_cycle() == 2

    view = survey.views[-1]
    assert view.last_moves == {mover.id: moved_at}
    yields = AgentSettings().thresholds
    assert view.thresholds(mover.id, yields).min_apr_gain == math.inf  # within the wait
    assert view.thresholds(idle.id, yields) == yields
