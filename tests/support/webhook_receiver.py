"""A webhook receiver on 127.0.0.1 for tests: records every request it gets and answers
what the test scripted (an HTTP status, or a hang until released); it can be stopped (the
port then refuses connections) and started again on the same port."""

from __future__ import annotations

import hmac
import json
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from yieldagent.webhooks.signing import SIGNATURE_HEADER, digest

HANG = -1
"""A scripted answer: hold the request until ``release`` is called."""
ENDLESS = -2
"""A scripted answer: 200 with a body that never ends (written until the client leaves)."""


def verify(secret: str, header: str, body: bytes, now: float, tolerance: float = 300) -> bool:
    """Whether ``header`` signs ``body`` with ``secret``, at most ``tolerance`` seconds from
    ``now`` (what a receiver checks)."""
    fields: dict[str, list[str]] = {}
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        fields.setdefault(name, []).append(value)
    try:
        timestamp = int(fields["t"][0])
    except (KeyError, ValueError):
        return False
    if abs(now - timestamp) > tolerance:
        return False
    expected = digest(secret, timestamp, body)
    return any(hmac.compare_digest(expected, given) for given in fields.get("v1", []))


@dataclass(frozen=True, slots=True)
class Received:
    """One request, and the status it was answered (None: it was held, never answered)."""

    headers: dict[str, str]
    body: bytes
    status: int | None

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def event_id(self) -> int:
        return int(self.json()["id"])

    def signed_by(self, secret: str, now: float) -> bool:
        return verify(secret, self.headers[SIGNATURE_HEADER.lower()], self.body, now)


class Receiver:
    """Answers each POST with the next scripted status (200 once the script is used up)."""

    def __init__(self, port: int = 0) -> None:
        self.received: list[Received] = []
        self.held: list[Received] = []
        """Requests held (scripted HANG), never answered; not in ``received``."""
        self.script: deque[int] = deque()
        self.arrived = threading.Condition()
        self.abandoned = threading.Event()
        """Set when a client left an ENDLESS answer unread."""
        self._release = threading.Event()
        self._port = port
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}/hooks/yieldagent"

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {k.lower(): v for k, v in self.headers.items()}
                with receiver.arrived:
                    status = receiver.script.popleft() if receiver.script else 200
                if status == HANG:
                    with receiver.arrived:
                        receiver.held.append(Received(headers, body, None))
                        receiver.arrived.notify_all()
                    receiver._release.wait(30)
                    return
                if status == ENDLESS:
                    receiver._record(Received(headers, body, 200))
                    self.send_response(200)
                    self.send_header("Content-Length", str(2**40))
                    self.end_headers()
                    chunk = b"x" * 65_536
                    try:
                        while not receiver._release.is_set():
                            self.wfile.write(chunk)
                    except OSError:  # the client closed the connection
                        receiver.abandoned.set()
                    return
                receiver._record(Received(headers, body, status))
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        ThreadingHTTPServer.request_queue_size = 128  # concurrent posts: no SYN retries
        self._server = ThreadingHTTPServer(("127.0.0.1", self._port), Handler)
        self._server.daemon_threads = True
        self._port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def _record(self, received: Received) -> None:
        with self.arrived:
            self.received.append(received)
            self.arrived.notify_all()

    def release(self) -> None:
        """Lets held requests end (without an answer)."""
        self._release.set()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def wait_for(self, count: int, timeout: float = 20) -> list[Received]:
        """The accepted (2xx) requests, once there are ``count`` of them."""
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.accepted()) >= count, timeout)
            return self.accepted()

    def wait_held(self, timeout: float = 20) -> bool:
        """Whether a request is held (now or before), waiting up to ``timeout``."""
        with self.arrived:
            return self.arrived.wait_for(lambda: bool(self.held), timeout)

    def accepted(self) -> list[Received]:
        return [r for r in self.received if r.status is not None and 200 <= r.status < 300]
