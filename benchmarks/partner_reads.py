"""The partners' poll, side by side: ``GET /api/v1/8453/wallets/{w}`` through our Envoy
against a FastAPI app reading the same wallet and against the edge's ceiling.

Three stacks on this machine, measured in turns (``BENCH_ROUNDS`` rounds, wrk at
``BENCH_CONNECTIONS`` connections for ``BENCH_DURATION`` each), so that drift in the
machine's load hits all three alike:

- **ours**: ``yieldagent run`` (Envoy → grpc.aio → storage), SQLite;
- **fastapi**: ``benchmarks.fastapi_wallet`` on uvicorn, one SQLAlchemy Core primary-key
  read of the same row from the same database file, on the event loop (``async def``);
  **fastapi_threadpool** is the same read as a plain ``def`` (FastAPI's thread pool);
- **ceiling**: a bare grpc.aio server answering ``GET /api/v1/chains`` with a constant,
  behind an Envoy rendered from our own config (``benchmarks.constant_edge``): every
  request reaches it;
- **ours_no_cache**: ours with ``Cache-Control: no-cache``, so that every read reaches
  the service (what the edge cache saves).

Prints each stack's median figures and the ratios ours/fastapi and ours/ceiling, each the
median of the per-round ratios. ``BENCH_PROFILE=DIR`` also records a py-spy profile of
our server under the same load (``DIR/partner_read.txt``, collapsed stacks).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from benchmarks.rest_reads import DURATION, _free_port, _measure, _wait, _wrk, running_service
from yieldagent.config import load_settings
from yieldagent.service.edge import EnvoyProcess

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def _process(command: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(command, env=env, cwd=ROOT)
    try:
        yield process
    finally:
        process.terminate()
        process.wait(30)


@contextmanager
def _ceiling() -> Iterator[str]:
    """The constant server behind its own Envoy; yields the read's URL there."""
    grpc_port, http_port = _free_port(), _free_port()
    with (
        tempfile.TemporaryDirectory() as directory,
        _process(
            [sys.executable, "-m", "benchmarks.constant_edge", str(grpc_port)], {**os.environ}
        ),
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
            yield url
        finally:
            envoy.stop()


@contextmanager
def _fastapi(database: Path, path: str) -> Iterator[tuple[str, str]]:
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "benchmarks.fastapi_wallet:app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
        "--no-access-log",
    ]
    env = {**os.environ, "BENCH_DATABASE_URL": f"sqlite:///{database}"}
    with _process(command, env):
        url = f"http://127.0.0.1:{port}{path}"
        _wait(url)
        yield url, f"http://127.0.0.1:{port}/threadpool{path}"


def _profile(pid: int, wrk: str, url: str, directory: str) -> None:
    out = Path(directory) / "partner_read.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    seconds = DURATION.removesuffix("s")
    spy = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("py-spy")),
            "record",
            "--pid",
            str(pid),
            "--duration",
            seconds,
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
    _measure(wrk, url, {})
    spy.wait(60)


def main() -> None:
    wrk = _wrk()
    with running_service() as service, ExitStack() as stack:
        path = f"/api/v1/8453/wallets/{service.account}"
        fastapi, fastapi_threadpool = stack.enter_context(
            _fastapi(service.data_dir / "yieldagent.db", path)
        )
        urls = {
            "ceiling": stack.enter_context(_ceiling()),
            "ours": f"{service.base}/8453/wallets/{service.account}",
            "fastapi": fastapi,
            "fastapi_threadpool": fastapi_threadpool,
        }
        headers = {"ours_no_cache": {"Cache-Control": "no-cache"}}
        urls["ours_no_cache"] = urls["ours"]
        rounds: list[dict[str, dict[str, float]]] = []
        for _ in range(ROUNDS):
            rounds.append(
                {name: _measure(wrk, url, headers.get(name, {})) for name, url in urls.items()}
            )
        for name in urls:
            print(
                json.dumps(
                    {
                        "benchmark": "partner_reads",
                        "stack": name,
                        "rounds": ROUNDS,
                        **{
                            figure: statistics.median(r[name][figure] for r in rounds)
                            for figure in ("requests_per_second", "p50_ms", "p99_ms", "errors")
                        },
                    }
                )
            )

        def ratio(figure: str, a: str, b: str) -> float:
            return round(statistics.median(r[a][figure] / r[b][figure] for r in rounds), 3)

        print(
            json.dumps(
                {
                    "benchmark": "partner_reads",
                    "ratio": "same run, median of rounds",
                    "ours_over_fastapi_rps": ratio("requests_per_second", "ours", "fastapi"),
                    "ours_over_fastapi_p99": ratio("p99_ms", "ours", "fastapi"),
                    "ours_over_fastapi_threadpool_rps": ratio(
                        "requests_per_second", "ours", "fastapi_threadpool"
                    ),
                    "ours_over_fastapi_threadpool_p99": ratio(
                        "p99_ms", "ours", "fastapi_threadpool"
                    ),
                    "ours_over_ceiling_rps": ratio("requests_per_second", "ours", "ceiling"),
                    "ours_no_cache_over_fastapi_rps": ratio(
                        "requests_per_second", "ours_no_cache", "fastapi"
                    ),
                    "ours_no_cache_over_ceiling_rps": ratio(
                        "requests_per_second", "ours_no_cache", "ceiling"
                    ),
                }
            )
        )
        profile = os.environ.get("BENCH_PROFILE")
        if profile:
            _profile(service.pid, wrk, urls["ours"], profile)


if __name__ == "__main__":
    main()
