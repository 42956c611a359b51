"""Events past the retention are pruned with their webhook deliveries, in bounded batches,
on SQLite and PostgreSQL; a WatchWallet cursor from before the retention resumes at the
oldest event kept, and ids are never handed out again."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, Table, func, select, update

from support.wallet_setup import USDC, activated, make_lifecycle
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.composition.compose import PRUNE_BATCHES_PER_RUN, event_pruning
from yieldagent.domain.books.events import EventDraft
from yieldagent.domain.books.wallets import Wallet
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.ports.credentials import Partner
from yieldagent.observability.metrics import REGISTRY
from yieldagent.storage.events import EventStore, Pruned, record_events
from yieldagent.storage.tables import WalletEventRow, WebhookDeliveryRow
from yieldagent.storage.webhooks import WebhookStore

_events = WalletEventRow.__table__  # type: ignore[attr-defined]
_deliveries = WebhookDeliveryRow.__table__  # type: ignore[attr-defined]
NOW = datetime.now(UTC)
OLD = NOW - timedelta(days=40)
RETENTION = timedelta(days=30)


async def hooked_wallet(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], owner: Partner
) -> Wallet:
    """An activated wallet whose partner has a webhook (its events get deliveries)."""
    WebhookStore(engine).set(owner.id, "https://partner.example/hook", "sealed")
    return await activated(make_lifecycle(engine, chains), engine, market, owner.id, USDC)


def record(engine: Engine, wallet: Wallet, count: int, at: datetime | None = None) -> list[int]:
    """``count`` events of ``wallet``, stamped ``at`` (with their deliveries); their ids."""
    drafts = [
        EventDraft(
            "withdrawn", wallet.id, wallet.partner_id, wallet.chain_id, wallet.address, n, {}
        )
        for n in range(count)
    ]
    with engine.begin() as connection:
        record_events(connection, drafts)
        ids = list(
            connection.execute(
                select(_events.c.id).order_by(_events.c.id.desc()).limit(count)
            ).scalars()
        )[::-1]
        if at is not None:
            connection.execute(update(_events).where(_events.c.id.in_(ids)).values(created_at=at))
    return ids


def stamp(engine: Engine, at: datetime) -> None:
    """Stamps every event stored so far ``at``."""
    with engine.begin() as connection:
        connection.execute(update(_events).values(created_at=at))


def count(engine: Engine, table: Table) -> int:
    with engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(table)).scalar_one())


async def test_old_events_go_with_their_deliveries_a_batch_at_a_time(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    wallet = await hooked_wallet(engine, market, chains, partner[0])
    stamp(engine, OLD)  # the activation's two events
    record(engine, wallet, 5, OLD)
    kept = record(engine, wallet, 3)
    store = EventStore(engine)
    assert (count(engine, _events), count(engine, _deliveries)) == (10, 10)

    assert store.prune(NOW - RETENTION, 4) == Pruned(4, 4, more=True)
    assert store.prune(NOW - RETENTION, 4) == Pruned(3, 3, more=False)
    assert store.prune(NOW - RETENTION, 4) == Pruned(0, 0, more=False)

    assert [event.id for event in store.after(wallet.id, 0, 100)] == kept
    assert count(engine, _deliveries) == 3


async def test_a_cursor_from_before_the_retention_resumes_at_the_oldest_event_kept(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    """A client away longer than the retention reconnects with its last id: the stream
    replays from the oldest event still kept, with no sign of those pruned in between
    (ids are global, so a gap in them says nothing). Such a client re-reads the wallet."""
    wallet = await hooked_wallet(engine, market, chains, partner[0])
    seen = [event.id for event in EventStore(engine).after(wallet.id, 0, 10)]
    pruned = record(engine, wallet, 3)
    stamp(engine, OLD)
    kept = record(engine, wallet, 2)
    store = EventStore(engine, poll_seconds=0.05)
    assert store.prune(NOW - RETENTION, 100) == Pruned(5, 5, more=False)

    replayed = []
    async for event in store.watch(wallet.id, cursor=seen[-1]):
        replayed.append(event.id)
        if len(replayed) == len(kept):
            break
    assert replayed == kept and min(kept) > max(pruned)

    # Every event pruned: the ids go on from the last one handed out, never reused.
    stamp(engine, OLD)
    store.prune(NOW - RETENTION, 100)
    [new] = record(engine, wallet, 1)
    assert new > max(kept)
    assert store.after(wallet.id, max(pruned), 10)[0].id == new


async def test_the_pruning_job_works_a_backlog_off_in_bounded_runs(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    wallet = await hooked_wallet(engine, market, chains, partner[0])
    record(engine, wallet, PRUNE_BATCHES_PER_RUN + 8)
    stamp(engine, OLD)
    kept = record(engine, wallet, 2)
    before = REGISTRY.get_sample_value("yieldagent_pruned_rows_total", {"table": "wallet_events"})
    job = event_pruning(EventStore(engine), RETENTION.total_seconds(), batch=1)

    await job()  # one event per batch, PRUNE_BATCHES_PER_RUN batches
    assert count(engine, _events) == 2 + 8 + 2
    await job()
    await job()
    await asyncio.sleep(0)

    assert [event.id for event in EventStore(engine).after(wallet.id, 0, 100)] == kept
    after = REGISTRY.get_sample_value("yieldagent_pruned_rows_total", {"table": "wallet_events"})
    assert (after or 0) - (before or 0) == PRUNE_BATCHES_PER_RUN + 10
