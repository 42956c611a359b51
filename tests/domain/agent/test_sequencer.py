"""The L2 sequencer check on the simulated market: while the chain's sequencer is down, and
for the grace period after it is back, every collateral feed counts as stale, so the agent
makes no move on its price (no depeg exit, no new funds); after the grace period the price
counts again."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from support.agent_setup import PartnerKey
from support.wallet_setup import BASE, BASE_USDC, USDC, activated, make_lifecycle, positions
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.chain.simulated.risk import Scenarios
from yieldagent.composition.clock import SYSTEM_CLOCK
from yieldagent.domain.agent.runs import Agent
from yieldagent.domain.agent.scheduler import AgentSettings
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.money.lifecycle import Lifecycle
from yieldagent.domain.risk.settings import RiskSettings
from yieldagent.domain.risk.survey import RiskSurvey
from yieldagent.storage.operations import OperationStore
from yieldagent.storage.risk import RiskStore
from yieldagent.storage.runs import RunStore
from yieldagent.storage.wallets import WalletStore

pytestmark = pytest.mark.usefixtures("books_balance_after")

MORPHO = "morpho_gauntlet_usdc_prime"
GRACE = RiskSettings().sequencer_grace_seconds


async def test_no_move_is_made_on_a_price_while_the_sequencer_cannot_vouch_for_it(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    survey = RiskSurvey(RiskStore(engine), RiskSettings())
    lifecycle = Lifecycle(
        WalletStore(engine),
        OperationStore(engine),
        chains,
        load_catalog(),
        make_lifecycle(engine, chains).books.policy,
        SYSTEM_CLOCK,
        risk=survey,
    )
    agent = Agent(lifecycle, WalletStore(engine), RunStore(engine), AgentSettings(), risk=survey)
    wallet = await activated(
        lifecycle, engine, market, owner.id, 100_000 * USDC, protocols=(MORPHO,)
    )
    held = positions(market, wallet.address)[MORPHO]
    chain = lifecycle.chain(BASE)

    async def verdict() -> tuple[str, tuple[str, ...]]:
        quotes = {q.protocol: q for q in await chain.quotes(BASE_USDC, [MORPHO])}
        head = await chain.head()
        [judged] = await survey.judge(BASE, chain, BASE_USDC, quotes, head.timestamp)
        return str(judged.verdict.state), judged.verdict.reasons

    scenarios = Scenarios(market)
    scenarios.sequencer(BASE, up=False)
    scenarios.price(BASE, "WETH", "3000")  # 14% below its peg: an exit, if it can be trusted
    state, reasons = await verdict()
    assert state == "no_new_funds"
    assert reasons == ("the price feed of collateral WETH is stale: the chain's sequencer is down",)
    outcome = await agent.run(BASE, wallet.address)
    assert outcome.status == "no_action", outcome
    assert positions(market, wallet.address)[MORPHO] >= held  # nothing left the vault

    scenarios.sequencer(BASE, up=True)
    state, reasons = await verdict()
    assert state == "no_new_funds"
    assert reasons == (
        "the price feed of collateral WETH is stale: the chain's sequencer came back up "
        f"less than {GRACE} s ago",
    )
    assert (await agent.run(BASE, wallet.address)).status == "no_action"

    market.advance(GRACE)  # the grace period is over: the price counts
    state, reasons = await verdict()
    assert state == "exit"
    assert reasons == ("collateral WETH is 5% or more below its peg",)
    outcome = await agent.run(BASE, wallet.address)
    assert outcome.status == "completed", outcome
    assert positions(market, wallet.address).get(MORPHO, 0) < held
