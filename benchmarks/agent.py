"""The agent: optimizer solve time, and full rebalancing cycles over many wallets.

- Solve time of ``optimize`` for 5, 10 and 20 protocols (copies of Base's four pool
  kinds under distinct names) for 10,000 USDC, unconstrained and with ``min_protocols`` 3,
  and for 50 million USDC, which takes pools across their kinks.
- A cycle: every wallet is due, holds idle USDC, and the agent claims, plans and
  supplies each one (the first cycle moves funds; the second finds nothing to move).
  Sizes come from ``BENCH_WALLETS`` (default ``10000,100000``), on SQLite and, when
  ``YIELDAGENT_TEST_DATABASE_URL`` is set, on PostgreSQL. ``BENCH_STORAGE`` (``sqlite`` or
  ``postgresql``) keeps one of them; ``BENCH_CYCLES=1`` runs the first cycle only.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Engine, insert, text

from yieldagent.catalog import load_catalog
from yieldagent.chain.chains import simulated_chains
from yieldagent.chain.simulated.genesis import genesis_pool
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.chain.simulated.pools import copy_pool, quote_of
from yieldagent.clock import SYSTEM_CLOCK
from yieldagent.domain.agent import Agent, AgentSettings
from yieldagent.domain.allocation import Candidate
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.lifecycle import Lifecycle, Policy
from yieldagent.domain.optimizer import Costs, optimize
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.operations import OperationStore
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.runs import RunStore
from yieldagent.storage.simulation import SimulationStore
from yieldagent.storage.tables import SimBalanceRow, WalletRow
from yieldagent.storage.wallets import WalletStore

GENESIS = 1_767_225_600
BASE = 8453
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
PROTOCOLS = ("aave", "compound", "moonwell", "morpho_gauntlet_usdc_prime")
NEVER_AGAIN = 1e9
"""The agent's interval here: longer than any cycle, so that each wallet runs once per cycle
(an hour was shorter than PostgreSQL's 100,000-wallet cycle, which then re-ran its first
wallets before it ended)."""


def _emit(**figures: object) -> None:
    print(json.dumps({"benchmark": "agent", **figures}), flush=True)


def solve_times() -> None:
    catalog = load_catalog()
    [token] = catalog.chain(BASE).tokens
    base = [genesis_pool(BASE, token, p, 7, GENESIS) for p in token.protocols]
    costs = Costs(0.0054, 1.0, 6)
    for count in (5, 10, 20):
        pools = [replace(copy_pool(base[i % 4]), protocol=f"p{i}") for i in range(count)]
        candidates = [Candidate(p.protocol, quote_of(p)) for p in pools]
        for label, rules, usdc in (
            ("unconstrained", Constraints(), 10_000),
            ("min_protocols=3", Constraints(min_protocols=3), 10_000),
            # large enough to push pools across their rate models' kinks
            ("unconstrained, 50M USDC (kinked curves)", Constraints(), 50_000_000),
        ):
            runs = 10
            start = time.perf_counter()
            for i in range(runs):
                optimize({}, (usdc + i) * 10**6, candidates, rules, costs)
            _emit(
                figure="optimizer_solve_ms",
                protocols=count,
                rules=label,
                value=round((time.perf_counter() - start) / runs * 1000, 2),
            )


def _populate(engine: Engine, wallets: int) -> None:
    """``wallets`` activated wallets on Base, each holding 1,000 USDC idle, all due."""
    partner, _ = PartnerStore(engine).create("bench", frozenset({"wallets"}))
    now = datetime.fromtimestamp(GENESIS, UTC)
    rows, balances = [], []
    for i in range(wallets):
        address = f"0x{i + 1:040x}"
        rows.append(
            {
                "chain_id": BASE,
                "address": address,
                "eoa": address,
                "partner_id": partner.id,
                "status": "activated",
                "token": USDC,
                "selected_protocols": json.dumps(PROTOCOLS),
                "constraints": Constraints().to_json(),
                "principal": 1_000 * 10**6,
                "allocation": "{}",
                "idle": 1_000 * 10**6,
                "current_apr": 0.0,
                "valued_at": now,
                "is_staked": False,
                "activation_date": now,
                "version": 0,
                "next_run_at": 0.0,
                "created_at": now,
                "updated_at": now,
            }
        )
        balances.append(
            {"chain_id": BASE, "token": USDC, "holder": address, "amount": 1_000 * 10**6}
        )
    with engine.begin() as connection:
        for start in range(0, wallets, 5_000):
            connection.execute(insert(WalletRow), rows[start : start + 5_000])
            connection.execute(insert(SimBalanceRow), balances[start : start + 5_000])


async def _cycle(agent: Agent) -> tuple[int, float]:
    start = time.perf_counter()
    ran = 0
    while batch := await agent.run_due():
        ran += batch
    return ran, time.perf_counter() - start


def cycle(url: str, label: str, wallets: int, cycles: int = 2) -> None:
    engine = create_db_engine(url)
    migrate(engine)
    market = SimulatedMarket(
        SimulationStore(engine), load_catalog(), 7, 0.0, wall=lambda: float(GENESIS)
    )
    market.start()
    _populate(engine, wallets)
    chains = simulated_chains(market, load_catalog())
    policy = Policy(fee_bps=1000, max_deposit_usd=1e6, fee_collector="0x" + "fe" * 20)
    lifecycle = Lifecycle(
        WalletStore(engine), OperationStore(engine), chains, load_catalog(), policy, SYSTEM_CLOCK
    )
    agent = Agent(
        lifecycle,
        WalletStore(engine),
        RunStore(engine),
        AgentSettings(interval_seconds=NEVER_AGAIN, batch=500),
    )
    for which in ("first (places funds)", "second (nothing to move)")[:cycles]:
        with engine.begin() as connection:  # every wallet due now
            connection.execute(text("UPDATE wallets SET next_run_at = 0"))
        ran, seconds = asyncio.run(_cycle(agent))
        _emit(
            figure="rebalancing_cycle",
            storage=label,
            wallets=wallets,
            cycle=which,
            ran=ran,
            seconds=round(seconds, 1),
            wallets_per_second=round(ran / seconds, 1),
        )
    engine.dispose()


def main() -> None:
    solve_times()
    sizes = [int(n) for n in os.environ.get("BENCH_WALLETS", "10000,100000").split(",")]
    cycles = int(os.environ.get("BENCH_CYCLES", "2"))
    storage = os.environ.get("BENCH_STORAGE", "sqlite,postgresql").split(",")
    postgres = os.environ.get("YIELDAGENT_TEST_DATABASE_URL") if "postgresql" in storage else None
    for wallets in sizes:
        if "sqlite" in storage:
            with tempfile.TemporaryDirectory() as directory:
                cycle(f"sqlite:///{Path(directory) / 'agent.db'}", "sqlite", wallets, cycles)
        if postgres:
            engine = create_db_engine(postgres)
            with engine.begin() as connection:
                connection.execute(text("DROP SCHEMA IF EXISTS bench_agent CASCADE"))
                connection.execute(text("CREATE SCHEMA bench_agent"))
            engine.dispose()
            separator = "&" if "?" in postgres else "?"
            cycle(
                f"{postgres}{separator}options=-csearch_path%3Dbench_agent",
                "postgresql",
                wallets,
                cycles,
            )
