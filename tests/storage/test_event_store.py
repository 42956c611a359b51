"""Wallet events from real flows, on SQLite and PostgreSQL: each one recorded with the
commit that makes it true, once, in order, even across crashes and reconciliation."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlmodel import Session, col

from support.agent_setup import make_agent
from support.agent_world import expire_leases
from support.crashing_chain import CrashingChain, SimulatedCrash, with_chain
from support.wallet_setup import (
    BASE,
    BASE_USDC,
    DAY,
    OTHER_EOA,
    USDC,
    activated,
    activation,
    fund,
    make_lifecycle,
    stored,
    top_up_deposit,
)
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.books.events import EventDraft, WalletEvent
from yieldagent.domain.books.wallets import Journal
from yieldagent.domain.errors import Conflict
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.ports.credentials import Partner
from yieldagent.storage import wallets as wallet_storage
from yieldagent.storage.events import EventSignal, EventStore, event_of, record_events
from yieldagent.storage.tables import WalletEventRow
from yieldagent.storage.wallets import WalletStore

Chains = dict[int, MarketChain]
PartnerKey = tuple[Partner, str]


def events_of(engine: Engine, wallet_id: int, cursor: int = 0) -> list[WalletEvent]:
    return EventStore(engine).after(wallet_id, cursor, 1000)


def kinds(events: list[WalletEvent]) -> list[str]:
    return [event.kind for event in events]


async def test_a_whole_flow_records_each_event_once_in_order(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    funded = fund(engine, market, owner.id, 5_000 * USDC)
    wallet = await lifecycle.activate(
        owner.id, BASE, activation(funded.address, funded.tx_hash, protocols=("moonwell",))
    )
    market.advance(3 * DAY)
    more = top_up_deposit(market, wallet.address, 1_000 * USDC)
    await lifecycle.top_up(owner.id, BASE, wallet.address, more)
    await lifecycle.update_protocols(owner.id, BASE, wallet.address, ("aave",))
    run = await make_agent(engine, lifecycle).run(BASE, wallet.address, owner.id)
    await lifecycle.update_protocols(owner.id, BASE, wallet.address, ("moonwell",))
    await make_agent(engine, lifecycle).run(BASE, wallet.address, owner.id)
    market.advance(7 * DAY)
    claimed = await lifecycle.claim_rewards(owner.id, BASE, wallet.address)
    paid = await lifecycle.withdraw(owner.id, BASE, wallet.address, 500 * USDC)
    await lifecycle.deactivate(owner.id, BASE, wallet.address, transfer=True)

    events = events_of(engine, wallet.id)
    assert kinds(events) == [
        "deposit_credited",
        "activated",
        "deposit_credited",
        "run_completed",
        "run_completed",
        "reward_claimed",
        "withdrawn",
        "withdrawn",
        "deactivated",
    ]
    ids = [event.id for event in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    first, activated_event, top_up, into_aave = events[:4]
    assert first.data["tx_hash"] == funded.tx_hash
    assert first.amount == 5_000 * USDC and first.data["amount"] == str(5_000 * USDC)
    assert activated_event.data["selected_protocols"] == ["moonwell"]
    assert activated_event.data["reactivation"] is False
    assert activated_event.data["allocation"] == {"moonwell": str(5_000 * USDC)}
    assert top_up.data["tx_hash"] == more and top_up.amount == 1_000 * USDC
    assert into_aave.data["run_id"] == run.run_id
    assert into_aave.data["outcome"] == "completed"
    moves = into_aave.data["moves"]
    assert [m["from_protocol"] for m in moves] == ["moonwell", ""]
    assert [m["to_protocol"] for m in moves] == ["", "aave"]
    assert moves[0]["amount"] == moves[1]["amount"] == str(into_aave.amount)
    reward = events[5]
    assert (reward.data["token"], reward.amount) == (claimed[0].token, claimed[0].amount)
    withdrawal = events[6]
    assert withdrawal.amount == 500 * USDC and withdrawal.data["kind"] == "withdrawal"
    assert withdrawal.data["tx_hash"] == paid.tx_hash
    assert int(withdrawal.data["fee_amount"]) == paid.split.fee
    assert int(withdrawal.data["yield_amount"]) == paid.split.yield_ > 0
    assert int(withdrawal.data["received_amount"]) == 500 * USDC - paid.split.fee
    assert events[8].data == {"token": BASE_USDC, "transfer": True, "idle": "0"}
    assert {event.partner_id for event in events} == {owner.id}
    assert {event.wallet for event in events} == {wallet.address}


async def test_a_reactivation_is_announced_as_one(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 100 * USDC)
    await lifecycle.deactivate(owner.id, BASE, wallet.address, transfer=False)
    await lifecycle.activate(owner.id, BASE, activation(wallet.address, None))

    events = events_of(engine, wallet.id)
    assert kinds(events) == ["deposit_credited", "activated", "deactivated", "activated"]
    assert events[2].data["transfer"] is False
    assert [e.data["reactivation"] for e in events if e.kind == "activated"] == [False, True]


async def test_a_deposit_found_by_the_worker_and_then_announced_is_credited_once(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 100 * USDC)
    tx_hash = top_up_deposit(market, wallet.address, 40 * USDC)

    await lifecycle.refresh(BASE)  # the worker books it first
    await lifecycle.top_up(owner.id, BASE, wallet.address, tx_hash)
    await lifecycle.refresh(BASE)

    credited = [e for e in events_of(engine, wallet.id) if e.kind == "deposit_credited"]
    assert [e.data["tx_hash"] for e in credited][1:] == [tx_hash]
    assert credited[1].amount == 40 * USDC


async def test_a_run_killed_midway_is_announced_once_when_reconciled(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(
        lifecycle, engine, market, owner.id, 1_000 * USDC, protocols=("moonwell",)
    )
    await lifecycle.update_protocols(owner.id, BASE, wallet.address, ("aave",))
    crashing = CrashingChain(chains[BASE]).crash("supply", 1, "after")
    with pytest.raises(SimulatedCrash):
        await make_agent(engine, make_lifecycle(engine, with_chain(chains, crashing))).run(
            BASE, wallet.address, owner.id
        )
    assert kinds(events_of(engine, wallet.id)) == ["deposit_credited", "activated"]

    expire_leases(engine)
    await make_agent(engine, make_lifecycle(engine, chains)).reconcile()
    await make_agent(engine, make_lifecycle(engine, chains)).reconcile()

    events = events_of(engine, wallet.id)
    assert kinds(events) == ["deposit_credited", "activated", "run_completed"]
    recovered = events[-1].data
    assert recovered["outcome"] == "recovered"
    assert [(m["from_protocol"], m["to_protocol"]) for m in recovered["moves"]] == [
        ("moonwell", ""),
        ("", "aave"),
    ]


async def test_an_activation_killed_before_it_answered_is_announced_once(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    owner, _ = partner
    funded = fund(engine, market, owner.id, 300 * USDC)
    crashing = CrashingChain(chains[BASE]).crash("supply", 1, "after")
    with pytest.raises(SimulatedCrash):
        await make_lifecycle(engine, with_chain(chains, crashing)).activate(
            owner.id, BASE, activation(funded.address, funded.tx_hash)
        )
    expire_leases(engine)
    await make_lifecycle(engine, chains).reconcile()
    await make_lifecycle(engine, chains).reconcile()

    wallet = stored(engine, funded.address)
    assert kinds(events_of(engine, wallet.id)) == ["deposit_credited", "activated"]


async def test_a_refused_commit_records_no_event(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 100 * USDC)
    before = events_of(engine, wallet.id)
    stale = stored(engine, wallet.address)
    await lifecycle.deactivate(owner.id, BASE, wallet.address, transfer=False)
    after = events_of(engine, wallet.id)

    stale.status = stored(engine, wallet.address).status  # "deactivated", from a stale read
    with pytest.raises(Conflict):
        WalletStore(engine).commit(Journal(stale))
    assert events_of(engine, wallet.id) == after
    assert len(after) == len(before) + 1


async def test_events_page_by_cursor(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 100 * USDC)
    other = await activated(lifecycle, engine, market, owner.id, 50 * USDC, eoa=OTHER_EOA)
    store = EventStore(engine)
    every = store.after(wallet.id, 0, 100)

    assert store.after(wallet.id, every[0].id, 100) == every[1:]
    assert store.after(wallet.id, 0, 1) == every[:1]
    assert store.after(wallet.id, every[-1].id, 100) == []
    assert {e.wallet for e in store.after(other.id, 0, 100)} == {other.address}
    assert store.latest_id() == max(e.id for e in store.after(other.id, 0, 100))


async def _watch(
    store: EventStore, wallet_id: int, cursor: int, count: int, started: Callable[[], None]
) -> list[WalletEvent]:
    seen: list[WalletEvent] = []
    started()
    async for event in store.watch(wallet_id, cursor):
        seen.append(event)
        if len(seen) == count:
            break
    return seen


@pytest.mark.parametrize("notified", [True, False], ids=["same-process", "other-process"])
async def test_a_watch_replays_then_follows_commits_of_any_thread_or_process(
    engine: Engine,
    market: SimulatedMarket,
    chains: Chains,
    partner: PartnerKey,
    notified: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Same process: the notifier wakes the watch at once (its poll is 30 s). Another
    process (its commits notify a signal of their own): the poll finds the events."""
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 100 * USDC)
    replayed = events_of(engine, wallet.id)
    watched = EventStore(engine, poll_seconds=30 if notified else 0.05)
    if not notified:
        elsewhere = EventSignal()
        monkeypatch.setattr(wallet_storage, "signal_for", lambda engine: elsewhere)
    ready = threading.Event()
    tx_hash = top_up_deposit(market, wallet.address, 7 * USDC)

    def write() -> None:
        ready.wait(5)
        asyncio.run(make_lifecycle(engine, chains).top_up(owner.id, BASE, wallet.address, tx_hash))

    thread = threading.Thread(target=write)
    thread.start()
    seen = await asyncio.wait_for(
        _watch(watched, wallet.id, 0, len(replayed) + 1, ready.set), timeout=20
    )
    thread.join()

    assert seen[: len(replayed)] == replayed
    assert seen[-1].kind == "deposit_credited" and seen[-1].data["tx_hash"] == tx_hash


async def test_closing_the_store_ends_its_watches(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    owner, _ = partner
    wallet = await activated(make_lifecycle(engine, chains), engine, market, owner.id, USDC)
    store = EventStore(engine, poll_seconds=30)

    async def drain() -> list[Any]:
        return [event async for event in store.watch(wallet.id, 0)]

    task = asyncio.create_task(drain())
    await asyncio.sleep(0.1)
    store.close()
    assert [e.kind for e in await asyncio.wait_for(task, timeout=5)] == [
        "deposit_credited",
        "activated",
    ]


async def test_event_ids_follow_commit_order(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    """A transaction that took an event id and has not committed holds back the next
    one (PostgreSQL: the advisory lock; SQLite: its single writer), so a watcher that
    moved past id N never finds an id below N appearing later."""
    owner, _ = partner
    wallet = await activated(make_lifecycle(engine, chains), engine, market, owner.id, USDC)
    draft = EventDraft("withdrawn", wallet.id, owner.id, BASE, wallet.address, 1, {})
    first = Session(engine)
    record_events(first, [draft])
    first_id = max(e.id for e in events_of_session(first, wallet.id))
    second_ids: list[int] = []

    def second() -> None:
        with Session(engine) as session:
            record_events(session, [draft])
            second_ids.append(max(e.id for e in events_of_session(session, wallet.id)))
            session.commit()

    thread = threading.Thread(target=second)
    thread.start()
    thread.join(0.5)
    held_back = thread.is_alive()
    first.commit()
    first.close()
    thread.join(30)

    assert held_back
    assert second_ids and second_ids[0] > first_id
    assert [e.id for e in events_of(engine, wallet.id)][-2:] == [first_id, second_ids[0]]


def events_of_session(session: Session, wallet_id: int) -> list[WalletEvent]:
    rows = session.execute(select(WalletEventRow).where(col(WalletEventRow.wallet_id) == wallet_id))
    return [event_of(row) for row in rows.scalars()]
