"""The agent's run metrics count every run by its outcome, runs that move nothing included
(they leave no operation), and not a wallet whose state allows no run."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from support.agent_setup import AMOUNT, INTERVAL, PartnerKey
from support.wallet_setup import BASE, activated, make_lifecycle
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.agent.runs import Agent
from yieldagent.domain.agent.scheduler import AgentSettings
from yieldagent.domain.market.ports import MarketChain
from yieldagent.observability.agent_metrics import RunMetrics
from yieldagent.observability.metrics import REGISTRY
from yieldagent.storage.runs import RunStore
from yieldagent.storage.wallets import WalletStore

pytestmark = pytest.mark.usefixtures("books_balance_after")


def _runs(outcome: str) -> float:
    return REGISTRY.get_sample_value("yieldagent_agent_runs_total", {"outcome": outcome}) or 0.0


async def test_runs_that_move_nothing_are_counted_and_a_wallet_that_may_not_run_is_not(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    idle = [
        await activated(lifecycle, engine, market, owner.id, AMOUNT, agent_id=f"idle-{n}")
        for n in range(2)
    ]
    agent = Agent(
        lifecycle, WalletStore(engine), RunStore(engine), AgentSettings(INTERVAL), RunMetrics()
    )
    before = _runs("no_action")

    assert await agent.run_due() == 2
    assert _runs("no_action") - before == 2

    await lifecycle.operate(BASE, idle[0].address, "block")
    outcome = await agent.run(BASE, idle[0].address)
    assert (outcome.status, outcome.ran) == ("no_action", False)
    assert _runs("no_action") - before == 2
    assert (await agent.run(BASE, idle[1].address)).status == "no_action"
    assert _runs("no_action") - before == 3
