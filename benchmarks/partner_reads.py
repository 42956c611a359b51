"""The partners' fleet poll, side by side: ``GET /api/v1/8453/wallets/{w}`` through our Envoy
against a FastAPI app reading the same wallets and against the edge's ceiling.

``BENCH_FLEET`` (10,000) activated wallets are written into the service's database; wrk
asks for them in turn (``fleet.lua``), so each request names a different wallet than the
last ``BENCH_FLEET - 1``: no cache keyed by the request could answer it. Five stacks on
this machine, measured in turns (``BENCH_ROUNDS`` rounds after a warm-up that reads the
whole fleet, wrk at ``BENCH_CONNECTIONS`` connections for ``BENCH_DURATION`` each), so
that drift in the machine's load hits all of them alike:

- **ours x1**: ``yieldagent run`` (Envoy → grpc.aio → storage), SQLite, one serving process;
- **fastapi x1**: ``benchmarks.fastapi_wallet`` on uvicorn (one worker), one SQLAlchemy Core
  primary-key read of the same wallet's row from the same database file;
- **ours xN**: ``yieldagent run`` with ``YIELDAGENT_GRPC_PROCESSES`` and
  ``YIELDAGENT_ENVOY_WORKERS`` = ``BENCH_PROCESSES`` (2: the machine's cores), on a
  database of its own seeded alike;
- **fastapi xN**: the same app on uvicorn with as many workers, on that database;
- **ceiling**: a bare grpc.aio server answering ``GET /api/v1/chains`` with a constant,
  behind an Envoy rendered from our own config (``benchmarks.constant_edge``).

Prints each stack's median figures and, for each pair (x1 against x1, xN against xN), the
ratios ours/fastapi and ours/ceiling, each the median of the per-round ratios. CPU per
read sums the server's processes (uvicorn's workers, our serving processes). Then the
server's CPU per read (ours x1's user and system time over the requests wrk counted) for
one wallet with ``BENCH_HISTORY`` (500) withdrawals against one with none, read in turns.
``BENCH_PROFILE=DIR`` also records a py-spy profile of ours x1 under the fleet poll
(``DIR/partner_read.txt``, collapsed stacks; ``python -m benchmarks.profiles`` summarises
it).
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert

from benchmarks.rest_reads import (
    BASE_USDC,
    CONNECTIONS,
    DURATION,
    _free_port,
    _wait,
    _wrk,
    running_service,
)
from benchmarks.soak import envoy_of
from yieldagent.composition.edge import EnvoyProcess
from yieldagent.config import load_settings
from yieldagent.domain.constraints import Constraints
from yieldagent.storage.db import create_db_engine
from yieldagent.storage.tables import DepositRow, WalletRow, WalletScheduleRow, WithdrawalRow

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
FLEET = int(os.environ.get("BENCH_FLEET", "10000"))
HISTORY = int(os.environ.get("BENCH_HISTORY", "500"))
PROCESSES = int(os.environ.get("BENCH_PROCESSES", "2"))
"""The serving processes of the second pair, and the FastAPI workers it is measured
against (the first pair is one against one)."""
ROOT = Path(__file__).resolve().parents[1]
FIRST_ID = 1_000_000
"""The fleet's wallet ids start here, clear of the wallets the service made itself."""
T0 = datetime(2026, 1, 1, tzinfo=UTC)

# wrk: each request takes the next wallet of the fleet, whichever connection sends it.
_FLEET_LUA = """
local fleet, first, n = %d, %d, 0
request = function()
  n = n + 1
  return wrk.format("GET", string.format("/api/v1/8453/wallets/0x%%040d", first + n %% fleet))
end
"""


def address(wallet_id: int) -> str:
    """The fleet wallet's address: its id in decimal digits, which EIP-55 leaves as it is
    (no letters), so wrk can write it and FastAPI find it spelled the same."""
    return f"0x{wallet_id:040d}"


def _wallet(wallet_id: int, partner_id: int) -> dict[str, Any]:
    return {
        "id": wallet_id,
        "chain_id": 8453,
        "address": address(wallet_id),
        "eoa": address(wallet_id + 5_000_000),
        "partner_id": partner_id,
        "status": "activated",
        "token": BASE_USDC,
        "selected_protocols": json.dumps(["aave", "compound"]),
        "constraints": Constraints().to_json(),
        "principal": 10**9,
        "allocation": json.dumps({"aave": str(10**9)}),
        "idle": 0,
        "current_apr": 4.2,
        "valued_at": T0,
        "is_staked": False,
        "activation_date": T0,
        "version": 1,
        "created_at": T0,
        "updated_at": T0,
    }


def seed(database_url: str, partner_id: int) -> tuple[str, str]:
    """Writes the fleet (each wallet with one deposit; never due, so the agent leaves it
    alone) and two more wallets: one with ``HISTORY`` withdrawals and one new. Returns
    those two addresses."""
    engine = create_db_engine(database_url)
    aged, new = FIRST_ID + FLEET, FIRST_ID + FLEET + 1
    ids = [*range(FIRST_ID, FIRST_ID + FLEET), aged, new]
    wallets = [_wallet(i, partner_id) for i in ids]
    schedule = [{"wallet_id": i, "active": True, "next_run_at": 4e9} for i in ids]
    deposits = [
        {
            "wallet_id": i,
            "chain_id": 8453,
            "token": BASE_USDC,
            "amount": 10**9,
            "tx_hash": f"0x{i:064x}",
            "log_index": 0,
            "block_number": 1,
            "date": T0,
        }
        for i in ids
    ]
    withdrawals = [
        {
            "wallet_id": aged,
            "chain_id": 8453,
            "token": BASE_USDC,
            "amount": 10**6 + n,
            "principal": 10**6,
            "yield": n,
            "fee": 0,
            "value": 1.0,
            "value_in_usd": 1.0,
            "tx_hash": f"0x{n + 1:064x}",
            "log_index": 0,
            "kind": "withdrawal",
            "block_number": n + 2,
            "date": T0 + timedelta(hours=n),
        }
        for n in range(HISTORY)
    ]
    with engine.begin() as connection:
        for table, rows in (
            (WalletRow, wallets),
            (WalletScheduleRow, schedule),
            (DepositRow, deposits),
            (WithdrawalRow, withdrawals),
        ):
            for start in range(0, len(rows), 5_000):
                connection.execute(insert(table), rows[start : start + 5_000])
    engine.dispose()
    return address(aged), address(new)


@contextmanager
def _process(command: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(command, env=env, cwd=ROOT)
    try:
        yield process
    finally:
        process.terminate()
        process.wait(30)


@contextmanager
def _ceiling() -> Iterator[tuple[str, list[int]]]:
    """The constant server behind its own Envoy; yields the read's URL there and the two
    processes' ids."""
    grpc_port, http_port = _free_port(), _free_port()
    with (
        tempfile.TemporaryDirectory() as directory,
        _process(
            [sys.executable, "-m", "benchmarks.constant_edge", str(grpc_port)], {**os.environ}
        ) as server,
    ):
        settings = load_settings(
            {
                **os.environ,
                "YIELDAGENT_DATA_DIR": directory,
                "YIELDAGENT_HTTP_PORT": str(http_port),
                "YIELDAGENT_CLIENT_RATE_LIMIT": "0",  # the load comes from one address
                "YIELDAGENT_ENVOY_ACCESS_LOG": str(Path(directory) / "envoy-access.log"),
            }
        )
        envoy = EnvoyProcess(settings, grpc_port)
        envoy.start()
        try:
            url = f"http://127.0.0.1:{http_port}/api/v1/chains"
            _wait(url)
            yield url, [server.pid, envoy_of(os.getpid()) or 0]
        finally:
            envoy.stop()


@contextmanager
def _fastapi(database: Path, workers: int = 1) -> Iterator[tuple[str, list[int]]]:
    """``workers`` uvicorn processes sharing one port (``fastapi_wallet.serve``) on the
    service's database; yields its base URL and the processes' ids."""
    port = _free_port()
    command = [sys.executable, "-m", "benchmarks.fastapi_wallet", str(port)]
    env = {**os.environ, "BENCH_DATABASE_URL": f"sqlite:///{database}"}
    with ExitStack() as stack:
        servers = [stack.enter_context(_process(command, env)) for _ in range(workers)]
        base = f"http://127.0.0.1:{port}/api/v1"
        _wait(f"{base}/8453/wallets/{address(FIRST_ID)}")
        yield base, [server.pid for server in servers]


_SCALE = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def measure(
    wrk: str, url: str, script: Path | None = None, duration: str = DURATION
) -> dict[str, float]:
    """One wrk run at ``url`` (with ``script``, the fleet's rotation): requests per
    second, p50 and p99 in ms, requests and non-2xx replies."""
    command = [wrk, "-t1", f"-c{CONNECTIONS}", f"-d{duration}", "--latency"]
    if script is not None:
        command += ["-s", str(script)]
    out = subprocess.run([*command, url], check=True, capture_output=True, text=True).stdout
    figures: dict[str, float] = {
        "requests_per_second": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),  # type: ignore[union-attr]
        "requests": float(re.search(r"(\d+) requests in", out).group(1)),  # type: ignore[union-attr]
    }
    for name, pattern in (
        ("p50_ms", r"50%\s+([\d.]+)(us|ms|s)"),
        ("p99_ms", r"99%\s+([\d.]+)(us|ms|s)"),
    ):
        found = re.search(pattern, out)
        figures[name] = float(found.group(1)) * _SCALE[found.group(2)] if found else -1.0
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    figures["errors"] = float(non_2xx.group(1)) if non_2xx else 0.0
    return figures


def _warm(wrk: str, url: str, script: Path | None) -> list[int]:
    """Reads until one wrk run has asked for every wallet of the fleet, as a partner's
    continuous poll has: each run starts the rotation again, and a run cut short leaves
    the wallets past it to the first measured rounds (read for the first time, ours
    builds and keeps their replies there). Returns each warm-up run's request count."""
    seconds = int(DURATION.removesuffix("s"))
    counts = [int(measure(wrk, url, script, f"{seconds}s")["requests"])]
    while script is not None and counts[-1] < FLEET:
        seconds *= 2
        counts.append(int(measure(wrk, url, script, f"{seconds}s")["requests"]))
    return counts


def _measured(
    wrk: str, url: str, script: Path | None, pids: tuple[list[int], int]
) -> dict[str, float]:
    """``measure``, with the CPU time per request of the stack's server processes (each
    listed one's and its children's but Envoy's: ``server_cpu_us``) and of its Envoy
    (``envoy_cpu_us``; 0 without one)."""
    servers, envoy = pids
    trees = [[p for s in servers for p in _tree(s) if p != envoy], [envoy] if envoy else []]
    before = [sum(cpu_seconds(pid) for pid in tree) for tree in trees]
    figures = measure(wrk, url, script)
    requests = max(figures["requests"], 1)
    spent = [
        sum(cpu_seconds(pid) for pid in tree) - b for tree, b in zip(trees, before, strict=True)
    ]
    figures["server_cpu_us"] = round(1e6 * spent[0] / requests, 1)
    figures["envoy_cpu_us"] = round(1e6 * spent[1] / requests, 1)
    return figures


def _tree(pid: int) -> list[int]:
    """``pid`` and its children (the serving processes of ours, uvicorn's workers)."""
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
                children.append(int(entry.name))
    return [pid, *children]


def cpu_seconds(pid: int) -> float:
    """The process's user and system CPU time so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _profile(pid: int, wrk: str, url: str, script: Path, directory: str) -> None:
    out = Path(directory) / "partner_read.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    spy = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("py-spy")),
            "record",
            "--pid",
            str(pid),
            "--duration",
            DURATION.removesuffix("s"),
            "--rate",
            "200",
            "--format",
            "raw",
            "--output",
            str(out),
            "--nonblocking",
        ],
        stdout=subprocess.DEVNULL,
    )
    measure(wrk, url, script)
    spy.wait(60)


def _emit(**figures: object) -> None:
    print(json.dumps({"benchmark": "partner_reads", **figures}), flush=True)


def _history(wrk: str, pid: int, base: str, aged: str, new: str) -> None:
    """The server's CPU per read of a wallet with ``HISTORY`` withdrawals and of a new one,
    in turns; the ratio is the median of the rounds'."""
    per_read: dict[str, list[float]] = {"aged": [], "new": []}
    replies: dict[str, float] = {}
    for _ in range(ROUNDS):
        for name, wallet in (("aged", aged), ("new", new)):
            before = cpu_seconds(pid)
            figures = measure(wrk, f"{base}/8453/wallets/{wallet}")
            per_read[name].append((cpu_seconds(pid) - before) / max(figures["requests"], 1))
            replies[name] = figures["requests_per_second"]
    _emit(
        read="server CPU per read, by the wallet's history",
        withdrawals=HISTORY,
        aged_us=round(1e6 * statistics.median(per_read["aged"]), 1),
        new_us=round(1e6 * statistics.median(per_read["new"]), 1),
        aged_over_new=round(
            statistics.median(
                a / n for a, n in zip(per_read["aged"], per_read["new"], strict=True)
            ),
            2,
        ),
        aged_rps=replies["aged"],
        new_rps=replies["new"],
    )


def main() -> None:
    wrk = _wrk()
    # The worker's first tick comes before the fleet is written, and no other comes during
    # the run: its wallet refresh would otherwise visit every wallet, in the same process.
    quiet = {"YIELDAGENT_WORKER_INTERVAL_SECONDS": "86400"}
    # Several processes with as many Envoy workers, as docs/configuration.md advises.
    several = {
        **quiet,
        "YIELDAGENT_GRPC_PROCESSES": str(PROCESSES),
        "YIELDAGENT_ENVOY_WORKERS": str(PROCESSES),
    }
    with (
        running_service(quiet) as service,
        running_service(several) as fleet_service,
        ExitStack() as stack,
    ):
        database = service.data_dir / "yieldagent.db"
        partner_id = 1
        aged, new = seed(f"sqlite:///{database}", partner_id)
        seed(f"sqlite:///{fleet_service.data_dir / 'yieldagent.db'}", partner_id)
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        script = directory / "fleet.lua"
        script.write_text(_FLEET_LUA % (FLEET, FIRST_ID))
        fastapi, fastapi_pids = stack.enter_context(_fastapi(database))
        fastapi_n, fastapi_n_pids = stack.enter_context(
            _fastapi(fleet_service.data_dir / "yieldagent.db", PROCESSES)
        )
        ceiling, ceiling_pids = stack.enter_context(_ceiling())
        ours, ours_n = "ours x1", f"ours x{PROCESSES}"
        fastapi_1, fastapi_w = "fastapi x1", f"fastapi x{PROCESSES}"
        runs: dict[str, tuple[str, Path | None, tuple[list[int], int]]] = {
            ours: (service.base, script, ([service.pid], envoy_of(service.pid) or 0)),
            fastapi_1: (fastapi, script, (fastapi_pids, 0)),
            ours_n: (
                fleet_service.base,
                script,
                ([fleet_service.pid], envoy_of(fleet_service.pid) or 0),
            ),
            fastapi_w: (fastapi_n, script, (fastapi_n_pids, 0)),
            "ceiling": (ceiling, None, (ceiling_pids[:1], ceiling_pids[1])),
        }
        for name, (url, fleet, _) in runs.items():
            _emit(stack=name, warm_up_requests=_warm(wrk, url, fleet))
        rounds = [
            {name: _measured(wrk, url, fleet, pids) for name, (url, fleet, pids) in runs.items()}
            for _ in range(ROUNDS)
        ]
        for name in runs:
            _emit(
                stack=name,
                fleet=FLEET,
                rounds=ROUNDS,
                connections=int(CONNECTIONS),
                **{
                    figure: statistics.median(r[name][figure] for r in rounds)
                    for figure in (
                        "requests_per_second",
                        "p50_ms",
                        "p99_ms",
                        "errors",
                        "server_cpu_us",
                        "envoy_cpu_us",
                    )
                },
            )

        def ratio(figure: str, a: str, b: str) -> float:
            return round(statistics.median(r[a][figure] / r[b][figure] for r in rounds), 3)

        for mine, theirs in ((ours, fastapi_1), (ours_n, fastapi_w)):
            _emit(
                ratio="same run, median of rounds",
                pair=f"{mine} / {theirs}",
                over_fastapi_rps=ratio("requests_per_second", mine, theirs),
                over_fastapi_p99=ratio("p99_ms", mine, theirs),
                over_ceiling_rps=ratio("requests_per_second", mine, "ceiling"),
                per_round_rps=[
                    round(r[mine]["requests_per_second"] / r[theirs]["requests_per_second"], 3)
                    for r in rounds
                ],
            )
        _history(wrk, service.pid, service.base, aged, new)
        profile = os.environ.get("BENCH_PROFILE")
        if profile:
            _profile(service.pid, wrk, service.base, script, profile)


if __name__ == "__main__":
    main()
