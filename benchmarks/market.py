"""The simulated market: rate-impact quotes per second, advancing 50 pools by a day, and
supplies one by one against supplies in batches.

Advancing is measured twice: the pure engine alone, and through storage (the
simulated world in SQLite, and in PostgreSQL when YIELDAGENT_TEST_DATABASE_URL is set).
Supplies are measured through storage: 1,000 for 500 holders one by one, then 1,000 more
in ``send_many`` batches of 500, in the same world.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from sqlalchemy import text

from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.genesis import genesis_pool
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.chain.simulated.pools import advance, copy_pool, quote_of
from yieldagent.domain.ports.chain import ChainKind, Send
from yieldagent.simulated_world.clock import SimClock
from yieldagent.simulated_world.state import MarketError, PoolState
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.simulation import SimulationStore

GENESIS = 1_767_225_600
DAY = 86_400
BASE = 8453
SEED = 7


def _emit(**figures: object) -> None:
    print(json.dumps({"benchmark": "market", **figures}))


def _base_pools() -> list[PoolState]:
    catalog = load_catalog()
    [usdc] = catalog.chain(BASE).tokens
    return [genesis_pool(BASE, usdc, protocol, SEED, GENESIS) for protocol in usdc.protocols]


def fifty_pools() -> list[PoolState]:
    """50 pools: copies of Base's four kinds under distinct names."""
    base = _base_pools()
    return [
        replace(copy_pool(base[i % len(base)]), protocol=f"{base[i % len(base)].protocol}-{i}")
        for i in range(50)
    ]


def quotes_per_second() -> None:
    for pool in _base_pools():
        quote = quote_of(pool)
        amounts = [10**6 * (1 + i * 7919 % 5_000_000) for i in range(2000)]
        start = time.perf_counter()
        for amount in amounts:
            quote.apr(amount)
        elapsed = time.perf_counter() - start
        _emit(
            figure="apr_after_x_quotes_per_second",
            kind=pool.kind,
            markets=len(pool.markets),
            value=round(len(amounts) / elapsed),
        )


def advance_pure() -> None:
    pools = fifty_pools()
    start = time.perf_counter()
    for pool in pools:
        advance(pool, GENESIS + DAY, SEED)
    _emit(
        figure="advance_50_pools_one_day_seconds",
        storage="none (pure engine)",
        value=round(time.perf_counter() - start, 4),
    )


def advance_stored(url: str, label: str) -> None:
    engine = create_db_engine(url)
    migrate(engine)
    store = SimulationStore(engine)
    store.create_world(SEED, GENESIS, SimClock(GENESIS, float(GENESIS), 0.0), fifty_pools())
    market = SimulatedMarket(store, load_catalog(), SEED, 0.0, wall=lambda: float(GENESIS))
    market.start()
    start = time.perf_counter()
    market.advance(DAY)
    _emit(
        figure="advance_50_pools_one_day_seconds",
        storage=label,
        value=round(time.perf_counter() - start, 4),
    )
    engine.dispose()


def supplies_stored(url: str, label: str, holders: int = 500, sends: int = 1000) -> None:
    engine = create_db_engine(url)
    migrate(engine)
    market = SimulatedMarket(
        SimulationStore(engine), load_catalog(), SEED, 0.0, wall=lambda: float(GENESIS)
    )
    market.start()
    [usdc] = load_catalog().chain(BASE).tokens
    protocols = [protocol.name for protocol in usdc.protocols]
    addresses = [f"0x{i:040x}" for i in range(1, holders + 1)]
    for holder in addresses:
        market.deposit_from(BASE, usdc.address, holder, holder, 100 * 10**6)
    batch = [
        Send(
            ChainKind.SUPPLY,
            addresses[i % holders],
            protocols[i % len(protocols)],
            usdc.address,
            10**6,
        )
        for i in range(sends)
    ]
    start = time.perf_counter()
    for send in batch:
        market.supply(BASE, send.holder, send.protocol, send.token, send.amount)
    one_by_one = (time.perf_counter() - start) / sends
    start = time.perf_counter()
    mined = [
        row
        for first in range(0, sends, holders)
        for row in market.send_many(BASE, batch[first : first + holders])
    ]
    batched = (time.perf_counter() - start) / sends
    assert not any(isinstance(row, MarketError) for row in mined)
    for way, seconds in (("one by one", one_by_one), (f"send_many of {holders}", batched)):
        _emit(figure="supply_ms_per_send", storage=label, way=way, value=round(seconds * 1e3, 3))
    engine.dispose()


def main() -> None:
    quotes_per_second()
    advance_pure()
    with tempfile.TemporaryDirectory() as directory:
        advance_stored(f"sqlite:///{Path(directory) / 'market.db'}", "sqlite")
        supplies_stored(f"sqlite:///{Path(directory) / 'supplies.db'}", "sqlite")
    postgres = os.environ.get("YIELDAGENT_TEST_DATABASE_URL")
    if postgres:
        engine = create_db_engine(postgres)
        schema = "bench_market"
        with engine.begin() as connection:
            connection.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
            connection.execute(text(f"CREATE SCHEMA {schema}"))
        engine.dispose()
        separator = "&" if "?" in postgres else "?"
        advance_stored(f"{postgres}{separator}options=-csearch_path%3D{schema}", "postgresql")
        with engine.begin() as connection:
            connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
            connection.execute(text(f"CREATE SCHEMA {schema}"))
        supplies_stored(f"{postgres}{separator}options=-csearch_path%3D{schema}", "postgresql")
