"""The agent's rebalancing cycle over many wallets, on SQLite and PostgreSQL.

Every wallet is on Base, holds USDC (amounts vary from wallet to wallet, 500 to 1,500
USDC, so that no two wallets share a plan) and is due. The agent judges the pools by the
risk guards, as the service's does; ``BENCH_GUARDS=off`` runs it without them. Figures,
one JSON line each, with wallets/s and the statements and connection checkouts per run:

- ``first``: the cycle that places every wallet's idle funds (claims, plans, supplies,
  books each one), then ``no_move``: the next cycle, in which nothing needs to move.
  Sizes: ``BENCH_WALLETS`` (default ``500,2000``); ``BENCH_CYCLES=1`` skips ``no_move``.
  ``BENCH_CYCLE_ROUNDS`` rounds (default 3), each on fresh databases, the databases in
  turns; the figures are medians, and ``postgresql_vs_sqlite`` the median of the rounds'
  ratios.
- ``no_move (settled)``: the no-move cycle of a fleet placed directly in the database:
  every wallet holds its share of the pools' best allocation of the fleet's total, so no
  run moves. Sizes: ``BENCH_SETTLED`` on SQLite (default ``10000,100000``) and
  ``BENCH_SETTLED_POSTGRESQL`` (default ``10000``). A size measured on both is measured
  side by side: one fleet in each database, ``BENCH_SETTLED_ROUNDS`` cycles of each
  (default 5), the databases in turns; its wallets/s are each database's median, and
  ``postgresql_vs_sqlite`` the median of the rounds' ratios (each round's are listed in
  ``postgresql_vs_sqlite_rounds``): on shared machines a single cycle's figure moves by up
  to a third from run to run, SQLite's and PostgreSQL's independently.
- Ratios measured in the same run: ``linearity`` (wallets/s at the largest size over
  the smallest; 1.0 is linear cost), ``postgresql_vs_sqlite`` (SQLite's wallets/s over
  PostgreSQL's at the same size; the target is at most 1.5) and ``replicas`` (two
  processes on one settled fleet of ``BENCH_REPLICA_WALLETS``, default ``10000``, over
  one process, on PostgreSQL, the median of half as many rounds, rounded up; the target
  is at least 1.7).
- ``guards_cost``: the guarded cycle's wallets/s over the unguarded one's (the anchor),
  measured in turns in one run on SQLite, ``BENCH_GUARD_ROUNDS`` rounds (default 6): the
  first and no-move cycles of ``BENCH_GUARD_WALLETS`` (default ``2000``) and the settled
  fleet of ``BENCH_GUARD_SETTLED`` (default ``10000``). The target is at least 0.9.

SQLite always; PostgreSQL when ``YIELDAGENT_TEST_DATABASE_URL`` is set (in a schema
``bench_agent``). ``BENCH_STORAGE`` (``sqlite`` or ``postgresql``) keeps one.
"""

from __future__ import annotations

import asyncio
import gc
import json
import multiprocessing
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event, insert, text

from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.chain.simulated.pools import deposit, quote_of
from yieldagent.composition.chains import simulated_chains
from yieldagent.composition.clock import SYSTEM_CLOCK
from yieldagent.domain.agent.runs import Agent
from yieldagent.domain.agent.scheduler import AgentSettings
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.market.curves import Candidate
from yieldagent.domain.money.lifecycle import Lifecycle, Policy
from yieldagent.domain.optimizer.search import allocate
from yieldagent.domain.risk.settings import RiskSettings
from yieldagent.domain.risk.survey import RiskSurvey
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.operations import OperationStore
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.risk import RiskStore
from yieldagent.storage.runs import RunStore
from yieldagent.storage.simulation import SimulationStore
from yieldagent.storage.tables import (
    SimBalanceRow,
    SimPositionRow,
    WalletRow,
    WalletScheduleRow,
)
from yieldagent.storage.wallets import WalletStore

GENESIS = 1_767_225_600
BASE = 8453
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
PROTOCOLS = ("aave", "compound", "moonwell", "morpho_gauntlet_usdc_prime")
NEVER_AGAIN = 1e9
"""The agent's interval here: longer than any cycle, so that each wallet runs once per cycle
(an hour is shorter than PostgreSQL's 100,000-wallet cycle, which would run its first
wallets again before it ends)."""
BATCH = 500
SETTLED = "no_move (settled)"


def _emit(**figures: object) -> None:
    print(json.dumps({"benchmark": "agent", **figures}), flush=True)


def _amount(i: int) -> int:
    """Wallet ``i``'s USDC: 500 to 1,500, no two neighbours alike."""
    return (500 + (i * 7919) % 1000) * 10**6 + i


def _wallet_rows(wallets: int, partner_id: int) -> list[dict[str, Any]]:
    now = datetime.fromtimestamp(GENESIS, UTC)
    return [
        {
            "id": i + 1,
            "chain_id": BASE,
            "address": f"0x{i + 1:040x}",
            "eoa": f"0x{i + 1:040x}",
            "partner_id": partner_id,
            "status": "activated",
            "token": USDC,
            "selected_protocols": json.dumps(PROTOCOLS),
            "constraints": Constraints().to_json(),
            "principal": _amount(i),
            "allocation": "{}",
            "idle": _amount(i),
            "current_apr": 0.0,
            "valued_at": now,
            "is_staked": False,
            "activation_date": now,
            "version": 0,
            "created_at": now,
            "updated_at": now,
        }
        for i in range(wallets)
    ]


def _populate(engine: Engine, market: SimulatedMarket, wallets: int, settled: bool) -> None:
    """``wallets`` activated, due wallets on Base. Not ``settled``: each holds its USDC
    idle. ``settled``: the fleet's total is placed as the optimizer places it over the
    four pools (so their marginal rates after impact are equal) and each wallet holds its
    pro-rata share of every position: no single wallet gains by moving."""
    partner, _ = PartnerStore(engine).create("bench", frozenset({"wallets"}))
    rows = _wallet_rows(wallets, partner.id or 0)
    balances: list[dict[str, Any]] = []
    positions: list[dict[str, Any]] = []
    if not settled:
        balances = [
            {"chain_id": BASE, "token": USDC, "holder": row["address"], "amount": row["idle"]}
            for row in rows
        ]
    else:
        total = sum(row["idle"] for row in rows)
        with market.store.writing() as unit:
            pools = [p for p in unit.pools(BASE, USDC) if p.protocol in PROTOCOLS]
            candidates = [Candidate(p.protocol, quote_of(p)) for p in pools]
            target = allocate(total, candidates, Constraints())
            for pool in pools:
                if not target.get(pool.protocol):
                    continue
                scaled = deposit(pool, target[pool.protocol])
                unit.save_pool(pool)
                pool_id = unit.pool_id(pool)
                for row in rows:
                    positions.append(
                        {
                            "pool_id": pool_id,
                            "holder": row["address"],
                            "scaled": scaled * row["idle"] // total,
                            "reward_snapshot": pool.reward_index,
                            "rewards_owed": 0,
                        }
                    )
        for row in rows:
            share = {p: str(a * row["idle"] // total) for p, a in target.items() if a}
            row.update(allocation=json.dumps(share), idle=0)
    with engine.begin() as connection:
        for start in range(0, wallets, 5_000):
            batch = rows[start : start + 5_000]
            connection.execute(insert(WalletRow), batch)
            schedule = [{"wallet_id": r["id"], "active": True, "next_run_at": 0.0} for r in batch]
            connection.execute(insert(WalletScheduleRow), schedule)
            if balances:
                connection.execute(insert(SimBalanceRow), balances[start : start + 5_000])
        for start in range(0, len(positions), 5_000):
            connection.execute(insert(SimPositionRow), positions[start : start + 5_000])
    with engine.begin() as connection:
        # Statistics, as a live database has them (PostgreSQL's autovacuum gathers them once
        # a tenth of a table has changed): without them PostgreSQL plans the claim of a
        # fleet loaded a moment ago as a scan and sort of every due row.
        connection.execute(text("ANALYZE"))


def _counting(engine: Engine) -> dict[str, int]:
    """Counts of the statements sent and the connections checked out through ``engine``
    (a listener stays for the engine's life: the caller resets the counts)."""
    counts = {"statements": 0, "checkouts": 0}

    def statement(*_: Any) -> None:
        counts["statements"] += 1

    def checkout(*_: Any) -> None:
        counts["checkouts"] += 1

    event.listen(engine, "before_cursor_execute", statement)
    event.listen(engine, "checkout", checkout)
    return counts


class _World:
    """A fresh database with the simulated market and an agent on it (``guarded``, or as
    ``BENCH_GUARDS`` says)."""

    def __init__(self, url: str, guarded: bool | None = None) -> None:
        self.engine = create_db_engine(url)
        migrate(self.engine)
        self.market = SimulatedMarket(
            SimulationStore(self.engine), load_catalog(), 7, 0.0, wall=lambda: float(GENESIS)
        )
        self.market.start()
        self.agent = _agent(self.engine, self.market, guarded)
        self.counts = _counting(self.engine)

    def make_due(self) -> None:
        with self.engine.begin() as connection:
            connection.execute(text("UPDATE wallet_schedule SET next_run_at = 0"))

    def cycle(self, agent: Agent | None = None) -> dict[str, Any]:
        """Runs a cycle of ``agent`` (the world's own by default) to the end; its figures."""
        counts = self.counts
        counts.update(statements=0, checkouts=0)
        gc.collect()  # the last cycle's garbage is not this one's to collect
        ran, seconds = asyncio.run(_cycle(agent or self.agent))
        counts = dict(counts)
        with self.engine.connect() as connection:
            outcomes: dict[str, int] = dict(
                connection.execute(
                    text("SELECT last_outcome, count(*) FROM wallet_schedule GROUP BY last_outcome")
                ).all()
            )
        return {
            "ran": ran,
            "seconds": round(seconds, 2),
            "wallets_per_second": round(ran / seconds, 1),
            "statements_per_run": round(counts["statements"] / max(ran, 1), 2),
            "checkouts_per_run": round(counts["checkouts"] / max(ran, 1), 2),
            "last_outcomes": outcomes,
        }


def _agent(engine: Engine, market: SimulatedMarket, guarded: bool | None = None) -> Agent:
    """The service's agent on ``engine``'s fleet; ``guarded`` by default unless
    ``BENCH_GUARDS=off``."""
    chains = simulated_chains(market, load_catalog())
    policy = Policy(fee_bps=1000, max_deposit_usd=1e6, fee_collector="0x" + "fe" * 20)
    if guarded is None:
        guarded = os.environ.get("BENCH_GUARDS", "on") != "off"
    # the guards, as the service has them
    risk = RiskSurvey(RiskStore(engine), RiskSettings()) if guarded else None
    lifecycle = Lifecycle(
        WalletStore(engine),
        OperationStore(engine),
        chains,
        load_catalog(),
        policy,
        SYSTEM_CLOCK,
        risk=risk,
    )
    return Agent(
        lifecycle,
        WalletStore(engine),
        RunStore(engine),
        AgentSettings(interval_seconds=NEVER_AGAIN, batch=BATCH),
        risk=risk,
    )


async def _cycle(agent: Agent) -> tuple[int, float]:
    start = time.perf_counter()
    ran = await agent.run_cycle()
    return ran, time.perf_counter() - start


def cycles(url: str, label: str, wallets: int, cycles: int, number: int) -> dict[str, float]:
    """The first cycle and the no-move cycle after it, of round ``number``; wallets/s of
    each."""
    world = _World(url)
    try:
        _populate(world.engine, world.market, wallets, settled=False)
        rates = {}
        for which in ("first", "no_move")[:cycles]:
            world.make_due()
            figures = world.cycle() | {"round": number}
            _emit(figure="cycle", storage=label, wallets=wallets, cycle=which, **figures)
            rates[which] = figures["wallets_per_second"]
        return rates
    finally:
        world.engine.dispose()


def settled_cycle(url: str, label: str, wallets: int) -> float:
    """The no-move cycle of a fleet placed directly; its wallets/s."""
    world = _World(url)
    try:
        _populate(world.engine, world.market, wallets, settled=True)
        figures = world.cycle()
        _emit(figure="cycle", storage=label, wallets=wallets, cycle=SETTLED, **figures)
        return float(figures["wallets_per_second"])
    finally:
        world.engine.dispose()


def settled_rounds(urls: dict[str, str], wallets: int, rounds: int) -> dict[str, list[float]]:
    """The no-move cycle of a settled fleet in each of ``urls``' databases, ``rounds``
    times, the databases in turns (so that both see the machine as it is at the time);
    each database's wallets/s, round by round."""
    worlds = {label: _World(url) for label, url in urls.items()}
    try:
        for world in worlds.values():
            _populate(world.engine, world.market, wallets, settled=True)
        rates: dict[str, list[float]] = {label: [] for label in worlds}
        for number in range(1, rounds + 1):
            for label, world in worlds.items():
                world.make_due()
                figures = world.cycle()
                _emit(
                    figure="cycle",
                    storage=label,
                    wallets=wallets,
                    cycle=SETTLED,
                    round=number,
                    **figures,
                )
                rates[label].append(float(figures["wallets_per_second"]))
        return rates
    finally:
        for world in worlds.values():
            world.engine.dispose()


def _replica(url: str, start: Any, results: Any) -> None:
    engine = create_db_engine(url)
    market = SimulatedMarket(
        SimulationStore(engine), load_catalog(), 7, 0.0, wall=lambda: float(GENESIS)
    )
    agent = _agent(engine, market)
    start.wait()
    ran, _ = asyncio.run(_cycle(agent))
    results.put((ran, time.perf_counter()))
    engine.dispose()


def replicas(url: str, wallets: int, rounds: int) -> None:
    """A settled fleet's no-move cycle by one process, then by two at once, ``rounds``
    times; the ratio is the median of the rounds'."""
    world = _World(url)
    try:
        _populate(world.engine, world.market, wallets, settled=True)
        ratios = []
        for number in range(1, rounds + 1):
            rates = {processes: _replicas_cycle(world, url, processes) for processes in (1, 2)}
            for processes, (ran, seconds) in rates.items():
                _emit(
                    figure="cycle",
                    storage="postgresql",
                    wallets=wallets,
                    cycle=f"{SETTLED}, {processes} replica(s)",
                    round=number,
                    ran=ran,
                    seconds=round(seconds, 2),
                    wallets_per_second=round(ran / seconds, 1),
                )
            ratios.append((rates[2][0] / rates[2][1]) / (rates[1][0] / rates[1][1]))
        _emit(
            figure="replicas",
            storage="postgresql",
            two_over_one=round(statistics.median(ratios), 2),
            rounds=[round(r, 2) for r in ratios],
        )
    finally:
        world.engine.dispose()


def _replicas_cycle(world: _World, url: str, processes: int) -> tuple[int, float]:
    """The no-move cycle of ``world``'s fleet by ``processes`` processes at once: how many
    ran, and the seconds from the start to the last process's end."""
    world.make_due()
    context = multiprocessing.get_context("spawn")
    start, results = context.Event(), context.Queue()
    workers = [
        context.Process(target=_replica, args=(url, start, results)) for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    time.sleep(3.0)  # every process imported and connected
    began = time.perf_counter()
    start.set()
    done = [results.get() for _ in workers]
    for worker in workers:
        worker.join()
    return sum(r for r, _ in done), max(t for _, t in done) - began


def guards_cost(wallets: int, settled: int, rounds: int) -> None:
    """What the risk guards cost the agent's cycle, on SQLite: the guarded cycle's
    wallets/s over the unguarded one's, the two in turns (which goes first alternates
    too), each figure the median of the rounds'. The first cycle of ``wallets`` on a
    fresh database for each; the no-move cycle after it, both agents in turns over the
    fleet the guarded one placed (a short cycle: two pairs a round); the no-move cycle
    of a ``settled`` fleet, both agents in turns over one fleet."""
    each: dict[str, list[float]] = {"first": [], "no_move": [], SETTLED: []}
    for number in range(1, rounds + 1):
        order = (True, False) if number % 2 else (False, True)
        first: dict[bool, float] = {}
        with tempfile.TemporaryDirectory() as directory:
            worlds = {g: _World(f"sqlite:///{Path(directory) / f'{g}.db'}", g) for g in order}
            try:
                for guarded in order:
                    world = worlds[guarded]
                    _populate(world.engine, world.market, wallets, settled=False)
                    world.make_due()
                    first[guarded] = world.cycle()["wallets_per_second"]
                each["first"].append(first[True] / first[False])
                world = worlds[True]
                agents = {True: world.agent, False: _agent(world.engine, world.market, False)}
                each["no_move"] += _in_turns(world, agents, order, 2)
            finally:
                for world in worlds.values():
                    world.engine.dispose()
    with tempfile.TemporaryDirectory() as directory:
        world = _World(f"sqlite:///{Path(directory) / 'agent.db'}", guarded=True)
        try:
            _populate(world.engine, world.market, settled, settled=True)
            agents = {True: world.agent, False: _agent(world.engine, world.market, False)}
            each[SETTLED] = _in_turns(world, agents, (True, False), rounds)
        finally:
            world.engine.dispose()
    for which, ratios in each.items():
        _emit(
            figure="guards_cost",
            storage="sqlite",
            wallets=settled if which == SETTLED else wallets,
            cycle=which,
            guarded_over_unguarded=round(statistics.median(ratios), 3),
            rounds=[round(r, 3) for r in ratios],
        )


def _in_turns(
    world: _World, agents: dict[bool, Agent], order: tuple[bool, bool], pairs: int
) -> list[float]:
    """``pairs`` no-move cycles of each of ``agents`` (guarded, unguarded) over ``world``'s
    fleet in turns, the first of each pair alternating; each pair's guarded wallets/s over
    its unguarded. A first cycle, not measured, warms the fleet's pages up."""
    world.make_due()
    world.cycle(agents[False])
    ratios = []
    for number in range(pairs):
        rates: dict[bool, float] = {}
        for guarded in order if number % 2 == 0 else order[::-1]:
            world.make_due()
            figures = world.cycle(agents[guarded])
            assert set(figures["last_outcomes"]) == {"no_action"}, figures  # nothing moves
            rates[guarded] = figures["wallets_per_second"]
        ratios.append(rates[True] / rates[False])
    return ratios


def _postgres_schema(base: str) -> str:
    """A fresh schema ``bench_agent`` on ``base``; the URL that uses it."""
    engine = create_db_engine(base)
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA IF EXISTS bench_agent CASCADE"))
        connection.execute(text("CREATE SCHEMA bench_agent"))
    engine.dispose()
    separator = "&" if "?" in base else "?"
    return f"{base}{separator}options=-csearch_path%3Dbench_agent"


def _sizes(name: str, default: str) -> list[int]:
    return [int(n) for n in os.environ.get(name, default).split(",") if n.strip() and int(n)]


def _linearity(label: str, which: str, rates: dict[int, float]) -> None:
    if len(rates) >= 2:
        small, big = min(rates), max(rates)
        _emit(
            figure="linearity",
            storage=label,
            cycle=which,
            sizes=[small, big],
            ratio=round(rates[big] / rates[small], 2),
        )


def _median_ratio(which: str, wallets: int, lite: list[float], pg: list[float]) -> float:
    """The median of the rounds' ratios of SQLite's wallets/s to PostgreSQL's; each
    round's is emitted."""
    each = [a / b for a, b in zip(lite, pg, strict=True)]
    _emit(
        figure="postgresql_vs_sqlite_rounds",
        wallets=wallets,
        cycle=which,
        sqlite_over_postgresql=[round(r, 2) for r in each],
    )
    return statistics.median(each)


def main() -> None:
    sizes = _sizes("BENCH_WALLETS", "500,2000")
    settled_sizes = _sizes("BENCH_SETTLED", "10000,100000")
    settled_pg = _sizes("BENCH_SETTLED_POSTGRESQL", "10000")
    count = int(os.environ.get("BENCH_CYCLES", "2"))
    rounds = int(os.environ.get("BENCH_SETTLED_ROUNDS", "5"))
    cycle_rounds = int(os.environ.get("BENCH_CYCLE_ROUNDS", "3"))
    storage = os.environ.get("BENCH_STORAGE", "sqlite,postgresql").split(",")
    postgres = os.environ.get("YIELDAGENT_TEST_DATABASE_URL") if "postgresql" in storage else None
    labels = [label for label in ("sqlite", "postgresql") if label in storage]
    if not postgres:
        labels = [label for label in labels if label != "postgresql"]
    rates: dict[str, dict[str, dict[int, float]]] = {
        label: {"first": {}, "no_move": {}, SETTLED: {}} for label in labels
    }
    both = {"sqlite", "postgresql"} <= set(labels)
    side_by_side = sorted(set(settled_sizes) & set(settled_pg)) if both else []
    cycle_rates: dict[tuple[str, str, int], list[float]] = {}
    for wallets in sizes:
        for number in range(1, cycle_rounds + 1):
            for label in labels:
                if label == "sqlite":
                    with tempfile.TemporaryDirectory() as directory:
                        url = f"sqlite:///{Path(directory) / 'agent.db'}"
                        measured = cycles(url, label, wallets, count, number)
                else:
                    assert postgres is not None
                    url = _postgres_schema(postgres)
                    measured = cycles(url, label, wallets, count, number)
                for which, rate in measured.items():
                    cycle_rates.setdefault((label, which, wallets), []).append(rate)
    for (side, which, wallets), measured_rates in cycle_rates.items():
        rates[side][which][wallets] = statistics.median(measured_rates)
    ratios: dict[tuple[str, int], float] = {}
    for (side, which, wallets), lite_rates in cycle_rates.items():
        if side == "sqlite" and ("postgresql", which, wallets) in cycle_rates:
            pg_rates = cycle_rates[("postgresql", which, wallets)]
            ratios[(which, wallets)] = _median_ratio(which, wallets, lite_rates, pg_rates)
    for label in labels:
        for wallets in settled_sizes if label == "sqlite" else settled_pg:
            if wallets in side_by_side:
                continue
            if label == "sqlite":
                with tempfile.TemporaryDirectory() as directory:
                    url = f"sqlite:///{Path(directory) / 'agent.db'}"
                    rate = settled_cycle(url, label, wallets)
            else:
                assert postgres is not None
                rate = settled_cycle(_postgres_schema(postgres), label, wallets)
            rates[label][SETTLED][wallets] = rate
    for wallets in side_by_side:
        assert postgres is not None
        with tempfile.TemporaryDirectory() as directory:
            urls = {
                "sqlite": f"sqlite:///{Path(directory) / 'agent.db'}",
                "postgresql": _postgres_schema(postgres),
            }
            measured_rounds = settled_rounds(urls, wallets, rounds)
        for side, by_round in measured_rounds.items():
            rates[side][SETTLED][wallets] = statistics.median(by_round)
        ratios[(SETTLED, wallets)] = _median_ratio(
            SETTLED, wallets, measured_rounds["sqlite"], measured_rounds["postgresql"]
        )
    for label in labels:
        for which, by_size in rates[label].items():
            _linearity(label, which, by_size)
    for (which, wallets), ratio in ratios.items():
        _emit(
            figure="postgresql_vs_sqlite",
            wallets=wallets,
            cycle=which,
            sqlite_over_postgresql=round(ratio, 2),
        )
    if "sqlite" in labels and os.environ.get("BENCH_GUARDS", "on") != "off":
        guards_cost(
            int(os.environ.get("BENCH_GUARD_WALLETS", "2000")),
            int(os.environ.get("BENCH_GUARD_SETTLED", "10000")),
            int(os.environ.get("BENCH_GUARD_ROUNDS", "6")),
        )
    if postgres:
        replica_wallets = int(os.environ.get("BENCH_REPLICA_WALLETS", "10000"))
        replicas(_postgres_schema(postgres), replica_wallets, (rounds + 1) // 2)


if __name__ == "__main__":
    main()
