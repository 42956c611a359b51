"""The module change store: a proposal and its events are stored once, however often and
by however many processes its range is read; resolutions clear it; the cursor only moves
forward."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine

from support.wallet_setup import BASE, OTHER_EOA, USDC, activated, make_lifecycle
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.books.events import MODULE_CHANGE_PROPOSED
from yieldagent.domain.books.module_changes import told
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.ports.credentials import Partner
from yieldagent.domain.ports.module_changes import APPLIED, CANCELLED, ChangeResolved, ModuleChange
from yieldagent.storage.events import EventStore
from yieldagent.storage.module_changes import ModuleChangeStore

PROPOSED = datetime(2026, 12, 1, 12, tzinfo=UTC)


def _change(block: int, change_id: str = "0x" + "01" * 32) -> ModuleChange:
    return ModuleChange(
        chain_id=BASE,
        module="0x" + "0a" * 20,
        change_id=change_id,
        kind="operator",
        subject="0x" + "0b" * 20,
        selector="",
        new_value="0x" + "0b" * 20,
        proposed_at=PROPOSED,
        effective_at=PROPOSED + timedelta(hours=48),
        block=block,
        log_index=3,
    )


def _events(engine: Engine, wallet_id: int) -> list[str]:
    return [
        e.data["change_id"]
        for e in EventStore(engine).after(wallet_id, 0, 100)
        if e.kind == MODULE_CHANGE_PROPOSED
    ]


async def test_a_range_read_twice_or_at_once_tells_each_proposal_once(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    first = await activated(lifecycle, engine, market, owner.id, 5 * USDC)
    second = await activated(lifecycle, engine, market, owner.id, 5 * USDC, eoa=OTHER_EOA)
    store = ModuleChangeStore(engine)
    assert store.cursor(BASE) is None
    assert [w.wallet_id for w in store.wallets_on(BASE)] == [first.id, second.id]
    assert store.wallets_on(1) == []
    proposal = told(_change(100), store.wallets_on(BASE))

    results: list[int] = []
    threads = [
        threading.Thread(target=lambda: results.append(store.record(BASE, [proposal], [], 101)))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [0, 1]
    assert store.record(BASE, [proposal], [], 101) == 0  # a restart reading it again
    assert _events(engine, first.id) == _events(engine, second.id) == [_change(100).change_id]
    assert store.pending(BASE) == [_change(100)] and store.pending(1) == []
    assert store.cursor(BASE) == 101

    store.record(BASE, [], [], 90)  # an older range read late never moves the cursor back
    assert store.cursor(BASE) == 101

    # Cancelled, then proposed again (the same id): pending once more, told again.
    store.record(BASE, [], [ChangeResolved(_change(100).change_id, CANCELLED, 150, 0)], 151)
    assert store.pending(BASE) == []
    again = told(_change(200), store.wallets_on(BASE))
    assert store.record(BASE, [again], [], 201) == 1
    assert store.pending(BASE) == [_change(200)]
    assert len(_events(engine, first.id)) == 2
    store.record(BASE, [], [ChangeResolved(_change(200).change_id, APPLIED, 250, 1)], 251)
    assert store.pending(BASE) == []
