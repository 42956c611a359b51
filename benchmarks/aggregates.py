"""Aggregates: ``/stats``, ``/tokens`` and the catalog's TVL and APR at 100 and at 100,000
wallets, and what keeping the chain totals adds to a ledger commit.

Wallets (with their deposits and transactions) are bulk-inserted with SQLAlchemy Core, in
a mix of states (activated, running, blocked, emergency, deactivated) and allocations over
Base's four USDC protocols; then the totals are rebuilt from them (``storage.aggregates.
rebuild``, what migration 0010 does; its time is printed too). Each figure is the time of
one call of the gRPC servicer method (proto reply included, no network):

- ``stats_ms``: ``StatsService.GetStats``, from the totals.
- ``stats_full_scan_ms``: the statistics the way they were computed before the totals
  (every wallet and every deposit read, as ``Reports.statistics`` did): the "before".
- ``tokens_ms``: ``CatalogService.ListTokens`` (the token balances), from the totals.
- ``protocols_ms``: ``CatalogService.ListProtocols`` for Base USDC: each protocol's TVL and
  APR, from the simulated chain's pools (simulated time running, so each call projects
  the pools afresh); it reads no wallet at any size.
- ``commit_ms``: ``WalletStore.commit`` of a valuation (new idle, allocation and APR, one
  transaction record), with the totals kept (``after``) and with the hook switched off
  (``before``: no totals computed or written), alternated in blocks in the same run.

Sizes come from ``BENCH_AGGREGATES_WALLETS`` (default ``100,100000``); SQLite always,
PostgreSQL too when ``YIELDAGENT_TEST_DATABASE_URL`` is set (``BENCH_STORAGE`` keeps one).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics as stats
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from unittest import mock

from sqlalchemy import Engine, insert, text

from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.composition.chains import simulated_chains
from yieldagent.domain.books.aggregates import Totals
from yieldagent.domain.books.effects import recompute
from yieldagent.domain.books.history import Reports, Statistics, percentages
from yieldagent.domain.books.wallet_states import ACTIVE, WalletStatus
from yieldagent.domain.books.wallets import DepositRecord, Journal, TransactionRecord
from yieldagent.domain.catalog import Catalog
from yieldagent.domain.constraints import Constraints
from yieldagent.servicers.catalog import CatalogServicer
from yieldagent.servicers.stats import StatsServicer
from yieldagent.storage.aggregates import replace_totals, wallet_facts
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.simulation import SimulationStore
from yieldagent.storage.tables import DepositRow, TransactionRow, WalletRow, WalletScheduleRow
from yieldagent.storage.wallets import WalletStore
from yieldagent.v1 import catalog_pb2, stats_pb2

BASE = 8453
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
PROTOCOLS = ("aave", "compound", "moonwell", "morpho_gauntlet_usdc_prime")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
STATES = [WalletStatus.ACTIVATED] * 16 + [
    WalletStatus.RUNNING,
    WalletStatus.BLOCKED,
    WalletStatus.EMERGENCY,
    WalletStatus.DEACTIVATED,
]


def _emit(**figures: object) -> None:
    print(json.dumps({"benchmark": "aggregates", **figures}), flush=True)


def populate(engine: Engine, wallets: int, seed: int = 7) -> None:
    """``wallets`` wallets on Base USDC with 1–3 deposits and 2 transactions each, and the
    chain totals rebuilt from them."""
    rng = random.Random(seed)
    partner, _ = PartnerStore(engine).create("bench", frozenset({"wallets"}))
    rows, deposits, transactions = [], [], []
    for i in range(wallets):
        address = f"0x{i + 1:040x}"
        status = STATES[i % len(STATES)]
        placed = rng.sample(PROTOCOLS, rng.randint(0, 4))
        allocation = {p: rng.randint(0, 10**12) for p in placed}
        if status == WalletStatus.DEACTIVATED:
            allocation = {}
        rows.append(
            {
                "id": i + 1,
                "chain_id": BASE,
                "address": address,
                "eoa": address,
                "partner_id": partner.id,
                "status": str(status),
                "token": USDC,
                "selected_protocols": json.dumps(PROTOCOLS),
                "constraints": Constraints().to_json(),
                "principal": 10**9,
                "allocation": json.dumps({p: str(a) for p, a in allocation.items()}),
                "idle": rng.randint(0, 10**9),
                "current_apr": rng.uniform(0, 12),
                "valued_at": T0,
                "is_staked": False,
                "activation_date": T0,
                "version": 0,
                "created_at": T0,
                "updated_at": T0,
            }
        )
        for n in range(rng.randint(1, 3)):
            deposits.append(
                {
                    "wallet_id": i + 1,
                    "chain_id": BASE,
                    "token": USDC,
                    "amount": rng.randint(1, 10**12),
                    "tx_hash": f"0x{i:032x}{n:032x}",
                    "log_index": 0,
                    "block_number": n,
                    "date": T0 + timedelta(days=n),
                }
            )
        for n in range(2):
            transactions.append(
                {
                    "wallet_id": i + 1,
                    "action": "deposit",
                    "status": "approved",
                    "token": USDC,
                    "amount": 10**9,
                    "tx_hash": f"0x{i:032x}{n:032x}",
                    "protocol": "",
                    "log_index": 0,
                    "date": T0 + timedelta(days=n),
                }
            )
    schedule = [
        {"wallet_id": row["id"], "active": row["status"] == "activated", "next_run_at": 0.0}
        for row in rows
    ]
    with engine.begin() as connection:
        for table, items in (
            (WalletRow, rows),
            (WalletScheduleRow, schedule),
            (DepositRow, deposits),
            (TransactionRow, transactions),
        ):
            for start in range(0, len(items), 10_000):
                connection.execute(insert(table), items[start : start + 10_000])
    if engine.dialect.name == "postgresql":
        with engine.begin() as connection:
            connection.execute(text("SELECT setval('wallets_id_seq', :n)"), {"n": wallets})
            connection.execute(text("ANALYZE"))


def full_scan_statistics(store: WalletStore, catalog: Catalog, chain_id: int) -> Statistics:
    """The statistics as ``Reports.statistics`` computed them before the chain totals:
    every wallet and every deposit of the chain read and summed (the "before")."""
    from yieldagent.domain.books.history import ProtocolShare, Share

    chain = catalog.chain(chain_id)
    tokens = {t.address: t for t in chain.tokens}
    wallets = [w for w in store.wallets(chain_id) if w.token in tokens]
    active = [w for w in wallets if w.status in ACTIVE]

    def whole(address: str, amount: int) -> float:
        return float(Decimal(amount) / 10 ** tokens[address].decimals)

    def usd(address: str, amount: int) -> float:
        return whole(address, amount) * tokens[address].price_usd

    held = [w for w in wallets if w.status != WalletStatus.DEACTIVATED]
    all_deposits = store.all_deposits(chain_id)
    first: dict[int, DepositRecord] = {}
    for wallet_id, deposit in all_deposits:
        first.setdefault(wallet_id, deposit)
    first_deposits: dict[str, int] = defaultdict(int)
    for deposit in first.values():
        if deposit.token in tokens:
            first_deposits[deposit.token] += deposit.amount
    current: dict[str, int] = defaultdict(int)
    by_protocol: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for wallet in held:
        current[wallet.token] += wallet.idle + sum(wallet.positions.values())
        for protocol, amount in wallet.positions.items():
            by_protocol[protocol][wallet.token] += amount

    def shares(amounts: Mapping[str, int]) -> list[Share]:
        names = sorted(amounts)
        values = [usd(t, amounts[t]) for t in names]
        return [
            Share(tokens[t].symbol, whole(t, amounts[t]), pct)
            for t, pct in zip(names, percentages(values), strict=True)
        ]

    names = sorted(by_protocol)
    protocol_usd = [sum(usd(t, a) for t, a in by_protocol[p].items()) for p in names]
    return Statistics(
        total_balance_usd=sum(usd(t, a) for t, a in current.items()),
        total_deposits_usd=sum(
            usd(d.token, d.amount) for _, d in all_deposits if d.token in tokens
        ),
        total_users=len(active),
        total_transactions=store.count_transactions(chain_id),
        total_apr=sum(w.current_apr for w in active) / len(active) if active else 0.0,
        initial_deposits=shares(first_deposits),
        current_tokens=shares(current),
        protocols=[
            ProtocolShare(name, shares(by_protocol[name]), pct)
            for name, pct in zip(names, percentages(protocol_usd), strict=True)
        ],
    )


def per_call_ms(
    call: Callable[[], Any], budget_seconds: float = 1.0, most: int = 500, least: int = 3
) -> float:
    """The median time of one call, in ms, over as many calls as fit the budget (at least
    ``least``, after one warm-up call when ``least`` > 1)."""
    if least > 1:
        call()
    times: list[float] = []
    spent = 0.0
    while len(times) < most and (spent < budget_seconds or len(times) < least):
        start = time.perf_counter()
        call()
        elapsed = time.perf_counter() - start
        times.append(elapsed)
        spent += elapsed
    return round(stats.median(times) * 1000, 3)


def _nothing_to_do(*args: object) -> None:
    return None


def _no_change(*args: object) -> Totals:
    return Totals()


@contextmanager
def totals_switched_off() -> Iterator[None]:
    """``WalletStore.commit`` without the chain totals: nothing computed, nothing applied
    (the standing is still read: the same query reads the version the commit checks)."""
    with (
        mock.patch("yieldagent.domain.books.effects.changes", new=_no_change),
        mock.patch("yieldagent.storage.journals.apply_changes", new=_nothing_to_do),
    ):
        yield


def commit_costs(
    engine: Engine, wallets: int, rounds: int = 6, per_round: int = 50
) -> dict[str, float]:
    """ms per valuation commit, with the totals kept and switched off, alternated."""
    store = WalletStore(engine)
    rng = random.Random(11)
    times: dict[str, list[float]] = {"before": [], "after": []}
    for n in range(rounds):
        for label in ("after", "before") if n % 2 else ("before", "after"):
            chosen = rng.sample(range(1, wallets + 1), min(per_round, wallets))
            loaded = [store.get_by_id(i) for i in chosen]
            with totals_switched_off() if label == "before" else _nothing():
                start = time.perf_counter()
                for wallet in loaded:
                    assert wallet is not None
                    wallet.idle += 1
                    wallet.positions = {"aave": rng.randint(0, 10**12), "compound": 5}
                    wallet.current_apr = rng.uniform(0, 12)
                    record = TransactionRecord(
                        "deposit", USDC, 1, f"0x{rng.getrandbits(256):064x}", T0
                    )
                    store.commit(Journal(wallet, transactions=[record]))
                times[label].append((time.perf_counter() - start) / len(loaded))
    return {label: round(stats.median(values) * 1000, 3) for label, values in times.items()}


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def measure(url: str, label: str, wallets: int) -> None:
    engine = create_db_engine(url)
    migrate(engine)
    catalog = load_catalog()
    market = SimulatedMarket(SimulationStore(engine), catalog, 7, speed=1.0)
    market.start()
    chains = simulated_chains(market, catalog)
    start = time.perf_counter()
    populate(engine, wallets)
    inserted = time.perf_counter() - start
    start = time.perf_counter()
    with engine.begin() as connection:
        replace_totals(connection, recompute(wallet_facts(connection)))
    rebuilt = time.perf_counter() - start
    store = WalletStore(engine)
    reports = Reports(store, chains, catalog)
    stats_servicer = StatsServicer(reports)
    catalog_servicer = CatalogServicer(catalog, chains, holdings=reports.holdings)
    loop = asyncio.new_event_loop()

    def run(coroutine: Any) -> Any:
        return loop.run_until_complete(coroutine)

    figures = {
        "stats_ms": per_call_ms(
            lambda: run(stats_servicer.GetStats(stats_pb2.GetStatsRequest(chain_id=BASE), None))
        ),
        "tokens_ms": per_call_ms(
            lambda: run(
                catalog_servicer.ListTokens(catalog_pb2.ListTokensRequest(chain_id=BASE), None)
            )
        ),
        "protocols_ms": per_call_ms(
            lambda: run(
                catalog_servicer.ListProtocols(
                    catalog_pb2.ListProtocolsRequest(chain_id=BASE, token=USDC),
                    None,
                )
            )
        ),
        "stats_full_scan_ms": per_call_ms(
            lambda: full_scan_statistics(store, catalog, BASE), budget_seconds=3.0, most=20, least=1
        ),
    }
    loop.close()
    commit = commit_costs(engine, wallets)
    _emit(
        storage=label,
        wallets=wallets,
        **figures,
        full_scan_over_totals=round(figures["stats_full_scan_ms"] / figures["stats_ms"], 1),
        commit_ms_before=commit["before"],
        commit_ms_after=commit["after"],
        commit_after_over_before=round(commit["after"] / commit["before"], 2),
        insert_seconds=round(inserted, 1),
        rebuild_seconds=round(rebuilt, 2),
    )
    engine.dispose()


def main() -> None:
    sizes = [int(n) for n in os.environ.get("BENCH_AGGREGATES_WALLETS", "100,100000").split(",")]
    storage = os.environ.get("BENCH_STORAGE", "sqlite,postgresql").split(",")
    postgres = os.environ.get("YIELDAGENT_TEST_DATABASE_URL") if "postgresql" in storage else None
    for wallets in sizes:
        if "sqlite" in storage:
            with tempfile.TemporaryDirectory() as directory:
                measure(f"sqlite:///{Path(directory) / 'aggregates.db'}", "sqlite", wallets)
        if postgres:
            engine = create_db_engine(postgres)
            with engine.begin() as connection:
                connection.execute(text("DROP SCHEMA IF EXISTS bench_aggregates CASCADE"))
                connection.execute(text("CREATE SCHEMA bench_aggregates"))
            engine.dispose()
            separator = "&" if "?" in postgres else "?"
            url = f"{postgres}{separator}options=-csearch_path%3Dbench_aggregates"
            measure(url, "postgresql", wallets)
            engine = create_db_engine(postgres)
            with engine.begin() as connection:
                connection.execute(text("DROP SCHEMA IF EXISTS bench_aggregates CASCADE"))
            engine.dispose()


if __name__ == "__main__":
    main()
