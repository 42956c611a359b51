"""A failing node's URL, with the provider's API key in it, and its words reach no one.

The node answers every request 429 or 500, with a body that repeats its key, or answers
every call with a JSON-RPC error in words of its own that quote its URL (a revert without
data, a refused request); the service reaches it through a URL that carries a key in its
path and another in its query, as providers' URLs do. A public read and a partner's agent
run go through it. Neither key nor the node's words may appear in a reply, an event, a
wallet's ``status_reason``, the database or a log line.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import secrets
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from eth_account import Account
from sqlalchemy import MetaData, select

from support.service import RunningService, running_service
from support.wallet_setup import BASE, BASE_USDC, activated, make_lifecycle
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.chain import SimulatedChain
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.composition.deployments import Manifest, ProtocolDeployment
from yieldagent.domain.errors import NODE_DID_NOT_ANSWER
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.simulation import SimulationStore

PATH_KEY = "pathkey" + secrets.token_hex(12)
QUERY_KEY = "querykey" + secrets.token_hex(12)
WORDS = "secret-words-xyz"
KEYS = (PATH_KEY, QUERY_KEY, WORDS)


class _FailingNode(BaseHTTPRequestHandler):
    """Tells the latest block (so that a run gets past its first read), and answers every
    other request 429 or 500 in turn, each with a body that names the key."""

    answers = itertools.cycle((429, 500))

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        if isinstance(request, dict) and request.get("method") == "eth_getBlockByNumber":
            block = {"number": "0x10", "timestamp": hex(int(time.time()))}
            self._answer(200, {"jsonrpc": "2.0", "id": request["id"], "result": block})
            return
        self._answer(next(self.answers), {"error": f"over the limit of {PATH_KEY} ({self.path})"})

    def _answer(self, status: int, answer: object) -> None:
        body = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Retry-After", "1")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


class _WordyNode(_FailingNode):
    """Tells the latest block, and answers every other call, alone or in a batch, with a
    JSON-RPC error whose message quotes the node's URL: a revert without data and a
    refusal of the request (not asked again) in turn."""

    said = itertools.cycle(((3, "execution reverted"), (-32602, "invalid argument 0")))

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        calls = request if isinstance(request, list) else [request]
        answers = [self._call(call) for call in calls]
        self._answer(200, answers if isinstance(request, list) else answers[0])

    def _call(self, call: dict[str, object]) -> dict[str, object]:
        if call.get("method") == "eth_getBlockByNumber":
            block = {"number": "0x10", "timestamp": hex(int(time.time()))}
            return {"jsonrpc": "2.0", "id": call["id"], "result": block}
        code, words = next(self.said)
        error = {
            "code": code,
            "message": f"{words}: {WORDS} at http://{self.headers['Host']}{self.path}",
        }
        return {"jsonrpc": "2.0", "id": call["id"], "error": error}


@pytest.fixture(params=[_FailingNode, _WordyNode], ids=["http errors", "node's words"])
def failing_node(request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of a node that fails every request, with keys in its path and query."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), request.param)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v2/{PATH_KEY}?apikey={QUERY_KEY}"
    server.shutdown()
    server.server_close()


def _no_key(text: str, where: str) -> None:
    for key in KEYS:
        assert key not in text, f"the node's key is in {where}: {text[:2000]}"


def _prepare(directory: Path) -> tuple[str, dict[str, str], str]:
    """A database with a partner and an activated wallet on Base (set up on the simulated
    chain), and a deployment manifest for Base: the database URL, the partner's headers
    and the wallet's address."""
    url = f"sqlite:///{directory / 'yieldagent.db'}"
    engine = create_db_engine(url)
    migrate(engine)
    market = SimulatedMarket(SimulationStore(engine), load_catalog(), 7, speed=0.0)
    market.start()
    partner, key = PartnerStore(engine).create("redaction", PERMISSIONS)
    lifecycle = make_lifecycle(engine, {BASE: SimulatedChain(market, BASE)})
    wallet = asyncio.run(activated(lifecycle, engine, market, partner.id, 1_000 * 10**6))
    engine.dispose()
    Manifest(
        chain_id=BASE,
        rpc_url="http://127.0.0.1:1",
        deployed_block=1,
        token=BASE_USDC,
        token_symbol="USDC",
        token_decimals=6,
        protocols=(
            ProtocolDeployment(
                "compound", "compound_v3", "0xb125E6687d4313864e53df431d5425969c15Eb2F"
            ),
        ),
        reward_token=None,
        swap_router=None,
        borrower="0x0000000000000000000000000000000000000001",
    ).write(directory / "deployment.json")
    return url, {"X-Partner-Name": "redaction", "X-Partner-API-Key": key}, wallet.address


def _database_text(url: str) -> str:
    """Every value of every table, as text."""
    engine = create_db_engine(url)
    tables = MetaData()
    tables.reflect(engine)
    with engine.connect() as connection:
        rows = [
            repr(tuple(row))
            for table in tables.sorted_tables
            for row in connection.execute(select(table))
        ]
    engine.dispose()
    return "\n".join(rows)


def _refused(api: RunningService, method: str, path: str, headers: dict[str, str]) -> None:
    response = api.request(method, path, headers=headers)
    _no_key(response.body.decode() + repr(response.headers), f"the reply to {method} {path}")
    assert response.status == 503, response.body
    body = response.json()
    # a read that reverted tells what the contract said: here, nothing
    told = f"{NODE_DID_NOT_ANSWER} (request {body['request_id']})"
    assert body["detail"] == told or body["detail"].endswith(" reverted without a reason")


def test_a_failing_nodes_key_reaches_no_reply_event_status_or_log(
    tmp_path: Path, failing_node: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url, headers, wallet = _prepare(tmp_path)
    env = {
        "YIELDAGENT_ENV": "devnet",
        "YIELDAGENT_RPC_URL_8453": failing_node,
        "YIELDAGENT_DEPLOYMENT_8453": str(tmp_path / "deployment.json"),
        "YIELDAGENT_OPERATOR_PRIVATE_KEY": Account.create().key.hex(),
        "YIELDAGENT_AGENT_INTERVAL_SECONDS": "0.2",
        "YIELDAGENT_WORKER_INTERVAL_SECONDS": "0.2",
    }
    with running_service(url, tmp_path, env) as api:
        for _ in range(3):  # the public read, as a flood would make it
            _refused(api, "GET", f"/api/v1/8453/{BASE_USDC}/protocols", {})
        run = api.request("POST", f"/api/v1/8453/wallets/{wallet}:run", headers=headers)
        _no_key(run.body.decode() + repr(run.headers), "the reply to a run")
        # a node that tells blocks lets the run start: it fails, and says why
        assert run.status == 503 or run.json() == {"status": "failed"}, run.body
        withdrawal = api.request(
            "POST", f"/api/v1/8453/wallets/{wallet}:withdraw", {"amount": "1000000"}, headers
        )
        _no_key(withdrawal.body.decode(), "the reply to a withdrawal")
        time.sleep(1)  # scheduled runs, every 0.2 s
        for path in (
            f"/api/v1/8453/wallets/{wallet}",
            f"/api/v1/8453/wallets/{wallet}/transactions",
            f"/api/v1/8453/{BASE_USDC}/protocols",
        ):
            read = api.request("GET", path, headers=headers)
            _no_key(read.body.decode(), f"the reply to GET {path}")
        access_log = (tmp_path / "envoy-access.log").read_text()
    stored = _database_text(url)
    # The fleet's holdings are read before any run is stored, so a node that answers
    # nothing leaves no failed run behind: only its words would be there, never its URL.
    _no_key(stored, "the database (events, operations, wallets)")
    _no_key(access_log, "Envoy's access log")
    logged = caplog.text + "\n".join(repr(record.__dict__) for record in caplog.records)
    _no_key(logged, "the logs")
    assert "node call failed" in logged  # the adapter said what failed, without the URL
    told = ("HTTP 429", "HTTP 500", "reverted (code 3)", "other (code -32602)")
    assert any(cause in logged for cause in told)  # what failed, by its category
