"""A JSON-RPC proxy for benchmarks and tests: a node as far away, as counted and as
unreliable as a hosted one, in front of anvil.

``RpcProxy(upstream).start()`` listens on a free port of 127.0.0.1 and forwards every POST
body unchanged to ``upstream``, from an event loop in a thread of its own (so synchronous
and asynchronous callers alike can use it). Each request waits ``round_trip`` seconds in
all (half before it is forwarded, half after), as a node tens of milliseconds away does.

It counts what a provider bills (``counts()``, ``RpcCounts``): HTTP requests (a JSON-RPC
batch is one request with N calls), calls by method, ``eth_call``s, and inside each
``eth_call`` to Multicall3 (``aggregate``, ``tryAggregate``, ``aggregate3`` and their
kin) how many calls it carried.

``fail(kind, share, seconds)`` makes it refuse a share of the requests for a time window,
as a provider over its plan or in trouble does (``Failure``):

- ``429``: HTTP 429 with ``Retry-After`` (whole seconds) and a JSON-RPC error body;
- ``5xx``: HTTP 503 with an HTML body, as a load balancer answers;
- ``timeout``: no answer for ``hang_seconds``, then the connection is closed;
- ``drop``: the connection closed at once, nothing answered;
- ``error``: HTTP 200 with a JSON-RPC error for each call (code -32603, "internal error").

Which requests fail is drawn from a seeded generator, so a run can be repeated.
"""

from __future__ import annotations

import asyncio
import enum
import json
import random
import socket
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import ClientSession, ClientTimeout, web

MULTICALL3 = "0xca11bde05977b3631167028862be2a173976ca11"
TRANSACTIONS = frozenset({"eth_sendRawTransaction", "eth_sendTransaction"})
AGGREGATES = {
    "252dba42": 0,  # aggregate((address,bytes)[])
    "c3077fa9": 0,  # blockAndAggregate((address,bytes)[])
    "82ad56cb": 0,  # aggregate3((address,bool,bytes)[])
    "174dea71": 0,  # aggregate3Value((address,bool,uint256,bytes)[])
    "bce38bd7": 1,  # tryAggregate(bool,(address,bytes)[])
    "399542e9": 1,  # tryBlockAndAggregate(bool,(address,bytes)[])
}
"""Multicall3's batching selectors, and which argument holds the array of calls."""
DEFAULT_ROUND_TRIP = 0.050


class Failure(enum.StrEnum):
    """How a refused request is answered."""

    RATE_LIMITED = "429"
    UNAVAILABLE = "5xx"
    TIMEOUT = "timeout"
    DROPPED = "drop"
    ERROR_BODY = "error"


@dataclass(frozen=True)
class RpcCounts:
    """What clients asked of the node through the proxy."""

    requests: int = 0
    """HTTP requests (a batch is one)."""
    methods: dict[str, int] = field(default_factory=dict)
    """JSON-RPC calls by method (each entry of a batch counts)."""
    multicalls: int = 0
    """``eth_call``s to Multicall3's batching functions."""
    inner_calls: int = 0
    """The calls those Multicall3 ``eth_call``s carried."""
    failures: dict[str, int] = field(default_factory=dict)
    """Requests refused, by ``Failure``."""

    @property
    def calls(self) -> int:
        """Every JSON-RPC call, batched or not."""
        return sum(self.methods.values())

    @property
    def eth_calls(self) -> int:
        """``eth_call`` reads (a Multicall3 aggregate counts once)."""
        return self.methods.get("eth_call", 0)

    @property
    def reads(self) -> int:
        """Contract reads the node made: each ``eth_call``, a Multicall3 aggregate counting
        for the calls inside it."""
        return self.eth_calls - self.multicalls + self.inner_calls

    @property
    def transactions(self) -> int:
        """Transactions broadcast (raw or node-signed)."""
        return sum(n for method, n in self.methods.items() if method in TRANSACTIONS)

    def minus(self, earlier: RpcCounts) -> RpcCounts:
        """What was counted since ``earlier``."""
        return RpcCounts(
            self.requests - earlier.requests,
            _difference(self.methods, earlier.methods),
            self.multicalls - earlier.multicalls,
            self.inner_calls - earlier.inner_calls,
            _difference(self.failures, earlier.failures),
        )


def _difference(now: dict[str, int], then: dict[str, int]) -> dict[str, int]:
    left = Counter(now)
    left.subtract(then)
    return {key: n for key, n in sorted(left.items()) if n}


def inner_calls(call: Any) -> int | None:
    """How many calls an ``eth_call``'s params carry into Multicall3, or None when it is no
    Multicall3 batch."""
    if not isinstance(call, list) or not call or not isinstance(call[0], dict):
        return None
    target = str(call[0].get("to") or "").lower()
    data = str(call[0].get("data") or call[0].get("input") or "").removeprefix("0x")
    argument = AGGREGATES.get(data[:8])
    if target != MULTICALL3 or argument is None:
        return None
    try:
        words = bytes.fromhex(data[8:])
    except ValueError:
        return None
    if len(words) < 32 * argument + 32:
        return None
    offset = int.from_bytes(words[32 * argument : 32 * argument + 32], "big")
    if offset + 32 > len(words):
        return None
    return int.from_bytes(words[offset : offset + 32], "big")


@dataclass(slots=True)
class _Window:
    kind: Failure
    share: float
    until: float
    retry_after: int
    hang_seconds: float


class RpcProxy:
    """The proxy (see the module's docstring)."""

    def __init__(
        self,
        upstream: str,
        *,
        round_trip: float = DEFAULT_ROUND_TRIP,
        seed: int = 0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.upstream = upstream
        self.round_trip = round_trip
        self._sleep = sleep
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._requests = 0
        self._methods: Counter[str] = Counter()
        self._multicalls = 0
        self._inner = 0
        self._failures: Counter[str] = Counter()
        self._windows: list[_Window] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._session: ClientSession | None = None
        self._port = 0

    # -- control ---------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The proxy's own URL."""
        if not self._port:
            raise RuntimeError("the proxy is not started")
        return f"http://127.0.0.1:{self._port}"

    def start(self) -> RpcProxy:
        """Listens on a free port of 127.0.0.1, from a daemon thread's event loop."""
        ready = threading.Event()
        failed: list[BaseException] = []

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._open())
            except BaseException as error:  # handed to start()'s caller
                failed.append(error)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._close())
            loop.close()

        self._thread = threading.Thread(target=serve, name="rpc-proxy", daemon=True)
        self._thread.start()
        ready.wait()
        if failed:
            raise failed[0]
        return self

    def stop(self) -> None:
        """Stops listening and closes the upstream connections."""
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
        self._loop = self._thread = None
        self._port = 0

    def __enter__(self) -> RpcProxy:
        return self.start() if not self._port else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def fail(
        self,
        kind: Failure | str,
        share: float,
        seconds: float,
        *,
        retry_after: int = 1,
        hang_seconds: float = 30.0,
    ) -> None:
        """Refuses ``share`` (0 to 1) of the requests as ``kind`` for the next ``seconds``
        (windows may overlap: the first that draws a request refuses it)."""
        if not 0 <= share <= 1 or seconds < 0:
            raise ValueError("share lies between 0 and 1, and seconds is not negative")
        window = _Window(
            Failure(kind), share, time.monotonic() + seconds, retry_after, hang_seconds
        )
        with self._lock:
            self._windows.append(window)

    def heal(self) -> None:
        """Ends every failure window now."""
        with self._lock:
            self._windows.clear()

    def counts(self) -> RpcCounts:
        """The counts so far."""
        with self._lock:
            return RpcCounts(
                self._requests,
                dict(sorted(self._methods.items())),
                self._multicalls,
                self._inner,
                dict(sorted(self._failures.items())),
            )

    snapshot = counts

    def reset(self) -> None:
        """Zeroes the counts."""
        with self._lock:
            self._requests = self._multicalls = self._inner = 0
            self._methods.clear()
            self._failures.clear()

    # -- serving ---------------------------------------------------------------------

    async def _open(self) -> None:
        self._session = ClientSession(timeout=ClientTimeout(total=300))
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        listening = socket.socket()
        listening.bind(("127.0.0.1", 0))
        self._port = int(listening.getsockname()[1])
        await web.SockSite(self._runner, listening).start()

    async def _close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        payload = self._count(body)
        half = self.round_trip / 2
        if half:
            await self._sleep(half)
        window = self._drawn()
        if window is not None:
            with self._lock:
                self._failures[window.kind] += 1
            return await self._refuse(request, window, payload)
        assert self._session is not None
        async with self._session.post(
            self.upstream, data=body, headers={"Content-Type": "application/json"}
        ) as answer:
            status, data = answer.status, await answer.read()
        if half:
            await self._sleep(half)
        return web.Response(status=status, body=data, content_type="application/json")

    def _drawn(self) -> _Window | None:
        """The failure window that refuses this request, if one does."""
        now = time.monotonic()
        with self._lock:
            self._windows = [w for w in self._windows if w.until > now]
            for window in self._windows:
                if self._random.random() < window.share:
                    return window
        return None

    async def _refuse(
        self, request: web.Request, window: _Window, payload: Any
    ) -> web.StreamResponse:
        kind = window.kind
        if kind is Failure.RATE_LIMITED:
            error = {"code": 429, "message": "Your app has exceeded its compute units per second"}
            return web.json_response(
                {"jsonrpc": "2.0", "id": None, "error": error},
                status=429,
                headers={"Retry-After": str(window.retry_after)},
            )
        if kind is Failure.UNAVAILABLE:
            return web.Response(
                status=503, text="<html><body>503 Service Unavailable</body></html>"
            )
        if kind is Failure.ERROR_BODY:
            entries = payload if isinstance(payload, list) else [payload]
            errors = [
                {
                    "jsonrpc": "2.0",
                    "id": e.get("id") if isinstance(e, dict) else None,
                    "error": {"code": -32603, "message": "internal error"},
                }
                for e in entries
            ]
            return web.json_response(errors if isinstance(payload, list) else errors[0])
        if kind is Failure.TIMEOUT:
            await asyncio.sleep(window.hang_seconds)
        transport = request.transport
        if transport is not None:
            transport.abort()  # closed with nothing answered; aiohttp writes nothing more
        return web.Response(status=204)

    def _count(self, body: bytes) -> Any:
        """Counts one request's calls; returns its parsed JSON (None if it is none)."""
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        entries = payload if isinstance(payload, list) else [payload]
        methods: list[str] = []
        multicalls = inner = 0
        for entry in entries:
            method = entry.get("method", "?") if isinstance(entry, dict) else "?"
            methods.append(str(method))
            if method == "eth_call":
                carried = inner_calls(entry.get("params"))
                if carried is not None:
                    multicalls += 1
                    inner += carried
        with self._lock:
            self._requests += 1
            self._methods.update(methods)
            self._multicalls += multicalls
            self._inner += inner
        return payload


@contextmanager
def proxied(upstream: str, **options: Any) -> Iterator[RpcProxy]:
    """An ``RpcProxy`` in front of ``upstream``, stopped on exit."""
    proxy = RpcProxy(upstream, **options).start()
    try:
        yield proxy
    finally:
        proxy.stop()
