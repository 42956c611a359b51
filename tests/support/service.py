"""The whole service (gRPC server, worker, real Envoy) in a background thread, for tests."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.client import HTTPConnection
from pathlib import Path
from typing import Any

from yieldagent.composition.compose import Service
from yieldagent.config import load_settings


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Response:
    """An HTTP response as a test sees it."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def error(self) -> Any:
        """An error body less its ``request_id``, which must be the response's
        ``x-request-id`` (Envoy's id of the request)."""
        body = self.json()
        assert body.pop("request_id") == self.headers["x-request-id"], (body, self.headers)
        return body


@dataclass(frozen=True)
class RunningService:
    """Where a started service answers."""

    http_port: int
    grpc_target: str
    database_url: str
    data_dir: Path
    metrics_port: int | None = None
    """Where ``/metrics`` answers (None: not served)."""
    serving: Mapping[int, int] = field(default_factory=dict)
    """The process id serving each port of Envoy's gRPC cluster, by port."""

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        raw: bytes | None = None,
    ) -> Response:
        """Sends one REST request to the Envoy edge; ``body`` is sent as JSON."""
        payload = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        sent = dict(headers or {})
        if payload is not None:
            sent.setdefault("Content-Type", "application/json")
        connection = HTTPConnection("127.0.0.1", self.http_port, timeout=30)
        try:
            connection.request(method, path, body=payload, headers=sent)
            reply = connection.getresponse()
            return Response(
                reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read()
            )
        finally:
            connection.close()


@contextmanager
def running_service(
    database_url: str, data_dir: Path, env: Mapping[str, str] | None = None
) -> Iterator[RunningService]:
    """Starts the service with Envoy in a thread of its own; stops it afterwards.

    ``env`` adds or overrides settings (``YIELDAGENT_*`` variables).

    The REST port is one that was free a moment ago; the gRPC server, which binds port 0
    before Envoy starts, can be handed that very port, and REST calls would then reach it.
    Such a start is stopped and made again on other ports.
    """
    for _ in range(3):
        with _started(database_url, data_dir, env) as service:
            if not service.grpc_target.endswith(f":{service.http_port}"):
                yield service
                return
    raise RuntimeError("the gRPC server took the REST port three times")


@contextmanager
def _started(
    database_url: str, data_dir: Path, env: Mapping[str, str] | None
) -> Iterator[RunningService]:
    http_port = free_port()
    settings = load_settings(
        {
            "YIELDAGENT_DATA_DIR": str(data_dir),
            "YIELDAGENT_DATABASE_URL": database_url,
            "YIELDAGENT_HTTP_PORT": str(http_port),
            "YIELDAGENT_GRPC_PORT": "0",
            "YIELDAGENT_SHUTDOWN_GRACE_SECONDS": "1",
            "YIELDAGENT_SIM_SPEED": "0",
            "YIELDAGENT_METRICS_PORT": "0",
            "YIELDAGENT_ENVOY_ADMIN_PORT": "0",
            # Unlimited: suites that hammer one partner (the property tests) must not
            # depend on the machine's speed. tests/rest/test_operating.py sets a limit.
            "YIELDAGENT_PARTNER_RATE_LIMIT": "0",
            # The same for the per-wallet limit on money calls (tests/rest/test_money_limits.py
            # sets it).
            "YIELDAGENT_WALLET_MONEY_CALLS_PER_MINUTE": "0",
            # Every test calls from 127.0.0.1, many with wrong keys on purpose: no per-client
            # limits (tests/rest/test_client_limits.py sets them).
            "YIELDAGENT_CLIENT_RATE_LIMIT": "0",
            # A file the tests read, rather than the test process's standard output.
            "YIELDAGENT_ENVOY_ACCESS_LOG": str(data_dir / "envoy-access.log"),
            **(env or {}),
        }
    )
    started = threading.Event()
    state: dict[str, Any] = {}

    async def main() -> None:
        service = Service(settings, with_edge=True)
        state["loop"] = asyncio.get_running_loop()
        state["stop"] = asyncio.Event()
        try:
            await service.start()
            state["grpc_port"] = service.grpc_port
            state["metrics_port"] = service.metrics.port if service.metrics else None
            state["serving"] = service.serving
        except BaseException as error:
            state["error"] = error
            started.set()
            await service.stop()
            return
        started.set()
        await state["stop"].wait()
        await service.stop()

    thread = threading.Thread(target=asyncio.run, args=(main(),), name="service", daemon=True)
    thread.start()
    if not started.wait(60):
        raise TimeoutError("the service did not start")
    if "error" in state:
        raise RuntimeError("the service failed to start") from state["error"]
    try:
        yield RunningService(
            http_port,
            f"127.0.0.1:{state['grpc_port']}",
            database_url,
            data_dir,
            state["metrics_port"],
            state["serving"],
        )
    finally:
        state["loop"].call_soon_threadsafe(state["stop"].set)
        thread.join(30)
