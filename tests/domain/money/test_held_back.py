"""A wallet whose funds sit in a pool with its withdrawals paused says so: which pool holds
how much, and why, from the worker's next refresh; the reason clears once nothing is held
back. On the simulated market, with the pool's pause switch."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sqlalchemy import Engine

from support.agent_setup import PartnerKey
from support.wallet_setup import BASE, OTHER_EOA, USDC, activated, make_lifecycle, positions, stored
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.chain.simulated.risk import Scenarios
from yieldagent.composition.clock import SYSTEM_CLOCK
from yieldagent.domain.agent.runs import Agent
from yieldagent.domain.agent.scheduler import AgentSettings
from yieldagent.domain.books.wallets import Journal
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.money.lifecycle import Lifecycle
from yieldagent.domain.risk.settings import RiskSettings
from yieldagent.domain.risk.survey import RiskSurvey
from yieldagent.storage.operations import OperationStore
from yieldagent.storage.risk import RiskStore
from yieldagent.storage.runs import RunStore
from yieldagent.storage.wallets import WalletStore

pytestmark = pytest.mark.usefixtures("books_balance_after")


def _reason(held: int) -> str:
    return (
        f"withdrawals are paused in compound (holding {held}), in USDC's smallest unit: "
        "those funds cannot leave until the pool reopens withdrawals"
    )


async def test_a_paused_pool_holding_the_funds_is_named_until_it_reopens(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(
        lifecycle, engine, market, owner.id, 1_000 * USDC, protocols=("compound",)
    )
    elsewhere = await activated(
        lifecycle, engine, market, owner.id, 1_000 * USDC, eoa=OTHER_EOA, protocols=("aave",)
    )
    assert stored(engine, wallet.address).status_reason == ""
    scenarios = Scenarios(market)
    scenarios.pause(BASE, "compound", "withdraw")

    await lifecycle.refresh(BASE)
    held = stored(engine, wallet.address).positions["compound"]
    assert held == positions(market, wallet.address)["compound"] > 0
    assert stored(engine, wallet.address).status_reason == _reason(held)
    assert stored(engine, elsewhere.address).status_reason == ""  # aave is open
    version = stored(engine, wallet.address).version
    await lifecycle.refresh(BASE)  # nothing changed: nothing written
    assert stored(engine, wallet.address).version == version

    scenarios.pause(BASE, "compound", "withdraw", paused=False)
    await lifecycle.refresh(BASE)
    assert stored(engine, wallet.address).status_reason == ""


async def test_an_exit_the_pool_cannot_start_is_told_and_clears_once_the_funds_are_out(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    survey = RiskSurvey(RiskStore(engine), RiskSettings())
    plain = make_lifecycle(engine, chains)
    lifecycle = Lifecycle(
        WalletStore(engine),
        OperationStore(engine),
        chains,
        load_catalog(),
        plain.books.policy,
        SYSTEM_CLOCK,
        risk=survey,
    )
    agent = Agent(lifecycle, WalletStore(engine), RunStore(engine), AgentSettings(), risk=survey)
    wallet = await activated(
        lifecycle, engine, market, owner.id, 1_000 * USDC, protocols=("compound",)
    )
    scenarios = Scenarios(market)
    scenarios.pause(BASE, "compound", "all")  # supply paused: exit; withdrawals paused too

    outcome = await agent.run(BASE, wallet.address)
    assert outcome.status == "no_action"  # nothing can leave, so nothing is sent to fail
    held = positions(market, wallet.address)["compound"]
    assert held > 0
    await lifecycle.refresh(BASE)
    assert stored(engine, wallet.address).status_reason == _reason(held)
    await agent.run(BASE, wallet.address)  # a run meanwhile does not blank what is said
    assert stored(engine, wallet.address).status_reason == _reason(held)

    scenarios.pause(BASE, "compound", "all", paused=False)  # paused within the window: exit
    outcome = await agent.run(BASE, wallet.address)
    assert outcome.status == "completed", outcome
    assert positions(market, wallet.address).get("compound", 0) == 0
    await lifecycle.refresh(BASE)
    assert stored(engine, wallet.address).status_reason == ""


async def test_a_reason_another_rule_set_is_left_alone(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(
        lifecycle, engine, market, owner.id, 1_000 * USDC, protocols=("compound",)
    )
    leaving = "leaving compound as its liquidity frees up (5 left): supply is paused"
    books = lifecycle.books
    async with books.leases.hold(wallet.id) as holder:
        current = books.reread(wallet)
        books.commits.commit(Journal(replace(current, status_reason=leaving), owner=holder))
    Scenarios(market).pause(BASE, "compound", "withdraw")
    await lifecycle.refresh(BASE)
    assert stored(engine, wallet.address).status_reason == leaving  # the run's, kept


async def test_a_deactivation_waiting_on_a_paused_pool_says_why_and_clears_when_done(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(
        lifecycle, engine, market, owner.id, 1_000 * USDC, protocols=("compound",)
    )
    held = positions(market, wallet.address)["compound"]
    scenarios = Scenarios(market)
    scenarios.pause(BASE, "compound", "withdraw")
    await lifecycle.deactivate(owner.id, BASE, wallet.address, transfer=True)
    waiting = stored(engine, wallet.address)
    assert waiting.status == "deactivating"
    assert waiting.status_reason == (
        f"still {held} in compound; withdraw of {held} failed: withdrawals are paused"
    )

    scenarios.pause(BASE, "compound", "withdraw", paused=False)
    await lifecycle.reconcile()
    done = stored(engine, wallet.address)
    assert (done.status, done.status_reason) == ("deactivated", "")
