"""The soak: ``yieldagent run`` under a mixed partner load for a while, sampling memory.

``soak(seconds, database_url, directory)`` starts the service (its own process, with its
Envoy) on ``database_url``, activates ``SOAK_WALLETS`` (400) wallets through REST, then:

1. measures the capacity of the mix: as many operations per second as
   ``SOAK_CONCURRENCY`` clients closed in a loop reach in a tenth of the run (5 s at least);
2. runs the mix at ``SOAK_LOAD`` (0.8) of that rate, paced, for ``seconds``: wallet reads
   (most of it), transaction pages, withdrawals of 1 USDC with an ``Idempotency-Key``
   (a third of them sent twice: the second must replay the first), top-ups verified on
   chain, agent runs, and simulated time advancing an hour every ``SOAK_ADVANCE_SECONDS``;
3. samples the resident memory of the server and of its Envoy every ``SOAK_SAMPLE_SECONDS``;
4. stops the service gracefully and returns what it saw.

The verdict (no 5xx, memory flat, books exact) is the caller's: ``tests/soak/test_soak.py``,
which ``make soak`` runs for ``SOAK_SECONDS`` (600) on SQLite and, with
``YIELDAGENT_TEST_DATABASE_URL``, on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from eth_utils.address import to_checksum_address
from sqlalchemy import Engine, text

from benchmarks.rest_reads import BASE_USDC, _free_port, _wait
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.storage.db import create_db_engine
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.simulation import SimulationStore

WALLETS = int(os.environ.get("SOAK_WALLETS", "400"))
"""A fleet, so that the history each wallet gathers stays a partner's: with 40 wallets, ten
minutes of the mix gave each 165 to 440 withdrawals, records of 100 to 200 KB whose every
read costs Envoy's transcoder 15 times a new wallet's, and the load set at 80% of the
fresh fleet's capacity ended above it."""
CONCURRENCY = int(os.environ.get("SOAK_CONCURRENCY", "16"))
LOAD = float(os.environ.get("SOAK_LOAD", "0.8"))
ADVANCE_SECONDS = float(os.environ.get("SOAK_ADVANCE_SECONDS", "10"))
SAMPLE_SECONDS = float(os.environ.get("SOAK_SAMPLE_SECONDS", "2"))
USDC = 10**6
FEE_COLLECTOR = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
"""Where the service sends its performance fees during a soak, so the books can tell a fee
from a payout."""
ROOT = Path(__file__).resolve().parents[1]

# The mix: operation and weight. Reads dominate, as a partner's traffic does.
MIX = (
    ("read", 60),
    ("transactions", 10),
    ("withdraw", 12),
    ("top_up", 6),
    ("run", 6),
    ("stats", 6),
)


@dataclass
class Outcome:
    """What a soak saw."""

    seconds: float
    capacity: float
    """Operations per second of the mix, closed loop, before the paced run."""
    rate: float
    """Operations per second asked for during the paced run."""
    statuses: Counter[str] = field(default_factory=Counter)
    """Replies by operation and status (``withdraw 200``); ``error`` for no reply."""
    replays: int = 0
    """Withdrawals sent twice whose second reply replayed the first."""
    replay_mismatches: list[str] = field(default_factory=list)
    server_memory: list[tuple[float, int]] = field(default_factory=list)
    """(seconds into the paced run, resident bytes)."""
    envoy_memory: list[tuple[float, int]] = field(default_factory=list)
    wallet_ids: list[int] = field(default_factory=list)

    @property
    def server_errors(self) -> int:
        """Replies of 500 or more, and requests that got no reply."""
        return sum(
            count
            for key, count in self.statuses.items()
            if key.endswith(" error") or int(key.rsplit(" ", 1)[1]) >= 500
        )

    def report(self) -> dict[str, Any]:
        """The figures, as one JSON-able dict."""
        return {
            "seconds": self.seconds,
            "capacity_ops": round(self.capacity, 1),
            "rate_ops": round(self.rate, 1),
            "requests": sum(self.statuses.values()),
            "server_errors": self.server_errors,
            "replays": self.replays,
            "server_rss_mb": _ends(self.server_memory),
            "envoy_rss_mb": _ends(self.envoy_memory),
            "server_growth_last_window": round(growth(self.server_memory, self.seconds), 4),
            "envoy_growth_last_window": round(growth(self.envoy_memory, self.seconds), 4),
            "statuses": dict(sorted(self.statuses.items())),
        }


def window(seconds: float) -> float:
    """The stretch at the end of a run over which memory must stay flat: the last five
    minutes, or the last half of a shorter run."""
    return min(300.0, seconds / 2)


def growth(samples: list[tuple[float, int]], seconds: float) -> float:
    """How much memory grew over the run's last ``window``: the mean of its last three
    samples over the mean of its first three, less one."""
    start = seconds - window(seconds)
    inside = [rss for at, rss in samples if at >= start]
    if len(inside) < 6:
        return 0.0
    first, last = sum(inside[:3]) / 3, sum(inside[-3:]) / 3
    return last / first - 1


def _ends(samples: list[tuple[float, int]]) -> list[float]:
    return [round(samples[0][1] / 2**20, 1), round(samples[-1][1] / 2**20, 1)] if samples else []


def _rss(pid: int) -> int:
    """Resident bytes of a process (Linux ``/proc``); 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def envoy_of(pid: int) -> int | None:
    """The Envoy child of the server process ``pid``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        if parent == pid and name.startswith("envoy"):
            return int(entry.name)
    return None


@dataclass(frozen=True)
class Service:
    """A running ``yieldagent run``: its REST base, process id and database."""

    base: str
    pid: int
    engine: Engine
    market: SimulatedMarket
    headers: dict[str, str]


@contextmanager
def running(database_url: str, directory: Path) -> Iterator[Service]:
    """``yieldagent run`` on ``database_url`` on free ports, with one partner; stopped
    gracefully (SIGINT) at the end."""
    http_port = _free_port()
    env = {
        **os.environ,
        "YIELDAGENT_DATA_DIR": str(directory),
        "YIELDAGENT_DATABASE_URL": database_url,
        "YIELDAGENT_HTTP_PORT": str(http_port),
        "YIELDAGENT_GRPC_PORT": str(_free_port()),
        "YIELDAGENT_LOG_LEVEL": "WARNING",
        "YIELDAGENT_METRICS_PORT": "0",
        "YIELDAGENT_SIM_SPEED": "0",
        "YIELDAGENT_PARTNER_RATE_LIMIT": "0",
        # The mix makes hundreds of money calls per wallet, withdrawals of 1 USDC among them:
        # it measures the service, not the limits that keep a leaked key from burning gas.
        "YIELDAGENT_WALLET_MONEY_CALLS_PER_MINUTE": "0",
        "YIELDAGENT_MIN_WITHDRAW_USD": "1",
        "YIELDAGENT_FEE_COLLECTOR": FEE_COLLECTOR,
    }
    server = subprocess.Popen([sys.executable, "-m", "yieldagent", "run"], env=env, cwd=ROOT)
    engine = create_db_engine(database_url)
    try:
        base = f"http://127.0.0.1:{http_port}/api/v1"
        _wait(f"{base}/healthcheck", 60)
        name = f"soak-{uuid.uuid4().hex[:8]}"
        _, key = PartnerStore(engine).create(name, PERMISSIONS)
        market = SimulatedMarket(SimulationStore(engine), load_catalog(), 7, speed=0.0)
        market.start(set_speed=False)
        yield Service(
            base, server.pid, engine, market, {"X-Partner-Name": name, "X-Partner-API-Key": key}
        )
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        engine.dispose()


@dataclass(frozen=True)
class _Wallet:
    id: int
    address: str
    eoa: str


class _Load:
    """The mix's operations against one service, counting what comes back."""

    def __init__(self, service: Service, session: aiohttp.ClientSession, outcome: Outcome):
        self._service = service
        self._session = session
        self._outcome = outcome
        self._random = random.Random(7)
        self.wallets: list[_Wallet] = []
        self._ops: list[str] = [name for name, weight in MIX for _ in range(weight)]

    async def _call(
        self, op: str, method: str, path: str, keyed: bool = False, **kwargs: Any
    ) -> tuple[int, bytes]:
        headers = dict(self._service.headers) if keyed else {}
        headers.update(kwargs.pop("headers", {}))
        try:
            async with self._session.request(
                method, self._service.base + path, headers=headers, **kwargs
            ) as reply:
                body = await reply.read()
                self._outcome.statuses[f"{op} {reply.status}"] += 1
                return reply.status, body
        except (aiohttp.ClientError, TimeoutError):
            self._outcome.statuses[f"{op} error"] += 1
            return 0, b""

    async def activate(self, number: int) -> None:
        """A smart account for a fresh EOA, 1,000 USDC deposited to it, activated."""
        eoa = to_checksum_address(f"0x{0x50A4 << 140 | number:040x}")
        status, body = await self._call(
            "setup",
            "POST",
            "/proxy/zerodev/smart-accounts",
            keyed=True,
            json={"eoa": eoa, "chain": 8453},
        )
        assert status == 200, body
        account = json.loads(body)["smartAccount"]
        transfer = await asyncio.to_thread(
            self._service.market.deposit_from, 8453, BASE_USDC, eoa, account, 1_000 * USDC
        )
        status, body = await self._call(
            "setup",
            "POST",
            "/8453/wallets",
            keyed=True,
            json={
                "wallet": account,
                "eoa": eoa,
                "initial_token": BASE_USDC,
                "selected_protocols": ["aave", "compound", "moonwell"],
                "tx_hash": transfer.tx_hash,
            },
        )
        assert status == 201, body
        with self._service.engine.connect() as connection:
            wallet_id = connection.execute(
                text("SELECT id FROM wallets WHERE chain_id = 8453 AND address = :a"),
                {"a": account},
            ).scalar_one()
        self.wallets.append(_Wallet(wallet_id, account, eoa))

    async def one(self) -> None:
        """One operation of the mix, on a random wallet."""
        op = self._random.choice(self._ops)
        wallet = self._random.choice(self.wallets)
        path = f"/8453/wallets/{wallet.address}"
        if op == "read":
            await self._call(op, "GET", path)
        elif op == "transactions":
            await self._call(op, "GET", f"{path}/transactions?limit=20", keyed=True)
        elif op == "stats":
            await self._call(op, "GET", "/8453/stats")
        elif op == "withdraw":
            await self._withdraw(wallet, path)
        elif op == "top_up":
            transfer = await asyncio.to_thread(
                self._service.market.deposit_from,
                8453,
                BASE_USDC,
                wallet.eoa,
                wallet.address,
                5 * USDC,
            )
            await self._call(
                op,
                "POST",
                f"{path}:top-up?tx_hash={transfer.tx_hash}",
                keyed=True,
                headers={"Idempotency-Key": uuid.uuid4().hex},
            )
        else:
            await self._call(
                op, "POST", f"{path}:run", keyed=True, headers={"Idempotency-Key": uuid.uuid4().hex}
            )

    async def _withdraw(self, wallet: _Wallet, path: str) -> None:
        """1 USDC with a key; a third are sent again with the same key, as a client that
        lost the reply would, and must get the same answer."""
        key = {"Idempotency-Key": uuid.uuid4().hex}
        body = {"amount": str(USDC)}
        first = await self._call(
            "withdraw", "POST", f"{path}:withdraw", True, json=body, headers=key
        )
        if first[0] != 200 or self._random.random() >= 1 / 3:
            return
        again = await self._call(
            "withdraw", "POST", f"{path}:withdraw", True, json=body, headers=key
        )
        if again == first:
            self._outcome.replays += 1
        else:
            self._outcome.replay_mismatches.append(f"{wallet.address}: {first} then {again}")


async def _closed_loop(load: _Load, seconds: float) -> float:
    """Operations per second that ``CONCURRENCY`` clients reach, each starting the next
    operation when the last ends."""
    deadline = time.monotonic() + seconds
    done = itertools.count()

    async def client() -> None:
        while time.monotonic() < deadline:
            await load.one()
            next(done)

    started = time.monotonic()
    await asyncio.gather(*(client() for _ in range(CONCURRENCY)))
    return (next(done)) / (time.monotonic() - started)


async def _paced(load: _Load, rate: float, seconds: float) -> None:
    """``rate`` operations per second for ``seconds``, each started on schedule (up to
    ``4 × CONCURRENCY`` in flight: beyond that the load waits rather than piling up)."""
    gate = asyncio.Semaphore(4 * CONCURRENCY)
    tasks: set[asyncio.Task[None]] = set()
    started = time.monotonic()
    for n in itertools.count():
        due = started + n / rate
        if due - started >= seconds:
            break
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        await gate.acquire()
        task = asyncio.create_task(load.one())
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        task.add_done_callback(lambda _: gate.release())
    await asyncio.gather(*tasks)


async def _every(period: float, seconds: float, action: Callable[[float], Awaitable[None]]) -> None:
    started = time.monotonic()
    while (elapsed := time.monotonic() - started) < seconds:
        await action(elapsed)
        await asyncio.sleep(period)


async def _soak(service: Service, seconds: float, wallets: int, outcome: Outcome) -> None:
    timeout = aiohttp.ClientTimeout(total=60)
    connector = aiohttp.TCPConnector(limit=8 * CONCURRENCY)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        load = _Load(service, session, outcome)
        for number in range(wallets):
            await load.activate(number)
        outcome.wallet_ids = [w.id for w in load.wallets]
        outcome.capacity = await _closed_loop(load, max(5.0, seconds / 10))
        outcome.rate = LOAD * outcome.capacity
        envoy = envoy_of(service.pid)

        async def sample(elapsed: float) -> None:
            outcome.server_memory.append((elapsed, _rss(service.pid)))
            if envoy is not None:
                outcome.envoy_memory.append((elapsed, _rss(envoy)))

        async def advance(_: float) -> None:
            await asyncio.to_thread(service.market.advance, 3600)

        await asyncio.gather(
            _paced(load, outcome.rate, seconds),
            _every(SAMPLE_SECONDS, seconds, sample),
            _every(ADVANCE_SECONDS, seconds, advance),
        )


def soak(seconds: float, database_url: str, directory: Path, wallets: int = WALLETS) -> Outcome:
    """Runs the soak (see the module's docstring) over ``wallets`` wallets and returns what
    it saw; the service is stopped when this returns, so its wallets can be checked."""
    outcome = Outcome(seconds=seconds, capacity=0.0, rate=0.0)
    with running(database_url, directory) as service:
        asyncio.run(_soak(service, seconds, wallets, outcome))
    return outcome


if __name__ == "__main__":
    url = sys.argv[1] if len(sys.argv) > 1 else ""
    import tempfile

    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        result = soak(
            float(os.environ.get("SOAK_SECONDS", "30")),
            url or f"sqlite:///{folder / 'soak.db'}",
            folder,
        )
    print(json.dumps({"benchmark": "soak", **result.report()}))
