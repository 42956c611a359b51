"""The agent against the simulated chain and a real database: runs and their outcomes, the
``running`` state, plans stored before they execute, protocol pauses, emergency and blocked
wallets, the schedule, waiting for a lease, and recovery from runs a crash interrupted."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace

import pytest
from sqlalchemy import Engine, event

from support.agent_setup import (
    AMOUNT,
    INTERVAL,
    PartnerKey,
    WatchedChain,
    assert_each_ran_once_into_aave,
    make_agent,
    rebalancing_wallet,
    rebalancing_wallets,
    run_row,
    run_transactions,
    runs_of,
    schedule_row,
)
from support.wallet_setup import (
    BASE,
    BASE_USDC,
    PROTOCOLS,
    activated,
    activation,
    all_transactions,
    chain_value,
    fund,
    make_lifecycle,
    policy,
    positions,
    stored,
)
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.chain import SimulatedChain
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.composition.clock import SYSTEM_CLOCK
from yieldagent.domain.agent.rounds import waves
from yieldagent.domain.books.operations import (
    Move,
    Operation,
    OperationKind,
    OperationStatus,
    Step,
    StepAction,
)
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.books.wallets import Journal, Wallet
from yieldagent.domain.constraints import Constraints, Thresholds
from yieldagent.domain.errors import AccessDenied, Conflict
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.money.lifecycle import Lifecycle
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.domain.ports.chain import GasCost
from yieldagent.storage.operations import OperationStore
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.runs import RunStore
from yieldagent.storage.wallets import WalletStore

pytestmark = pytest.mark.usefixtures("books_balance_after")

NEVER_PAYS = Thresholds(min_apr_gain=1_000.0)
"""Thresholds no gain clears: only required moves (and idle funds) can happen."""


def idle_of(market: SimulatedMarket, address: str) -> int:
    """The smart account's idle balance on chain."""
    return market.balance(BASE, BASE_USDC, address)


def assert_valued(engine: Engine, market: SimulatedMarket, address: str) -> Wallet:
    """The stored wallet, checked to agree with the chain to the unit."""
    wallet = stored(engine, address)
    assert wallet.positions == positions(market, address)
    assert wallet.idle == idle_of(market, address)
    return wallet


# -- run outcomes --------------------------------------------------------------------------


async def test_a_run_right_after_activation_has_nothing_to_do(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, AMOUNT)
    before = positions(market, wallet.address)
    history = all_transactions(engine, wallet.id)

    outcome = await make_agent(engine, lifecycle).run(BASE, wallet.address, owner.id)

    assert outcome.status == "no_action"
    assert outcome.reason
    assert positions(market, wallet.address) == before
    assert all_transactions(engine, wallet.id) == history
    after = assert_valued(engine, market, wallet.address)
    assert after.status == WalletStatus.ACTIVATED
    # a run that moves nothing is no operation: its outcome is noted in the schedule
    assert runs_of(engine, wallet.id) == []
    assert outcome.run_id == ""
    row = schedule_row(engine, wallet.id)
    assert (row.runs, row.last_outcome, row.last_reason) == (1, "no_action", outcome.reason)
    assert row.last_run_at is not None


async def test_a_protocol_change_moves_every_unit_and_records_each_move_under_the_run(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await rebalancing_wallet(lifecycle, engine, market, owner)
    left = set(wallet.positions)
    total = chain_value(market, wallet.address)
    history = all_transactions(engine, wallet.id)

    outcome = await make_agent(engine, lifecycle).run(BASE, wallet.address, owner.id)

    assert outcome.status == "completed"
    assert positions(market, wallet.address) == {"aave": total}
    assert idle_of(market, wallet.address) == 0
    after = assert_valued(engine, market, wallet.address)
    assert after.status == WalletStatus.ACTIVATED
    assert after.selected_protocols == ("aave",)
    assert after.token == BASE_USDC
    assert after.current_apr > 0
    [run] = runs_of(engine, wallet.id)
    assert run.id == outcome.run_id
    assert run.status == "completed"
    assert run.steps_done == len(run.moves)
    row = schedule_row(engine, wallet.id)
    assert (row.runs, row.last_outcome, row.last_reason) == (1, "completed", outcome.reason)
    assert {m.protocol for m in run.moves if m.action == "withdraw"} == left
    assert [m.action for m in run.moves][-1] == "deposit"
    assert sum(m.amount for m in run.moves if m.action == "withdraw") == total
    assert run.moves[-1] == Move(StepAction.DEPOSIT, "aave", total)
    moves = run_transactions(engine, wallet.id, outcome.run_id)
    assert [(t.action, t.protocol, t.amount) for t in moves] == [
        (m.action, m.protocol, m.amount) for m in run.moves
    ]
    assert len({t.tx_hash for t in moves}) == len(moves)
    assert all_transactions(engine, wallet.id)[: len(history)] == history
    assert len(all_transactions(engine, wallet.id)) == len(history) + len(moves)


async def test_a_protocol_list_the_constraints_cannot_use_fails_and_moves_nothing(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: PartnerKey,
    caplog: pytest.LogCaptureFixture,
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    funded = fund(engine, market, owner.id, AMOUNT)
    wallet = await lifecycle.activate(
        owner.id,
        BASE,
        activation(funded.address, funded.tx_hash, constraints=Constraints(min_protocols=2)),
    )
    await lifecycle.update_protocols(owner.id, BASE, wallet.address, ["aave"])
    before = positions(market, wallet.address)
    history = all_transactions(engine, wallet.id)

    with caplog.at_level(logging.WARNING, logger="yieldagent.domain.agent.runs"):
        outcome = await make_agent(engine, lifecycle).run(BASE, wallet.address, owner.id)

    assert outcome.status == "failed"
    assert "min_protocols" in outcome.reason
    assert [getattr(r, "reason", None) for r in caplog.records] == [outcome.reason]
    assert positions(market, wallet.address) == before
    assert all_transactions(engine, wallet.id) == history
    assert assert_valued(engine, market, wallet.address).status == WalletStatus.ACTIVATED
    assert runs_of(engine, wallet.id) == []
    row = schedule_row(engine, wallet.id)
    assert (row.runs, row.last_outcome, row.last_reason) == (1, "failed", outcome.reason)


async def test_a_manual_run_is_refused_for_a_wallet_of_another_partner(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    other, _ = PartnerStore(engine).create("globex", PERMISSIONS)
    lifecycle = make_lifecycle(engine, chains)
    wallet = await rebalancing_wallet(lifecycle, engine, market, owner)
    before = positions(market, wallet.address)

    with pytest.raises(AccessDenied):
        await make_agent(engine, lifecycle).run(BASE, wallet.address, other.id)

    assert positions(market, wallet.address) == before
    assert runs_of(engine, wallet.id) == []


# -- the running state and the stored plan -------------------------------------------------


async def test_the_wallet_is_running_while_its_moves_execute(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    wallet = await rebalancing_wallet(make_lifecycle(engine, chains), engine, market, owner)
    seen: list[WalletStatus] = []

    async def look(action: str, protocol: str, amount: int) -> None:
        seen.append(stored(engine, wallet.address).status)

    watched = WatchedChain(market, look)
    agent = make_agent(engine, make_lifecycle(engine, {**chains, BASE: watched}))

    outcome = await agent.run(BASE, wallet.address, owner.id)

    assert outcome.status == "completed"
    assert len(watched.moves) == len(runs_of(engine, wallet.id)[0].moves) >= 2
    assert seen == [WalletStatus.RUNNING] * len(watched.moves)
    assert stored(engine, wallet.address).status == WalletStatus.ACTIVATED


async def test_the_plan_is_stored_before_its_first_step_executes(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    wallet = await rebalancing_wallet(make_lifecycle(engine, chains), engine, market, owner)
    seen: list[tuple[str, int, int]] = []

    async def look(action: str, protocol: str, amount: int) -> None:
        [run] = runs_of(engine, wallet.id)
        seen.append((run.status, len(run.moves), run.steps_done))

    watched = WatchedChain(market, look)
    agent = make_agent(engine, make_lifecycle(engine, {**chains, BASE: watched}))

    await agent.run(BASE, wallet.address, owner.id)

    [run] = runs_of(engine, wallet.id)
    planned = len(run.moves)
    # each round's steps marked before the next round: a wave sees those of the waves before
    assert seen == [("executing", planned, wave.start) for wave in waves(run.steps) for _ in wave]


async def test_a_step_the_chain_refuses_leaves_the_plan_the_step_done_and_the_truth(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: PartnerKey,
    caplog: pytest.LogCaptureFixture,
) -> None:
    owner, _ = partner
    wallet = await rebalancing_wallet(make_lifecycle(engine, chains), engine, market, owner)
    total = chain_value(market, wallet.address)
    history = all_transactions(engine, wallet.id)
    calls = 0

    async def second_move_fails(action: str, protocol: str, amount: int) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("execution reverted")

    watched = WatchedChain(market, second_move_fails)
    agent = make_agent(engine, make_lifecycle(engine, {**chains, BASE: watched}))

    with caplog.at_level(logging.WARNING, logger="yieldagent.domain.agent.runs"):
        outcome = await agent.run(BASE, wallet.address, owner.id)

    assert outcome.status == "failed"
    assert "step 2" in outcome.reason
    assert "execution reverted" in outcome.reason
    assert [getattr(r, "reason", None) for r in caplog.records] == [outcome.reason]
    [run] = runs_of(engine, wallet.id)
    assert (run.id, run.status, run.steps_done) == (outcome.run_id, "failed", 1)
    assert len(run.moves) == 3
    assert run_row(engine, run.id).reason == outcome.reason
    first = run.moves[0]
    assert watched.moves == [(first.action, first.protocol, first.amount)]
    [done] = run_transactions(engine, wallet.id, run.id)
    assert (done.action, done.protocol, done.amount) == (first.action, first.protocol, first.amount)
    assert len(all_transactions(engine, wallet.id)) == len(history) + 1
    after = assert_valued(engine, market, wallet.address)
    assert after.status == WalletStatus.ACTIVATED
    assert after.idle == first.amount
    assert chain_value(market, wallet.address) == total


async def test_the_next_run_finishes_what_a_refused_step_left_undone(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await rebalancing_wallet(lifecycle, engine, market, owner)
    total = chain_value(market, wallet.address)

    async def refuse_deposits(action: str, protocol: str, amount: int) -> None:
        if action == "supply":
            raise RuntimeError("execution reverted")

    broken = make_lifecycle(engine, {**chains, BASE: WatchedChain(market, refuse_deposits)})
    failed = await make_agent(engine, broken).run(BASE, wallet.address, owner.id)
    assert failed.status == "failed"
    assert positions(market, wallet.address) == {}

    outcome = await make_agent(engine, lifecycle).run(BASE, wallet.address, owner.id)

    assert outcome.status == "completed"
    assert positions(market, wallet.address) == {"aave": total}
    assert assert_valued(engine, market, wallet.address).status == WalletStatus.ACTIVATED
    assert [r.status for r in runs_of(engine, wallet.id)] == ["failed", "completed"]


# -- protocol pauses -----------------------------------------------------------------------


async def test_a_paused_protocol_is_left_at_the_next_run_even_when_moving_does_not_pay(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, AMOUNT)
    held = sorted(wallet.positions)
    paused = held[0]
    total = chain_value(market, wallet.address)
    runs = RunStore(engine)
    agent = make_agent(engine, lifecycle, NEVER_PAYS)
    assert (await agent.run(BASE, wallet.address)).status == "no_action"

    runs.pause(BASE, paused)
    outcome = await agent.run(BASE, wallet.address)

    assert outcome.status == "completed"
    assert paused in outcome.reason
    now = positions(market, wallet.address)
    assert paused not in now
    assert set(now) <= set(PROTOCOLS) - {paused}
    assert chain_value(market, wallet.address) == total
    assert idle_of(market, wallet.address) == 0
    assert assert_valued(engine, market, wallet.address).status == WalletStatus.ACTIVATED
    [exit_] = [m for m in runs_of(engine, wallet.id)[-1].moves if m.protocol == paused]
    assert exit_ == Move(StepAction.WITHDRAW, paused, wallet.positions[paused])
    assert (await agent.run(BASE, wallet.address)).status == "no_action"
    assert paused not in positions(market, wallet.address)


async def test_a_resumed_protocol_can_be_used_again(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await rebalancing_wallet(lifecycle, engine, market, owner)
    total = chain_value(market, wallet.address)
    runs = RunStore(engine)
    agent = make_agent(engine, lifecycle)

    runs.pause(BASE, "aave")
    paused = await agent.run(BASE, wallet.address)

    assert paused.status == "completed"
    assert positions(market, wallet.address) == {}
    assert idle_of(market, wallet.address) == total
    assert assert_valued(engine, market, wallet.address).idle == total

    runs.resume(BASE, "aave")
    resumed = await agent.run(BASE, wallet.address)

    assert resumed.status == "completed"
    assert positions(market, wallet.address) == {"aave": total}
    assert idle_of(market, wallet.address) == 0
    assert assert_valued(engine, market, wallet.address).status == WalletStatus.ACTIVATED


async def test_every_wallet_in_a_paused_protocol_leaves_it_on_its_next_scheduled_run(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallets = [
        await activated(lifecycle, engine, market, owner.id, AMOUNT, agent_id=f"pause-{n}")
        for n in range(2)
    ]
    paused = sorted(wallets[0].positions)[0]
    assert all(paused in w.positions for w in wallets)
    totals = [chain_value(market, w.address) for w in wallets]

    RunStore(engine).pause(BASE, paused)
    ran = await make_agent(engine, lifecycle, NEVER_PAYS).run_due()

    assert ran == 2
    for wallet, total in zip(wallets, totals, strict=True):
        assert paused not in positions(market, wallet.address)
        assert chain_value(market, wallet.address) == total
        assert assert_valued(engine, market, wallet.address).status == WalletStatus.ACTIVATED
        assert [r.status for r in runs_of(engine, wallet.id)] == ["completed"]


# -- emergency and blocked wallets -----------------------------------------------------------


@pytest.mark.parametrize("action", ["emergency", "block"])
async def test_a_wallet_the_operator_holds_is_not_run(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: PartnerKey,
    action: str,
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await rebalancing_wallet(lifecycle, engine, market, owner)
    held = await lifecycle.operate(BASE, wallet.address, action)
    before = positions(market, wallet.address)
    idle = idle_of(market, wallet.address)
    history = all_transactions(engine, wallet.id)
    agent = make_agent(engine, lifecycle)

    assert await agent.run_due() == 0
    scheduled = await agent.run(BASE, wallet.address)
    with pytest.raises(Conflict):
        await agent.run(BASE, wallet.address, owner.id)

    assert scheduled.status == "no_action"
    assert str(held.status) in scheduled.reason
    assert positions(market, wallet.address) == before
    assert idle_of(market, wallet.address) == idle
    assert all_transactions(engine, wallet.id) == history
    assert stored(engine, wallet.address).status == held.status
    assert runs_of(engine, wallet.id) == []
    if action == "emergency":
        assert before == {}
        assert idle == chain_value(market, wallet.address) > 0


async def test_a_wallet_in_emergency_holds_its_funds_idle_even_after_a_protocol_change(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, AMOUNT)
    total = chain_value(market, wallet.address)
    await lifecycle.operate(BASE, wallet.address, "emergency")
    await lifecycle.update_protocols(owner.id, BASE, wallet.address, ["aave"])
    agent = make_agent(engine, lifecycle)

    await agent.run(BASE, wallet.address)
    await agent.run_due()

    assert positions(market, wallet.address) == {}
    assert idle_of(market, wallet.address) == total
    assert stored(engine, wallet.address).status == WalletStatus.EMERGENCY

    await lifecycle.operate(BASE, wallet.address, "resume")
    outcome = await agent.run(BASE, wallet.address, owner.id)

    assert outcome.status == "completed"
    assert positions(market, wallet.address) == {"aave": total}


# -- the schedule --------------------------------------------------------------------------


async def test_run_due_runs_each_due_activated_unleased_wallet_once_and_reschedules_it(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    due, later, held, leased = [
        await rebalancing_wallet(lifecycle, engine, market, owner, agent_id=name)
        for name in ("due", "later", "held", "leased")
    ]
    store, runs = WalletStore(engine), RunStore(engine)
    runs.schedule(later.id, time.time() + INTERVAL)
    later_at = schedule_row(engine, later.id).next_run_at
    await lifecycle.operate(BASE, held.address, "emergency")
    assert store.acquire_lease(leased.id, "another-replica", time.time() + 60, time.time())
    untouched = {w.id: positions(market, w.address) for w in (later, leased)}
    agent = make_agent(engine, lifecycle)

    started = time.time()
    ran = await agent.run_due()
    ended = time.time()

    assert ran == 1
    assert [r.status for r in runs_of(engine, due.id)] == ["completed"]
    assert set(positions(market, due.address)) == {"aave"}
    row = schedule_row(engine, due.id)
    assert started + INTERVAL <= schedule_row(engine, due.id).next_run_at <= ended + INTERVAL
    assert (row.lease_owner, row.lease_until) == (None, None)
    for wallet in (later, held, leased):
        assert runs_of(engine, wallet.id) == []
    assert {w.id: positions(market, w.address) for w in (later, leased)} == untouched
    assert schedule_row(engine, later.id).next_run_at == later_at
    assert schedule_row(engine, leased.id).next_run_at == 0.0
    assert schedule_row(engine, leased.id).lease_owner == "another-replica"

    assert await agent.run_due() == 0
    assert len(runs_of(engine, due.id)) == 1

    store.release_lease(leased.id, "another-replica")
    assert await agent.run_due() == 1
    assert [r.status for r in runs_of(engine, leased.id)] == ["completed"]
    assert set(positions(market, leased.address)) == {"aave"}
    assert runs_of(engine, later.id) == []


async def test_one_batch_records_each_wallet_once_and_lets_the_idle_ones_go_before_moving(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    """A batch of a wallet that has to move, two with nothing to move and one whose rules
    cannot be met: each run leaves one record; the runs that move nothing are recorded,
    rescheduled and released before the first move reaches the chain."""
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    mover = await rebalancing_wallet(lifecycle, engine, market, owner, agent_id="mover")
    settled = [
        await activated(lifecycle, engine, market, owner.id, AMOUNT, agent_id=f"settled-{n}")
        for n in range(2)
    ]
    funded = fund(engine, market, owner.id, AMOUNT)
    infeasible = await lifecycle.activate(
        owner.id,
        BASE,
        activation(funded.address, funded.tx_hash, constraints=Constraints(min_protocols=2)),
    )
    await lifecycle.update_protocols(owner.id, BASE, infeasible.address, ["aave"])
    others = [*settled, infeasible]
    seen: list[tuple[str, str | None, float]] = []

    async def look(action: str, protocol: str, amount: int) -> None:
        for wallet in others:
            row = schedule_row(engine, wallet.id)
            seen.append((row.last_outcome, row.lease_owner, row.next_run_at))

    agent = make_agent(engine, make_lifecycle(engine, {**chains, BASE: WatchedChain(market, look)}))
    assert await agent.run_due() == 4

    expected = ["no_action", "no_action", "failed"]
    assert [outcome for outcome, _, _ in seen[: len(others)]] == expected
    assert [runs_of(engine, wallet.id) for wallet in others] == [[], [], []]
    assert all(lease is None and next_run > 0 for _, lease, next_run in seen)
    assert [r.status for r in runs_of(engine, mover.id)] == ["completed"]
    assert set(positions(market, mover.address)) == {"aave"}
    for wallet in [mover, *others]:
        row = schedule_row(engine, wallet.id)
        assert (row.lease_owner, row.lease_until) == (None, None)
        assert schedule_row(engine, wallet.id).next_run_at > time.time()
    assert await agent.run_due() == 0


async def test_a_batch_that_moves_nothing_costs_the_same_statements_for_any_size(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    """Claiming, reading, valuing, noting, rescheduling and releasing a batch whose
    wallets have nothing to move are statements per batch, not per wallet."""
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallets = [
        await activated(lifecycle, engine, market, owner.id, AMOUNT, agent_id=f"idle-{n}")
        for n in range(5)
    ]
    agent = make_agent(engine, lifecycle)
    runs = RunStore(engine)
    for wallet in wallets:
        runs.schedule(wallet.id, time.time() + INTERVAL)
    count = [0]

    def counted(*_: object) -> None:
        count[0] += 1

    event.listen(engine, "before_cursor_execute", counted)
    statements: list[int] = []
    for size in (1, 4):
        for wallet in wallets[:size]:
            runs.schedule(wallet.id, 0.0)
        count[0] = 0
        assert await agent.run_due() == size
        statements.append(count[0])

    assert statements[0] == statements[1], statements
    assert [schedule_row(engine, w.id).runs for w in wallets] == [2, 1, 1, 1, 0]
    assert {schedule_row(engine, w.id).last_outcome for w in wallets[:4]} == {"no_action"}


async def test_two_agents_never_run_the_same_due_wallet(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    wallets = await rebalancing_wallets(engine, market, chains, partner[0], "twice")

    async def yield_to_the_other(action: str, protocol: str, amount: int) -> None:
        await asyncio.sleep(0)  # every move suspends: the two agents' runs interleave

    first, second = (
        make_agent(engine, make_lifecycle(engine, {**chains, BASE: WatchedChain(market, hook)}))
        for hook in (yield_to_the_other, yield_to_the_other)
    )

    ran = await asyncio.gather(first.run_due(), second.run_due())

    assert sorted(ran) == [0, len(wallets)]
    assert_each_ran_once_into_aave(engine, market, wallets)


async def test_a_batch_that_outlasts_its_lease_keeps_its_wallets_from_other_agents(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    wallets = await rebalancing_wallets(engine, market, chains, partner[0], "long")

    async def slow(action: str, protocol: str, amount: int) -> None:
        await asyncio.sleep(0.25)  # a wallet's moves together take longer than a whole lease

    # Long enough that renewing every third of it survives the delays of a loaded machine.
    short = policy(lease_seconds=0.75)
    first = make_agent(
        engine, make_lifecycle(engine, {**chains, BASE: WatchedChain(market, slow)}, short)
    )
    second = make_agent(engine, make_lifecycle(engine, chains, short))
    batch = asyncio.create_task(first.run_due())
    await asyncio.sleep(0)  # the first agent claims the batch
    assert all(schedule_row(engine, w.id).lease_owner for w in wallets)
    taken_by_second = 0
    while not batch.done():  # the other agent keeps looking for due, unleased wallets
        taken_by_second += await second.run_due()
        await asyncio.sleep(0.03)

    assert await batch == len(wallets)
    assert taken_by_second == 0
    assert_each_ran_once_into_aave(engine, market, wallets)
    assert all(schedule_row(engine, w.id).lease_owner is None for w in wallets)


# -- waiting for a run in progress ----------------------------------------------------------


class WatchedLeases(WalletStore):
    """The wallet store, telling when a lease was refused twice: a caller is waiting."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.refused = 0
        self.waiting = asyncio.Event()

    def acquire_lease(self, wallet_id: int, owner: str, until: float, now: float) -> bool:
        taken = super().acquire_lease(wallet_id, owner, until, now)
        if not taken:
            self.refused += 1
            if self.refused >= 2:
                self.waiting.set()
        return taken


async def test_a_manual_run_waits_for_the_lease_another_holds_then_runs(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    wallet = await rebalancing_wallet(make_lifecycle(engine, chains), engine, market, owner)
    before = positions(market, wallet.address)
    total = chain_value(market, wallet.address)
    leases = WatchedLeases(engine)
    lifecycle = Lifecycle(
        leases,
        OperationStore(engine),
        chains,
        load_catalog(),
        policy(lease_wait_seconds=20.0),
        SYSTEM_CLOCK,
    )
    agent = make_agent(engine, lifecycle)
    assert leases.acquire_lease(wallet.id, "another-process", time.time() + 60, time.time())

    task = asyncio.create_task(agent.run(BASE, wallet.address, owner.id))
    await asyncio.wait_for(leases.waiting.wait(), 10)

    assert not task.done()
    assert positions(market, wallet.address) == before
    assert runs_of(engine, wallet.id) == []

    leases.release_lease(wallet.id, "another-process")
    outcome = await asyncio.wait_for(task, 20)

    assert outcome.status == "completed"
    assert positions(market, wallet.address) == {"aave": total}
    assert schedule_row(engine, wallet.id).lease_owner is None


async def test_a_manual_run_during_a_run_in_progress_waits_for_it(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    wallet = await rebalancing_wallet(make_lifecycle(engine, chains), engine, market, owner)
    total = chain_value(market, wallet.address)
    inside, gate = asyncio.Event(), asyncio.Event()

    async def hold(action: str, protocol: str, amount: int) -> None:
        inside.set()
        await gate.wait()

    agent = make_agent(engine, make_lifecycle(engine, {**chains, BASE: WatchedChain(market, hold)}))
    scheduled = asyncio.create_task(agent.run(BASE, wallet.address))
    await asyncio.wait_for(inside.wait(), 10)
    assert stored(engine, wallet.address).status == WalletStatus.RUNNING

    manual = asyncio.create_task(agent.run(BASE, wallet.address, owner.id))
    await asyncio.sleep(0)  # one turn: enough for the manual run to start, or to refuse
    waited = not manual.done()
    gate.set()
    first = await asyncio.wait_for(scheduled, 20)
    second = await asyncio.wait_for(manual, 20)

    assert waited
    assert first.status == "completed"
    assert second.status == "no_action"
    assert positions(market, wallet.address) == {"aave": total}


# -- failures the chain causes while planning -------------------------------------------------


class NoGasPrice(SimulatedChain):
    """The simulated Base chain with its gas price unavailable."""

    async def gas_cost(self, action: str) -> GasCost:
        raise RuntimeError("rpc unavailable")


async def test_a_chain_error_while_planning_answers_failed(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    wallet = await rebalancing_wallet(make_lifecycle(engine, chains), engine, market, owner)
    before = positions(market, wallet.address)
    agent = make_agent(engine, make_lifecycle(engine, {**chains, BASE: NoGasPrice(market, BASE)}))

    outcome = await agent.run(BASE, wallet.address, owner.id)

    assert outcome.status == "failed"
    assert "rpc unavailable" in outcome.reason
    assert positions(market, wallet.address) == before
    assert stored(engine, wallet.address).status == WalletStatus.ACTIVATED
    assert schedule_row(engine, wallet.id).last_outcome == "failed"


# -- recovery ------------------------------------------------------------------------------


def expire_lease(engine: Engine, wallet_id: int) -> None:
    """Leaves the wallet leased by a process that died: the lease has run out."""
    now = time.time()
    assert WalletStore(engine).acquire_lease(wallet_id, "dead-process", now - 1, now)


async def test_reconcile_returns_a_wallet_left_running_to_activated(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, AMOUNT)
    store = WalletStore(engine)
    store.commit(Journal(replace(wallet, status=WalletStatus.RUNNING)))
    expire_lease(engine, wallet.id)
    history = all_transactions(engine, wallet.id)
    agent = make_agent(engine, lifecycle)

    assert len(await agent.reconcile()) == 1

    after = assert_valued(engine, market, wallet.address)
    assert after.status == WalletStatus.ACTIVATED
    assert all_transactions(engine, wallet.id) == history
    assert len(await agent.reconcile()) == 0
    assert (await agent.run(BASE, wallet.address, owner.id)).status == "no_action"


@pytest.mark.unsettled
async def test_reconcile_leaves_a_running_wallet_whose_lease_is_live_alone(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, AMOUNT)
    store = WalletStore(engine)
    store.commit(Journal(replace(wallet, status=WalletStatus.RUNNING)))
    assert store.acquire_lease(wallet.id, "live-process", time.time() + 60, time.time())

    assert len(await make_agent(engine, lifecycle).reconcile()) == 0

    assert stored(engine, wallet.address).status == WalletStatus.RUNNING


async def test_reconcile_records_the_moves_a_crashed_run_made_once_and_revalues(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, AMOUNT)
    total = chain_value(market, wallet.address)
    source = sorted(wallet.positions)[0]
    amount = wallet.positions[source]
    plan = (
        Step(StepAction.WITHDRAW, BASE_USDC, amount, protocol=source),
        Step(StepAction.DEPOSIT, BASE_USDC, amount, protocol="aave"),
    )
    head = await chains[BASE].head()
    store = WalletStore(engine)
    run = Operation(
        "crashed-run",
        wallet.id,
        BASE,
        OperationKind.RUN,
        OperationStatus.EXECUTING,
        plan,
        head.number,
        "dead",
    )
    OperationStore(engine).start(run)
    store.commit(Journal(replace(wallet, status=WalletStatus.RUNNING)))
    expire_lease(engine, wallet.id)
    receipt = await chains[BASE].withdraw(wallet.address, source, BASE_USDC, amount)
    history = all_transactions(engine, wallet.id)
    agent = make_agent(engine, lifecycle)

    assert len(await agent.reconcile()) == 1

    added = all_transactions(engine, wallet.id)[len(history) :]
    assert [(t.action, t.protocol, t.amount, t.tx_hash, t.correlation_id) for t in added] == [
        ("withdraw", source, amount, receipt.tx_hash, run.id)
    ]
    assert added[0].block_number == receipt.block_number
    [recovered] = runs_of(engine, wallet.id)
    assert recovered.status == "recovered"
    assert run_row(engine, run.id).finished_at is not None
    after = assert_valued(engine, market, wallet.address)
    assert after.status == WalletStatus.ACTIVATED
    assert after.idle == amount
    assert source not in after.positions
    assert chain_value(market, wallet.address) == total

    assert len(await agent.reconcile()) == 0
    assert len(all_transactions(engine, wallet.id)) == len(history) + 1

    outcome = await agent.run(BASE, wallet.address, owner.id)
    assert outcome.status == "completed"
    assert idle_of(market, wallet.address) == 0
    assert chain_value(market, wallet.address) == total
