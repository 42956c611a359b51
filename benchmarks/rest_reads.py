"""Partner reads over REST, through Envoy, measured with wrk (installed from Debian if missing).

Starts ``yieldagent run`` on free ports with a throwaway data dir, then reports
requests per second and latency for each read at 32 connections.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

DURATION = os.environ.get("BENCH_DURATION", "5s")
CONNECTIONS = os.environ.get("BENCH_CONNECTIONS", "32")
OWNER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wrk() -> str:
    found = shutil.which("wrk")
    if found is None:
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "wrk"], check=True, stdout=subprocess.DEVNULL
        )
        found = shutil.which("wrk")
    assert found is not None
    return found


def _yieldagent(env: dict[str, str], *args: str) -> dict[str, str]:
    out = subprocess.run(
        [sys.executable, "-m", "yieldagent", *args],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, str] = json.loads(out)
    return result


def _wait(url: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1):  # noqa: S310 (loopback only)
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(url)


def _measure(wrk: str, url: str, headers: dict[str, str]) -> dict[str, float]:
    command = [wrk, "-t1", f"-c{CONNECTIONS}", f"-d{DURATION}", "--latency", url]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)", out)
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {
        "requests_per_second": rps,
        "p50_ms": float(p50.group(1)) * scale[p50.group(2)] if p50 else -1,
        "p99_ms": float(p99.group(1)) * scale[p99.group(2)] if p99 else -1,
        "errors": float(non_2xx.group(1)) if non_2xx else 0.0,
    }


@dataclass(frozen=True, slots=True)
class Running:
    """A running service with one activated wallet: where to reach it and with what."""

    base: str
    env: dict[str, str]
    account: str
    keyed: dict[str, str]
    pid: int
    data_dir: Path


@contextmanager
def running_service(settings: Mapping[str, str] | None = None) -> Iterator[Running]:
    """``yieldagent run`` on free ports with a throwaway data dir (SQLite), one partner and
    one activated wallet holding 10,000 USDC; ``settings`` adds ``YIELDAGENT_*`` values."""
    http_port = _free_port()
    with tempfile.TemporaryDirectory() as directory:
        env = {
            **os.environ,
            "YIELDAGENT_DATA_DIR": directory,
            "YIELDAGENT_HTTP_PORT": str(http_port),
            "YIELDAGENT_GRPC_PORT": str(_free_port()),
            "YIELDAGENT_LOG_LEVEL": "WARNING",
            "YIELDAGENT_METRICS_PORT": "0",
            # Written as in production, to a file rather than this program's output.
            "YIELDAGENT_ENVOY_ACCESS_LOG": str(Path(directory) / "envoy-access.log"),
            # Keyed reads at 32 connections exceed the default per-partner limit: measure
            # the service, not the limiter's 429s (BENCH_RATE_LIMIT sets one to measure).
            "YIELDAGENT_PARTNER_RATE_LIMIT": os.environ.get("BENCH_RATE_LIMIT", "0"),
            # The load comes from one address: no per-client limits at the edge either.
            "YIELDAGENT_CLIENT_RATE_LIMIT": "0",
            **(settings or {}),
        }
        env.pop("YIELDAGENT_DATABASE_URL", None)
        server = subprocess.Popen(
            [sys.executable, "-m", "yieldagent", "run"],
            env=env,
            cwd=Path(__file__).resolve().parents[1],
        )
        try:
            base = f"http://127.0.0.1:{http_port}/api/v1"
            _wait(f"{base}/healthcheck")
            key = _yieldagent(env, "partner", "create", "bench")["api_key"]
            keyed = {"X-Partner-Name": "bench", "X-Partner-API-Key": key}
            request = urllib.request.Request(  # noqa: S310 (loopback only)
                f"{base}/proxy/zerodev/smart-accounts",
                method="POST",
                headers=keyed,
                data=json.dumps({"eoa": OWNER, "chain": 8453}).encode(),
            )
            account = json.loads(urllib.request.urlopen(request).read())["smartAccount"]  # noqa: S310
            deposit = _yieldagent(
                env,
                "sim",
                "deposit",
                "--chain",
                "8453",
                "--token",
                BASE_USDC,
                "--from",
                OWNER,
                "--to",
                account,
                "--amount",
                "10000000000",
            )
            activation = urllib.request.Request(  # noqa: S310 (loopback only)
                f"{base}/8453/wallets",
                method="POST",
                headers=keyed,
                data=json.dumps(
                    {
                        "wallet": account,
                        "eoa": OWNER,
                        "initial_token": BASE_USDC,
                        "selected_protocols": ["aave", "compound"],
                        "tx_hash": deposit["tx_hash"],
                    }
                ).encode(),
            )
            urllib.request.urlopen(activation).read()  # noqa: S310
            yield Running(base, env, account, keyed, server.pid, Path(directory))
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(30)


def main() -> None:
    wrk = _wrk()
    with running_service() as service:
        base, account, keyed = service.base, service.account, service.keyed
        reads = {
            "chains (constant)": (f"{base}/chains", {}),
            "healthcheck (1 db ping)": (f"{base}/healthcheck", {}),
            "protocols (catalog)": (f"{base}/8453/{BASE_USDC}/protocols", {}),
            "wallet read (public, the partners' poll)": (f"{base}/8453/wallets/{account}", {}),
            "transaction page (auth + 2 reads)": (
                f"{base}/8453/wallets/{account}/transactions",
                keyed,
            ),
            "smart account lookup (auth + 1 read)": (
                f"{base}/proxy/zerodev/smart-accounts?eoa={OWNER}&chain=8453",
                keyed,
            ),
        }
        for name, (url, headers) in reads.items():
            figures = _measure(wrk, url, headers)
            print(
                json.dumps(
                    {
                        "benchmark": "rest_reads",
                        "read": name,
                        "connections": int(CONNECTIONS),
                        **figures,
                    }
                )
            )
