"""Wallet events: recording them (one commit each), delivering them to a webhook receiver
on 127.0.0.1 (an aiohttp server in the same process), and how soon a WatchWallet feed of
the same process sees a commit. SQLite by default; ``BENCH_STORAGE=postgresql`` with
``YIELDAGENT_TEST_DATABASE_URL`` runs it on a throwaway PostgreSQL schema instead."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from aiohttp import web
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlmodel import Session

from yieldagent.domain.books.events import EventDraft
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.books.wallets import Journal, Wallet
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.events import EventStore, record_events, signal_for
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.wallets import WalletStore
from yieldagent.storage.webhooks import WebhookStore
from yieldagent.webhooks.admin import set_webhook
from yieldagent.webhooks.delivery import Deliverer, DeliverySettings
from yieldagent.webhooks.destinations import DestinationPolicy
from yieldagent.webhooks.sealing import load_box

WALLETS = 50
EVENTS_PER_WALLET = 10


@contextmanager
def _database(directory: Path) -> Iterator[str]:
    postgres = os.environ.get("YIELDAGENT_TEST_DATABASE_URL")
    if os.environ.get("BENCH_STORAGE") != "postgresql" or not postgres:
        yield f"sqlite:///{directory / 'events.db'}"
        return
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    base = make_url(postgres).set(drivername="postgresql+psycopg")
    admin = create_engine(base)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        url = base.update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def _wallets(engine: Engine, partner_id: int) -> list[Wallet]:
    now = datetime.now(UTC)
    created = []
    for n in range(1, WALLETS + 1):
        wallet = Wallet(
            0, 8453, f"0x{n:040x}", f"0x{n + 10_000:040x}", partner_id,
            WalletStatus.ACTIVATED, "0x" + "0" * 40, ("aave",), Constraints(), 0, {}, 0, 0.0,
            now, False, now, None, None,
        )  # fmt: skip
        created.append(WalletStore(engine).create(Journal(wallet)))
    return created


def _record(engine: Engine, wallet: Wallet, amount: int, stamps: list[float] | None = None) -> None:
    """One event in one commit (with its delivery row when there is a webhook), then the
    in-process notice, as ``WalletStore.commit`` does; ``stamps`` gets the commit time."""
    draft = EventDraft("withdrawn", wallet.id, wallet.partner_id, 8453, wallet.address, amount, {})
    with Session(engine) as session:
        record_events(session, [draft])
        session.commit()
    if stamps is not None:
        stamps.append(time.perf_counter())
    signal_for(engine).notify()


async def _record_and_deliver(
    engine: Engine, directory: Path, wallets: list[Wallet]
) -> tuple[float, float, int]:
    """Milliseconds per recorded event (one commit each, with its delivery row), seconds
    to deliver them all, and how many posts the receiver accepted."""
    received = 0

    async def accept(request: web.Request) -> web.Response:
        nonlocal received
        await request.read()
        received += 1
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/hooks", accept)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    box = load_box(None, directory)
    local = DestinationPolicy(allow_loopback=True)  # the receiver runs on this machine
    set_webhook(WebhookStore(engine), box, "bench", f"http://127.0.0.1:{port}/hooks", local)
    try:
        start = time.perf_counter()
        for amount in range(EVENTS_PER_WALLET):
            for wallet in wallets:
                _record(engine, wallet, amount)
        record_ms = (time.perf_counter() - start) / (len(wallets) * EVENTS_PER_WALLET) * 1000
        settings = DeliverySettings(batch=len(wallets), rounds=10**6, destinations=local)
        deliverer = Deliverer(WebhookStore(engine), box, settings)
        start = time.perf_counter()
        await deliverer.deliver_due()
        return record_ms, time.perf_counter() - start, received
    finally:
        await runner.cleanup()


async def _watch_latency(engine: Engine, wallet: Wallet) -> list[float]:
    store = EventStore(engine, poll_seconds=30)  # only the in-process notice wakes it
    cursor = store.latest_id()
    committed: list[float] = []
    seen: list[float] = []

    async def write() -> None:
        for amount in range(50):
            await asyncio.sleep(0.005)
            await asyncio.to_thread(_record, engine, wallet, amount, committed)

    writer = asyncio.create_task(write())
    async for _ in store.watch(wallet.id, cursor):
        seen.append(time.perf_counter())
        if len(seen) == 50:
            break
    store.close()
    await writer
    return [s - c for s, c in zip(seen, committed, strict=True)]


def main() -> None:
    with tempfile.TemporaryDirectory() as name, _database(Path(name)) as url:
        directory = Path(name)
        engine = create_db_engine(url)
        migrate(engine)
        partner, _ = PartnerStore(engine).create("bench", PERMISSIONS)
        wallets = _wallets(engine, partner.id)
        record_ms, seconds, delivered = asyncio.run(_record_and_deliver(engine, directory, wallets))
        latencies = asyncio.run(_watch_latency(engine, wallets[0]))
        engine.dispose()
    print(
        json.dumps(
            {
                "benchmark": "events",
                "storage": make_url(url).get_backend_name(),
                "record_event_commit_ms": round(record_ms, 2),
                "webhook_posts": delivered,
                "webhook_posts_per_second": round(delivered / seconds),
                "watch_latency_median_ms": round(statistics.median(latencies) * 1000, 2),
                "watch_latency_max_ms": round(max(latencies) * 1000, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
