"""Each risk guard on the simulated market, through the agent: the guard trips, wallets
leave the pool (or stop adding to it), the protocol listing's verdict and the wallets'
``status_reason`` show it, and the books agree with the chain afterwards (the
``books_balance_after`` fixture)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from sqlalchemy import Engine, text

from support.agent_setup import PartnerKey, WatchedChain
from support.wallet_setup import (
    BASE,
    BASE_USDC,
    USDC,
    activated,
    chain_value,
    make_lifecycle,
    positions,
    stored,
)
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.chain.simulated.risk import Scenarios
from yieldagent.composition.clock import SYSTEM_CLOCK
from yieldagent.domain.agent.runs import Agent
from yieldagent.domain.agent.scheduler import AgentSettings
from yieldagent.domain.books.events import RISK_CHANGED, WalletEvent
from yieldagent.domain.books.wallets import Wallet
from yieldagent.domain.errors import ChainUnavailable
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.money.lifecycle import Lifecycle
from yieldagent.domain.ports.chain import Block
from yieldagent.domain.risk.settings import RiskSettings
from yieldagent.domain.risk.survey import RiskSurvey
from yieldagent.servicers.events import wallet_event
from yieldagent.storage.events import EventStore
from yieldagent.storage.operations import OperationStore
from yieldagent.storage.risk import RiskStore
from yieldagent.storage.runs import RunStore
from yieldagent.storage.wallets import WalletStore

pytestmark = pytest.mark.usefixtures("books_balance_after")

AMOUNT = 200_000 * USDC
MORPHO = "morpho_gauntlet_usdc_prime"


@dataclass
class Guarded:
    """A guarded service on the simulated market."""

    engine: Engine
    market: SimulatedMarket
    lifecycle: Lifecycle
    agent: Agent
    survey: RiskSurvey

    async def state(self, protocol: str) -> tuple[str, tuple[str, ...]]:
        chain = self.lifecycle.chain(BASE)
        quotes = {q.protocol: q for q in await chain.quotes(BASE_USDC, [protocol])}
        head = await chain.head()
        [judged] = await self.survey.judge(BASE, chain, BASE_USDC, quotes, head.timestamp)
        return str(judged.verdict.state), judged.verdict.reasons


def _guarded(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], settings: RiskSettings
) -> Guarded:
    survey = RiskSurvey(RiskStore(engine), settings)
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
    return Guarded(engine, market, lifecycle, agent, survey)


async def _wallets(guarded: Guarded, owner: int, protocol: str, count: int = 3) -> list[Wallet]:
    return [
        await activated(
            guarded.lifecycle,
            guarded.engine,
            guarded.market,
            owner,
            AMOUNT,
            eoa=f"0x{0xE0 + i:040x}",
            protocols=(protocol,),
        )
        for i in range(count)
    ]


Scenario = Callable[[Scenarios], object]

EXITS = [
    pytest.param(
        "moonwell",
        lambda s: s.drain(BASE, "moonwell", "0.6"),
        "TVL fell",
        3_600,  # borrowers repay as demand follows its target: cash frees up
        id="tvl-drop",
    ),
    pytest.param(
        "compound",
        lambda s: s.pause(BASE, "compound", "supply"),
        "supply is paused",
        0,
        id="supply-paused",
    ),
    pytest.param(
        MORPHO,
        lambda s: s.loss(BASE, MORPHO, "0.01"),
        "share price fell",
        0,
        id="loss",
    ),
    pytest.param(
        MORPHO,
        lambda s: s.price(BASE, "WETH", "3000"),
        "WETH",
        0,
        id="depeg",
    ),
]


@pytest.mark.parametrize(("protocol", "scenario", "reason", "wait"), EXITS)
async def test_wallets_leave_a_pool_whose_guard_trips(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: PartnerKey,
    protocol: str,
    scenario: Scenario,
    reason: str,
    wait: int,
) -> None:
    owner, _ = partner
    guarded = _guarded(engine, market, chains, RiskSettings())
    wallets = await _wallets(guarded, owner.id, protocol)
    assert all(positions(market, w.address).get(protocol, 0) > 0 for w in wallets)
    assert (await guarded.state(protocol))[0] == "ok"

    scenario(Scenarios(market))
    if wait:
        market.advance(wait)
    state, reasons = await guarded.state(protocol)
    assert state == "exit"
    assert any(reason in r for r in reasons), reasons

    for wallet in wallets:
        outcome = await guarded.agent.run(BASE, wallet.address)
        assert outcome.status == "completed", outcome
        assert positions(market, wallet.address).get(protocol, 0) == 0
        assert stored(engine, wallet.address).status_reason == ""  # nothing left behind
    # nowhere else to go (the wallets chose one protocol): the funds wait idle
    assert all(chain_value(market, w.address) > 0 for w in wallets)


async def test_paused_withdrawals_stop_new_funds_and_the_pool_is_left_when_they_reopen(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    guarded = _guarded(engine, market, chains, RiskSettings())
    [wallet] = await _wallets(guarded, owner.id, "compound", count=1)
    held = positions(market, wallet.address)["compound"]
    scenarios = Scenarios(market)
    scenarios.pause(BASE, "compound", "withdraw")
    assert await guarded.state("compound") == ("no_new_funds", ("withdrawals are paused",))

    outcome = await guarded.agent.run(BASE, wallet.address)
    assert outcome.status == "no_action"
    assert positions(market, wallet.address)["compound"] >= held

    scenarios.pause(BASE, "compound", "withdraw", paused=False)
    assert (await guarded.state("compound"))[0] == "exit"
    outcome = await guarded.agent.run(BASE, wallet.address)
    assert outcome.status == "completed"
    assert positions(market, wallet.address).get("compound", 0) == 0


async def test_an_exit_the_pool_cannot_pay_at_once_is_visible_and_finished_later(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    guarded = _guarded(engine, market, chains, RiskSettings())
    [wallet] = await _wallets(guarded, owner.id, "moonwell", count=1)
    scenarios = Scenarios(market)
    scenarios.drain(BASE, "moonwell", "0.6")  # fully lent out: no cash at all
    assert (await guarded.state("moonwell"))[0] == "exit"

    first = await guarded.agent.run(BASE, wallet.address)
    assert first.status == "no_action"
    assert "cash" in first.reason
    assert positions(market, wallet.address)["moonwell"] > 0

    market.advance(3_600)  # borrowers repay part: some cash frees up
    second = await guarded.agent.run(BASE, wallet.address)
    assert second.status == "completed"
    assert positions(market, wallet.address).get("moonwell", 0) == 0


async def test_a_large_wallet_in_a_small_pool_is_cut_to_the_share_cap(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    settings = RiskSettings(max_pool_share=0.01)
    guarded = _guarded(engine, market, chains, settings)
    pool = next(p for p in market.pools_now(BASE, BASE_USDC) if p.protocol == "moonwell")
    tvl = pool.total_supply()
    big = 900_000 * USDC
    assert big > tvl // 100  # more than 1% of the pool

    [wallet] = await _wallets(guarded, owner.id, "moonwell", count=1)
    [other] = [
        await activated(
            guarded.lifecycle,
            engine,
            market,
            owner.id,
            big,
            eoa="0x" + "ab" * 20,
            protocols=("moonwell",),
        )
    ]
    held = positions(market, wallet.address)["moonwell"] + positions(market, other.address).get(
        "moonwell", 0
    )
    after = next(p for p in market.pools_now(BASE, BASE_USDC) if p.protocol == "moonwell")
    assert held * 100 <= after.total_supply()
    assert chain_value(market, other.address) > positions(market, other.address).get("moonwell", 0)


async def test_a_tripped_guard_is_told_to_the_pools_wallets_once_per_change(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    guarded = _guarded(engine, market, chains, RiskSettings())
    wallets = await _wallets(guarded, owner.id, "compound", count=2)
    elsewhere = await activated(
        guarded.lifecycle,
        engine,
        market,
        owner.id,
        AMOUNT,
        eoa="0x" + "cd" * 20,
        protocols=("moonwell",),
    )
    events = EventStore(engine)

    def told(wallet: Wallet) -> list[WalletEvent]:
        return [e for e in events.after(wallet.id, 0, 1_000) if e.kind == RISK_CHANGED]

    scenarios = Scenarios(market)
    scenarios.pause(BASE, "compound", "supply")
    for wallet in wallets:
        await guarded.agent.run(BASE, wallet.address)  # the run's survey sees the trip
        await guarded.agent.run(BASE, wallet.address)  # the state stays: nothing new told
    for wallet in wallets:
        [event] = told(wallet)
        assert event.data["protocol"] == "compound"
        assert (event.data["previous_state"], event.data["state"]) == ("ok", "exit")
        assert event.data["reasons"] == ["supply is paused"]
        message = wallet_event(event)  # what WatchWallet and the webhooks carry
        assert message.type == "protocol.risk_changed"
        assert message.protocol_risk_changed.state == "exit"
        assert list(message.protocol_risk_changed.reasons) == ["supply is paused"]
    assert told(elsewhere) == []  # neither holds nor selected compound


def _depeg(market: SimulatedMarket) -> None:
    """The Morpho vault's collateral falls off its peg: the guards exit the vault."""
    Scenarios(market).price(BASE, "WETH", "3000")


def _due_only(engine: Engine, wallets: list[Wallet]) -> None:
    """Only ``wallets`` are due; every other wallet runs much later."""
    with engine.begin() as connection:
        connection.execute(text("UPDATE wallet_schedule SET next_run_at = 1e12"))
        for wallet in wallets:
            connection.execute(
                text("UPDATE wallet_schedule SET next_run_at = 0 WHERE wallet_id = :id"),
                {"id": wallet.id},
            )


class Yielding(WatchedChain):
    """The watched chain, its head read as a node's is: the caller waits for it, and
    the event loop's other tasks run meanwhile."""

    async def head(self) -> Block:
        await asyncio.sleep(0)
        return await super().head()


class Claims(RunStore):
    """The run store, telling when its second batch of wallets was claimed."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.batches = 0
        self.second = asyncio.Event()

    def claim_due(
        self, now: float, owner: str, lease_until: float, limit: int
    ) -> dict[int, float | None]:
        claimed = super().claim_due(now, owner, lease_until, limit)
        if claimed:
            self.batches += 1
            if self.batches == 2:
                self.second.set()
        return claimed


async def test_an_exit_one_batch_finds_moves_the_pools_other_wallets_in_the_same_cycle(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    guarded = _guarded(engine, market, chains, RiskSettings())
    wallets = await _wallets(guarded, owner.id, MORPHO)
    _due_only(engine, wallets[:1])
    _depeg(market)

    assert await guarded.agent.run_cycle() == 3

    assert all(positions(market, w.address).get(MORPHO, 0) == 0 for w in wallets)


async def test_a_lane_that_found_nothing_due_takes_the_wallets_an_exit_makes_due(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    """Two lanes of one wallet each, one wallet due: the first lane's batch finds the exit
    and makes the others due, and the second lane, which found nothing, claims one of them
    while the first batch's withdrawal still waits for the chain."""
    owner, _ = partner
    claims = Claims(engine)
    seen: list[bool] = []  # at the first withdrawal: whether a second batch was claimed
    withdrawals: list[str] = []

    async def first_withdrawal_waits(action: str, protocol: str, amount: int) -> None:
        if action != "withdraw":
            return
        withdrawals.append(protocol)
        if len(withdrawals) == 1:
            try:
                await asyncio.wait_for(claims.second.wait(), 10)  # bounds a failing run
                seen.append(True)
            except TimeoutError:
                seen.append(False)

    watched: dict[int, MarketChain] = {**chains, BASE: Yielding(market, first_withdrawal_waits)}
    guarded = _guarded(engine, market, watched, RiskSettings())
    wallets = await _wallets(guarded, owner.id, MORPHO)
    agent = Agent(
        guarded.lifecycle,
        WalletStore(engine),
        claims,
        AgentSettings(batch=1, concurrent_batches=2),
        risk=guarded.survey,
    )
    _due_only(engine, wallets[:1])
    _depeg(market)

    assert await agent.run_cycle() == 3

    assert seen == [True]
    assert claims.batches == 3
    assert all(positions(market, w.address).get(MORPHO, 0) == 0 for w in wallets)


async def test_the_guards_watch_makes_an_exited_pools_wallets_due_when_none_is(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    guarded = _guarded(engine, market, chains, RiskSettings())
    wallets = await _wallets(guarded, owner.id, MORPHO)
    [elsewhere] = [
        await activated(
            guarded.lifecycle,
            engine,
            market,
            owner.id,
            AMOUNT,
            eoa="0x" + "cd" * 20,
            protocols=("moonwell",),
        )
    ]
    held = positions(market, elsewhere.address)
    _due_only(engine, [])
    assert await guarded.agent.watch_exits() == 0  # nothing exited: nothing made due
    assert await guarded.agent.run_cycle() == 0

    _depeg(market)
    assert await guarded.agent.watch_exits() == 3
    assert await guarded.agent.watch_exits() == 0  # the exit was seen: once per exit
    assert await guarded.agent.run_cycle() == 3

    assert all(positions(market, w.address).get(MORPHO, 0) == 0 for w in wallets)
    assert positions(market, elsewhere.address) == held  # not due: it did not run


async def test_the_guards_watch_asks_the_chain_nothing_while_no_wallet_holds_funds(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain]
) -> None:
    class Unreadable(WatchedChain):
        async def head(self) -> Block:
            raise AssertionError("the watch read the chain")

    unreadable: dict[int, MarketChain] = {**chains, BASE: Unreadable(market, _nothing)}
    guarded = _guarded(engine, market, unreadable, RiskSettings())
    _depeg(market)

    assert await guarded.agent.watch_exits() == 0


async def _nothing(action: str, protocol: str, amount: int) -> None:
    """A move hook that does nothing."""


async def test_an_exit_that_failed_runs_again_at_the_next_watch(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    refusals = [ChainUnavailable("the node failed to answer")]

    async def first_withdrawal_fails(action: str, protocol: str, amount: int) -> None:
        if action == "withdraw" and refusals:
            raise refusals.pop()

    failing: dict[int, MarketChain] = {**chains, BASE: WatchedChain(market, first_withdrawal_fails)}
    guarded = _guarded(engine, market, failing, RiskSettings())
    wallets = await _wallets(guarded, owner.id, MORPHO, count=2)
    _due_only(engine, [])
    _depeg(market)
    assert await guarded.agent.watch_exits() == 2
    assert await guarded.agent.run_cycle() == 2
    left = [w for w in wallets if positions(market, w.address).get(MORPHO, 0) > 0]
    assert len(left) == 1  # its withdrawal was refused: the run failed

    assert await guarded.agent.watch_exits() == 1  # the failed exit, due again
    assert await guarded.agent.run_cycle() == 1
    assert all(positions(market, w.address).get(MORPHO, 0) == 0 for w in wallets)
    assert await guarded.agent.watch_exits() == 0  # nobody left to retry
