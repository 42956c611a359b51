"""A counting JSON-RPC proxy for benchmarks: what a client asked a node, by HTTP request and
by method.

``RpcCounter(upstream).start()`` listens on a free local port and forwards every POST body
unchanged to ``upstream`` (keeping one connection per client connection), counting the HTTP
requests and, inside each (a JSON-RPC batch counts each of its entries), the calls by
method. ``snapshot()`` gives the counts so far; ``reset()`` zeroes them.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

TRANSACTIONS = frozenset({"eth_sendRawTransaction", "eth_sendTransaction"})


@dataclass(frozen=True)
class RpcCounts:
    """HTTP requests, and JSON-RPC calls by method."""

    requests: int = 0
    methods: dict[str, int] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        """Every JSON-RPC call, batched or not."""
        return sum(self.methods.values())

    @property
    def eth_calls(self) -> int:
        """``eth_call`` reads."""
        return self.methods.get("eth_call", 0)

    @property
    def transactions(self) -> int:
        """Transactions broadcast (raw or node-signed)."""
        return sum(n for method, n in self.methods.items() if method in TRANSACTIONS)

    def minus(self, earlier: RpcCounts) -> RpcCounts:
        """What was counted since ``earlier``."""
        methods = Counter(self.methods)
        methods.subtract(earlier.methods)
        return RpcCounts(
            self.requests - earlier.requests, {m: n for m, n in sorted(methods.items()) if n}
        )


class RpcCounter:
    """The proxy (see the module's docstring)."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or 80
        self._path = parts.path or "/"
        self._lock = threading.Lock()
        self._requests = 0
        self._methods: Counter[str] = Counter()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The proxy's own URL."""
        assert self._server is not None, "not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> RpcCounter:
        """Listens on a free port of 127.0.0.1, in a daemon thread."""
        counter = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            upstream: http.client.HTTPConnection | None = None

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                counter._count(body)
                if self.upstream is None:
                    self.upstream = http.client.HTTPConnection(
                        counter._host, counter._port, timeout=120
                    )
                self.upstream.request(
                    "POST", counter._path, body, {"Content-Type": "application/json"}
                )
                answer = self.upstream.getresponse().read()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def _count(self, body: bytes) -> None:
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        entries = payload if isinstance(payload, list) else [payload]
        methods = [e.get("method", "?") if isinstance(e, dict) else "?" for e in entries]
        with self._lock:
            self._requests += 1
            self._methods.update(methods)

    def snapshot(self) -> RpcCounts:
        """The counts so far."""
        with self._lock:
            return RpcCounts(self._requests, dict(self._methods))

    def reset(self) -> None:
        """Zeroes the counts."""
        with self._lock:
            self._requests = 0
            self._methods.clear()

    def stop(self) -> None:
        """Stops listening."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
