"""A node that fails as a test scripts it: an in-process aiohttp server in front of a real
node (the test's anvil), on the test's own event loop.

``FlakyNode(upstream)`` forwards every POST body unchanged, until ``script(method, ...)``
says how the next requests carrying ``method`` fail, one ``Failure`` each, in order:

- ``RATE_LIMITED``: HTTP 429 with ``Retry-After`` (``retry_after`` seconds) and a JSON-RPC
  error body that names the node's URL;
- ``UNAVAILABLE``: HTTP 503 with an HTML body, as a load balancer answers;
- ``DROPPED``: the connection closed at once, nothing forwarded;
- ``TIMEOUT``: nothing forwarded and no answer, until the client gives up;
- ``ERROR_BODY``: HTTP 200 with a JSON-RPC error (-32603, "internal error at <url>");
- ``FORWARDED_THEN_DROPPED`` and ``FORWARDED_THEN_TIMEOUT``: the node gets the request and
  acts on it, and its answer is lost on the way back.

Each scripted failure may run a callback when it fires (``on_fail``: what the chain does
meanwhile, e.g. another holder of the key mining a transaction). The node notes every
request it got (``asked``) and which of them reached the upstream node (``forwarded``).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import socket
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import ClientSession, web


class Failure(enum.Enum):
    """How a scripted request fails."""

    RATE_LIMITED = "429"
    UNAVAILABLE = "503"
    DROPPED = "drop"
    TIMEOUT = "timeout"
    ERROR_BODY = "error"
    FORWARDED_THEN_DROPPED = "forwarded-drop"
    FORWARDED_THEN_TIMEOUT = "forwarded-timeout"

    @property
    def forwards(self) -> bool:
        """Whether the node gets the request before its answer is lost."""
        return self in (Failure.FORWARDED_THEN_DROPPED, Failure.FORWARDED_THEN_TIMEOUT)


@dataclass(slots=True)
class _Scripted:
    failure: Failure
    on_fail: Callable[[dict[str, Any]], None] | None = None


@dataclass
class FlakyNode:
    """The scripted node (see the module's docstring)."""

    upstream: str
    retry_after: int = 2
    hang_seconds: float = 10.0
    """How long a ``TIMEOUT`` holds a request: longer than the client waits."""
    asked: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """Every JSON-RPC call received, (method, the whole request)."""
    forwarded: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """The calls that reached the upstream node."""
    failed: list[tuple[str, Failure]] = field(default_factory=list)
    _scripts: dict[str, list[_Scripted]] = field(default_factory=lambda: defaultdict(list))
    _runner: web.AppRunner | None = None
    _session: ClientSession | None = None
    _closing: asyncio.Event = field(default_factory=asyncio.Event)
    _port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def script(
        self,
        method: str,
        *failures: Failure,
        on_fail: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        """The next requests carrying ``method`` fail as ``failures`` say, in order."""
        self._scripts[method].extend(_Scripted(f, on_fail) for f in failures)

    def forwarded_of(self, method: str) -> list[dict[str, Any]]:
        """The requests of ``method`` that reached the upstream node."""
        return [request for m, request in self.forwarded if m == method]

    async def start(self) -> FlakyNode:
        self._session = ClientSession()
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        listening = socket.socket()
        listening.bind(("127.0.0.1", 0))
        self._port = int(listening.getsockname()[1])
        await web.SockSite(self._runner, listening).start()
        return self

    async def stop(self) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        payload = json.loads(body)
        calls = payload if isinstance(payload, list) else [payload]
        methods = [str(call.get("method")) for call in calls]
        self.asked.extend(zip(methods, calls, strict=True))
        scripted = next((self._scripts[m].pop(0) for m in methods if self._scripts.get(m)), None)
        if scripted is not None:
            self.failed.append((methods[0], scripted.failure))
            if scripted.on_fail is not None:
                scripted.on_fail(calls[0])
        if scripted is None or scripted.failure.forwards:
            status, answer = await self._forward(body)
            self.forwarded.extend(zip(methods, calls, strict=True))
            if scripted is None:
                return web.Response(status=status, body=answer, content_type="application/json")
        assert scripted is not None
        return await self._fail(request, scripted.failure, payload)

    async def _forward(self, body: bytes) -> tuple[int, bytes]:
        assert self._session is not None
        async with self._session.post(
            self.upstream, data=body, headers={"Content-Type": "application/json"}
        ) as answer:
            return answer.status, await answer.read()

    async def _fail(
        self, request: web.Request, failure: Failure, payload: Any
    ) -> web.StreamResponse:
        if failure is Failure.RATE_LIMITED:
            error = {"code": 429, "message": f"over the limit at {request.url}"}
            return web.json_response(
                {"jsonrpc": "2.0", "id": None, "error": error},
                status=429,
                headers={"Retry-After": str(self.retry_after)},
            )
        if failure is Failure.UNAVAILABLE:
            return web.Response(
                status=503, text="<html><body>503 Service Unavailable</body></html>"
            )
        if failure is Failure.ERROR_BODY:
            entries = payload if isinstance(payload, list) else [payload]
            errors = [
                {
                    "jsonrpc": "2.0",
                    "id": entry.get("id"),
                    "error": {"code": -32603, "message": f"internal error at {request.url}"},
                }
                for entry in entries
            ]
            return web.json_response(errors if isinstance(payload, list) else errors[0])
        if failure in (Failure.TIMEOUT, Failure.FORWARDED_THEN_TIMEOUT):
            # held until the client gave up (or the node stops), then closed unanswered
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), self.hang_seconds)
        transport = request.transport
        if transport is not None:
            transport.abort()
        return web.Response(status=204)
