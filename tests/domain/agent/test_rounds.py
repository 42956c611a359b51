"""Runs with moves executed together (``domain.agent.rounds``), as a scheduled batch runs them:
every plan stored before the first step, one refused step failing only its own run, a
wallet that changed before its plan was stored left alone, each wallet planned on the
pools as the plans before it leave them, and a run's steps of one kind sent in one
round."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import Engine, text

from support.agent_setup import (
    AMOUNT,
    PartnerKey,
    WatchedChain,
    assert_each_ran_once_into_aave,
    make_agent,
    rebalancing_wallets,
    runs_of,
)
from support.wallet_setup import (
    BASE,
    activated,
    activation,
    fund,
    make_lifecycle,
    positions,
    stored,
)
from yieldagent.chain.simulated.chain import SimulatedChain
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.agent.rounds import waves
from yieldagent.domain.books.operations import MOVES, Step, StepAction
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.books.wallets import Journal, Wallet
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.errors import ChainRejected
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.ports.chain import ChainTx, Send, TxReceipt
from yieldagent.storage.wallets import WalletStore

pytestmark = pytest.mark.usefixtures("books_balance_after")


class RefusingChain(SimulatedChain):
    """The simulated Base chain, sending batches, but reverting every send of ``holder``."""

    def __init__(self, market: SimulatedMarket, holder: str) -> None:
        super().__init__(market, BASE)
        self._holder = holder
        self.batches: list[int] = []

    async def send_many(self, sends: Sequence[Send]) -> list[TxReceipt | Exception]:
        self.batches.append(len(sends))
        others = [s for s in sends if s.holder != self._holder]
        sent = iter(await super().send_many(others))
        return [
            ChainRejected("paused", "execution reverted: paused")
            if s.holder == self._holder
            else next(sent)
            for s in sends
        ]


class RefusingAll(SimulatedChain):
    """The simulated Base chain, sending batches, reverting every send, and counting the
    history reads of one holder or many."""

    def __init__(self, market: SimulatedMarket) -> None:
        super().__init__(market, BASE)
        self.reads: list[int] = []

    async def send_many(self, sends: Sequence[Send]) -> list[TxReceipt | Exception]:
        return [ChainRejected("paused", "execution reverted: paused") for _ in sends]

    async def history(self, holder: str, since_block: int) -> list[ChainTx]:
        self.reads.append(1)
        return await super().history(holder, since_block)

    async def histories(self, holders: Sequence[str], since_block: int) -> dict[str, list[ChainTx]]:
        self.reads.append(len(holders))
        return await super().histories(holders, since_block)


class BatchesSeen(SimulatedChain):
    """The simulated Base chain, sending batches, recording each batch's sends, and
    reverting the sends into ``refused_pool``."""

    def __init__(self, market: SimulatedMarket, refused_pool: str = "") -> None:
        super().__init__(market, BASE)
        self.refused_pool = refused_pool
        self.batches: list[list[tuple[str, str]]] = []

    async def send_many(self, sends: Sequence[Send]) -> list[TxReceipt | Exception]:
        self.batches.append([(s.action, s.protocol) for s in sends])
        going = [s for s in sends if s.protocol != self.refused_pool]
        sent = iter(await super().send_many(going))
        return [
            ChainRejected("paused", "execution reverted: paused")
            if s.protocol == self.refused_pool
            else next(sent)
            for s in sends
        ]


class ChangingWallets(WalletStore):
    """Wallets whose ``victim`` another writer changes just before the next commit of
    many."""

    def __init__(self, engine: Engine, victim: int) -> None:
        super().__init__(engine)
        self._engine = engine
        self._victim = victim

    def commit_many(self, journals: Sequence[Journal]) -> list[bool]:
        with self._engine.begin() as connection:
            connection.execute(
                text("UPDATE wallets SET version = version + 1 WHERE id = :id"),
                {"id": self._victim},
            )
        return super().commit_many(journals)


async def test_a_batch_stores_every_plan_before_its_first_step_and_moves_each_wallet(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    wallets = await rebalancing_wallets(engine, market, chains, owner, "batch")
    seen: list[list[tuple[str, int, WalletStatus]]] = []

    async def look(action: str, protocol: str, amount: int) -> None:
        seen.append(
            [
                (run.status, len(run.moves), stored(engine, w.address).status)
                for w in wallets
                for run in runs_of(engine, w.id)
            ]
        )

    agent = make_agent(engine, make_lifecycle(engine, {**chains, BASE: WatchedChain(market, look)}))
    assert await agent.run_due() == 3

    first = seen[0]
    assert len(first) == 3
    assert all(status == "executing" and moves > 0 for status, moves, _ in first)
    assert {wallet_status for _, _, wallet_status in first} == {WalletStatus.RUNNING}
    assert_each_ran_once_into_aave(engine, market, wallets)
    assert {stored(engine, w.address).status for w in wallets} == {WalletStatus.ACTIVATED}


async def test_a_step_the_chain_refuses_fails_only_its_own_run(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    refused, *others = await rebalancing_wallets(engine, market, chains, owner, "refuse")
    before = positions(market, refused.address)
    chain = RefusingChain(market, refused.address)
    agent = make_agent(engine, make_lifecycle(engine, {**chains, BASE: chain}))

    assert await agent.run_due() == 3

    assert len(chain.batches) == 2 and chain.batches[0] == 6  # every run's 2 withdrawals
    [run] = runs_of(engine, refused.id)
    assert run.status == "failed"
    assert run.reason.startswith("step 1 failed: ") and "paused" in run.reason
    assert positions(market, refused.address) == before
    assert stored(engine, refused.address).status == WalletStatus.ACTIVATED
    assert_each_ran_once_into_aave(engine, market, others)


async def test_the_runs_the_chain_refused_are_settled_from_one_read_of_their_histories(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    wallets = await rebalancing_wallets(engine, market, chains, owner, "all-refused")
    before = [positions(market, w.address) for w in wallets]
    chain = RefusingAll(market)
    agent = make_agent(engine, make_lifecycle(engine, {**chains, BASE: chain}))
    chain.reads.clear()

    assert await agent.run_due() == 3

    assert chain.reads == [3, 3]  # the refused runs' histories in one read, then their close
    for wallet, held in zip(wallets, before, strict=True):
        [run] = runs_of(engine, wallet.id)
        assert run.status == "failed"
        assert positions(market, wallet.address) == held
        assert stored(engine, wallet.address).status == WalletStatus.ACTIVATED


async def test_a_wallet_that_changed_before_its_plan_was_stored_moves_nothing(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    changed, *others = await rebalancing_wallets(engine, market, chains, owner, "changed")
    before = positions(market, changed.address)
    lifecycle = make_lifecycle(engine, chains)
    lifecycle.books.wallets = ChangingWallets(engine, changed.id)
    agent = make_agent(engine, lifecycle)

    assert await agent.run_due() == 2

    assert runs_of(engine, changed.id) == []  # its plan was never stored
    assert positions(market, changed.address) == before
    assert stored(engine, changed.address).status == WalletStatus.ACTIVATED
    assert_each_ran_once_into_aave(engine, market, others)


async def test_each_wallet_of_a_batch_is_planned_on_the_pools_the_plans_before_it_leave(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    """Two wallets with the same idle funds and rules: planned on the same pools they
    would split them alike; the second, planned after the first's supplies, places
    differently, as the first's supplies lowered the rates it chose."""
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallets = [
        await activated(lifecycle, engine, market, owner.id, AMOUNT, agent_id=f"twin-{n}")
        for n in range(2)
    ]
    for wallet in wallets:  # back to idle, as a wallet whose funds arrived after placing
        for protocol, amount in positions(market, wallet.address).items():
            market.withdraw(BASE, wallet.address, protocol, wallet.token, amount)
    agent = make_agent(engine, lifecycle)

    assert await agent.run_due() == 2

    first, second = (positions(market, w.address) for w in wallets)
    assert sum(first.values()) == pytest.approx(sum(second.values()), rel=1e-6)
    assert first != second


def _steps(*actions: StepAction) -> tuple[Step, ...]:
    return tuple(Step(action, "usdc", 1, protocol=f"p{n}") for n, action in enumerate(actions))


@given(st.lists(st.sampled_from(list(StepAction)), max_size=12))
def test_waves_send_every_step_once_in_order_and_never_mix_kinds(
    actions: list[StepAction],
) -> None:
    steps = _steps(*actions)
    found = waves(steps)
    assert [i for wave in found for i in wave] == list(range(len(steps)))
    for wave in found:
        kinds = {steps[i].action for i in wave}
        assert len(kinds) == 1 and (len(wave) == 1 or kinds <= MOVES)
    for before, after in pairwise(found):  # each wave as long as it can be
        assert not (
            steps[before[-1]].action in MOVES and steps[after[0]].action == steps[before[-1]].action
        )


def test_a_plans_steps_of_one_kind_go_out_together_and_supplies_wait_for_withdrawals() -> None:
    deposit, withdraw, swap = StepAction.DEPOSIT, StepAction.WITHDRAW, StepAction.SWAP
    assert waves(_steps(deposit, deposit, deposit)) == [range(0, 3)]
    assert waves(_steps(withdraw, withdraw, deposit, deposit)) == [range(0, 2), range(2, 4)]
    assert waves(_steps(withdraw, swap, swap, deposit)) == [
        range(0, 1),
        range(1, 2),
        range(2, 3),
        range(3, 4),
    ]
    assert waves(()) == []


async def _idle_over_three_pools(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> Wallet:
    """A wallet whose rules spread it over 3 pools, its funds back to idle, as funds that
    arrived after its placement."""
    owner, _ = partner
    funded = fund(engine, market, owner.id, AMOUNT, agent_id="spread")
    wallet = await make_lifecycle(engine, chains).activate(
        owner.id,
        BASE,
        activation(funded.address, funded.tx_hash, constraints=Constraints(min_protocols=3)),
    )
    for protocol, amount in positions(market, wallet.address).items():
        market.withdraw(BASE, wallet.address, protocol, wallet.token, amount)
    return wallet


async def test_a_placement_over_several_pools_is_one_round(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    wallet = await _idle_over_three_pools(engine, market, chains, partner)
    chain = BatchesSeen(market)
    agent = make_agent(engine, make_lifecycle(engine, {**chains, BASE: chain}))

    assert await agent.run_due() == 1

    [batch] = chain.batches
    assert len(batch) >= 3 and {action for action, _ in batch} == {"supply"}
    [run] = runs_of(engine, wallet.id)
    assert run.status == "completed" and all(step.done for step in run.steps)
    assert sum(positions(market, wallet.address).values()) == AMOUNT
    assert stored(engine, wallet.address).status == WalletStatus.ACTIVATED


async def test_a_refused_supply_of_a_round_fails_its_run_and_the_others_are_booked(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    """The round's other supplies were mined: the run fails naming the refused step, and
    the books hold what the chain did (``books_balance_after``)."""
    wallet = await _idle_over_three_pools(engine, market, chains, partner)
    refused = "compound"
    chain = BatchesSeen(market, refused)
    agent = make_agent(engine, make_lifecycle(engine, {**chains, BASE: chain}))

    assert await agent.run_due() == 1

    [run] = runs_of(engine, wallet.id)
    assert run.status == "failed"
    at = next(n for n, step in enumerate(run.steps, 1) if step.protocol == refused)
    assert run.reason.startswith(f"step {at} failed: ") and "paused" in run.reason
    held = positions(market, wallet.address)
    assert refused not in held and len(held) >= 2
    assert {step.protocol for step in run.steps if step.done} == set(held)
    assert stored(engine, wallet.address).status == WalletStatus.ACTIVATED
