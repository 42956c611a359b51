"""Operating the service through its real edge: metrics scraped over HTTP, request ids from
Envoy to the server's logs and error bodies, Envoy's access log and admin listener, the
per-partner rate limit, and key rotation with a grace period.

One service of its own (SQLite) serves the module, with a small rate limit (5 calls a
second, bursts of 10) and a worker that ticks only at start, so that the test drives the
agent cycle itself.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from eth_utils.address import to_checksum_address
from google.rpc import error_details_pb2, status_pb2
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine, text

from support.funded import USDC, Funded
from support.service import Response, RunningService, running_service
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.cli import _lifecycle
from yieldagent.composition.compose import agent_cycle, build_agent
from yieldagent.config import load_settings
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.observability.logs import RequestIdFilter
from yieldagent.storage.db import create_db_engine
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.simulation import SimulationStore
from yieldagent.v1 import catalog_pb2, catalog_pb2_grpc, smart_accounts_pb2, smart_accounts_pb2_grpc

RATE = {"YIELDAGENT_PARTNER_RATE_LIMIT": "5", "YIELDAGENT_WORKER_INTERVAL_SECONDS": "3600"}
CHAINS = "/yieldagent.v1.CatalogService/ListChains"
LOOKUP = "/yieldagent.v1.SmartAccountService/GetSmartAccount"
_names = itertools.count()
_eoas = itertools.count(0xA11CE)


@pytest.fixture(scope="module")
def ops(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningService]:
    """The service, with a small rate limit, on a SQLite database of its own."""
    directory = tmp_path_factory.mktemp("ops")
    with running_service(f"sqlite:///{directory / 'ops.db'}", directory, RATE) as service:
        yield service


@pytest.fixture(scope="module")
def ops_engine(ops: RunningService) -> Iterator[Engine]:
    engine = create_db_engine(ops.database_url)
    yield engine
    engine.dispose()


def _partner(engine: Engine) -> tuple[str, dict[str, str]]:
    name = f"ops-{next(_names)}"
    _, key = PartnerStore(engine).create(name, PERMISSIONS)
    return name, {"X-Partner-Name": name, "X-Partner-API-Key": key}


def _lookup(eoa: str = "0x" + "1" * 40) -> str:
    return f"/api/v1/proxy/zerodev/smart-accounts?eoa={eoa}&chain=8453"


def _scrape(service: RunningService) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of ``/metrics``, by name and labels."""
    assert service.metrics_port is not None
    url = f"http://127.0.0.1:{service.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as reply:
        assert reply.status == 200
        exposition = reply.read().decode()
    samples = {}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def _value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


# -- metrics -------------------------------------------------------------------------------


def test_metrics_count_each_method_by_code_and_time_it(
    ops: RunningService, ops_engine: Engine
) -> None:
    before = _scrape(ops)
    for _ in range(3):
        assert ops.request("GET", "/api/v1/chains").status == 200
    name, _ = _partner(ops_engine)
    wrong = {"X-Partner-Name": name, "X-Partner-API-Key": "ya_wrong"}
    assert ops.request("GET", _lookup(), headers=wrong).status == 401
    # A refusal's status goes out before the interceptor counts the call: a scrape right
    # after the answer may come a moment early.
    refused = (
        "yieldagent_grpc_requests_total",
        frozenset({("method", LOOKUP), ("code", "UNAUTHENTICATED")}),
    )
    after = _scrape(ops)
    for _ in range(100):
        if after.get(refused, 0.0) > before.get(refused, 0.0):
            break
        time.sleep(0.05)
        after = _scrape(ops)

    def delta(sample: str, **labels: str) -> float:
        return _value(after, sample, **labels) - _value(before, sample, **labels)

    requests = "yieldagent_grpc_requests_total"
    assert delta(requests, method=CHAINS, code="OK") == 3
    assert delta(requests, method=LOOKUP, code="UNAUTHENTICATED") == 1
    latency = "yieldagent_grpc_request_duration_seconds"
    assert delta(f"{latency}_count", method=CHAINS) == 3
    assert delta(f"{latency}_bucket", method=CHAINS, le="+Inf") == 3
    assert delta(f"{latency}_bucket", method=CHAINS, le="30.0") == 3
    # Every metric the operating docs list is exported, with its help text.
    names = {sample for sample, _ in after}
    for exported in (
        "yieldagent_agent_runs_total",
        "yieldagent_most_overdue_wallet_age_seconds",
        "yieldagent_rate_limited_total",
    ):
        assert exported in names, exported


def test_metrics_listen_on_loopback_only(ops: RunningService) -> None:
    assert ops.metrics_port is not None
    with urllib.request.urlopen(
        f"http://127.0.0.1:{ops.metrics_port}/metrics", timeout=10
    ) as reply:
        assert b"# HELP yieldagent_grpc_requests_total" in reply.read()


def _fund(ops: RunningService, engine: Engine, headers: dict[str, str]) -> Funded:
    eoa = to_checksum_address(f"0x{next(_eoas):040x}")
    created = ops.request(
        "POST", "/api/v1/proxy/zerodev/smart-accounts", {"eoa": eoa, "chain": 8453}, headers
    )
    assert created.status == 200, created.body
    wallet = created.json()["smartAccount"]
    market = SimulatedMarket(SimulationStore(engine), load_catalog(), 7, speed=0.0)
    market.start(set_speed=False)
    transfer = market.deposit_from(8453, USDC, eoa, wallet, 1_000 * 10**6)
    return Funded(eoa, wallet, transfer.tx_hash, headers)


def test_an_agent_cycle_counts_runs_and_clears_the_overdue_gauge(
    ops: RunningService, ops_engine: Engine
) -> None:
    _, headers = _partner(ops_engine)
    funded = _fund(ops, ops_engine, headers)
    activated = ops.request("POST", "/api/v1/8453/wallets", funded.activation(), headers)
    assert activated.status == 201, activated.body
    # The wallet's run has been due for ten minutes.
    with ops_engine.begin() as connection:
        connection.execute(
            text(
                "UPDATE wallet_schedule SET next_run_at = :due "
                "WHERE wallet_id = (SELECT id FROM wallets WHERE address = :wallet)"
            ),
            {"due": time.time() - 600, "wallet": funded.wallet},
        )
    before = _scrape(ops)
    assert _value(before, "yieldagent_most_overdue_wallet_age_seconds") >= 600
    settings = load_settings(
        {
            "YIELDAGENT_DATA_DIR": str(ops.data_dir),
            "YIELDAGENT_DATABASE_URL": ops.database_url,
            "YIELDAGENT_SIM_SPEED": "0",
        }
    )
    engine, lifecycle = _lifecycle(settings)
    try:
        job = agent_cycle(build_agent(settings, engine, lifecycle))
        asyncio.run(job())  # type: ignore[arg-type]
    finally:
        engine.dispose()
    after = _scrape(ops)
    runs = "yieldagent_agent_runs_total"
    ran = {
        outcome: _value(after, runs, outcome=outcome) - _value(before, runs, outcome=outcome)
        for outcome in ("completed", "no_action", "failed", "recovered", "error")
    }
    assert ran["completed"] + ran["no_action"] >= 1, ran
    assert ran["failed"] == ran["error"] == 0, ran
    if ran["completed"]:  # it moved the idle deposit into the pools
        moved = _value(
            after,
            "yieldagent_agent_moved_amount_total",
            chain_id="8453",
            token=USDC,
            action="deposit",
        ) - _value(
            before,
            "yieldagent_agent_moved_amount_total",
            chain_id="8453",
            token=USDC,
            action="deposit",
        )
        assert 0 < moved <= 1_000 * 10**6
    # Run and scheduled an interval on: nothing in this database is overdue any more.
    assert _value(after, "yieldagent_most_overdue_wallet_age_seconds") == 0


# -- request ids ---------------------------------------------------------------------------


class _Records(logging.Handler):
    """Keeps the records logged, stamped with their call's request id."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []
        self.addFilter(RequestIdFilter())

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def server_logs() -> Iterator[_Records]:
    logger = logging.getLogger("yieldagent.servicers.interceptor")
    handler, level = _Records(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_envoy_makes_a_request_id_and_returns_it(ops: RunningService) -> None:
    first = ops.request("GET", "/api/v1/chains")
    second = ops.request("GET", "/api/v1/chains")
    assert uuid.UUID(first.headers["x-request-id"]) != uuid.UUID(second.headers["x-request-id"])


def test_a_request_id_reaches_the_error_body_and_the_server_logs(
    ops: RunningService, ops_engine: Engine, server_logs: _Records
) -> None:
    name, _ = _partner(ops_engine)
    request_id = f"ops-test-{uuid.uuid4()}"
    refused = ops.request(
        "GET",
        _lookup(),
        headers={
            "X-Partner-Name": name,
            "X-Partner-API-Key": "ya_wrong",
            "X-Request-Id": request_id,
        },
    )
    assert refused.status == 401
    assert refused.headers["x-request-id"] == request_id
    assert refused.json() == {"detail": "Invalid or missing API key", "request_id": request_id}
    logged = [r for r in server_logs.records if getattr(r, "request_id", None) == request_id]
    assert [r.getMessage() for r in logged] == ["request refused"]
    # Envoy's own answers (an unknown path) carry the id too.
    missing = ops.request("GET", "/api/v1/nowhere/at/all/here")
    assert missing.status == 404
    assert missing.error() == {"detail": "Not Found"}


def test_direct_grpc_callers_get_a_request_id_when_they_send_none(ops: RunningService) -> None:
    with grpc.insecure_channel(ops.grpc_target) as channel:
        catalog = catalog_pb2_grpc.CatalogServiceStub(channel)
        _, call = catalog.ListChains.with_call(catalog_pb2.ListChainsRequest())
        made = dict(call.trailing_metadata())["x-request-id"]
        assert uuid.UUID(made)
        _, call = catalog.ListChains.with_call(
            catalog_pb2.ListChainsRequest(), metadata=[("x-request-id", "mine")]
        )
        assert "x-request-id" not in dict(call.trailing_metadata())  # the caller knows it
        accounts = smart_accounts_pb2_grpc.SmartAccountServiceStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            accounts.GetSmartAccount(smart_accounts_pb2.GetSmartAccountRequest())
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert uuid.UUID(dict(refused.value.trailing_metadata())["x-request-id"])


# -- access log and admin ------------------------------------------------------------------


def _access_log_line(path: Path, request_id: str) -> dict[str, Any]:
    # Envoy writes its log files out every 10 s (its bootstrap's file_flush_interval) or
    # once 64 KiB are buffered.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if path.exists():
            for line in path.read_text().splitlines():
                entry: dict[str, Any] = json.loads(line)
                if entry.get("request_id") == request_id:
                    return entry
        time.sleep(0.2)
    raise AssertionError(f"no access log line for {request_id}")


def test_envoy_writes_a_json_access_log_without_api_keys(
    ops: RunningService, ops_engine: Engine
) -> None:
    name, headers = _partner(ops_engine)
    request_id = f"ops-log-{uuid.uuid4()}"
    response = ops.request("GET", _lookup(), headers={**headers, "X-Request-Id": request_id})
    assert response.status == 404  # no account for that EOA yet
    log_file = ops.data_dir / "envoy-access.log"
    entry = _access_log_line(log_file, request_id)
    assert entry["method"] == "GET"
    assert entry["path"] == _lookup()
    assert entry["grpc_method"] == LOOKUP
    assert entry["status"] == 404
    assert entry["partner"] == name
    assert entry["upstream"].startswith("127.0.0.1:")
    assert entry["duration_ms"] >= 0 and entry["bytes_sent"] == len(response.body)
    assert headers["X-Partner-API-Key"] not in log_file.read_text()
    assert "api_key" not in json.dumps(entry).lower()


def test_the_access_log_file_is_rotated_by_renaming_it_and_reopening(
    ops: RunningService, ops_engine: Engine
) -> None:
    """What a log rotation's postrotate step does: rename the file, then ask Envoy's admin
    listener to reopen its logs; later lines go to a new file."""
    _, headers = _partner(ops_engine)
    log_file = ops.data_dir / "envoy-access.log"
    before, after = f"ops-rotate-{uuid.uuid4()}", f"ops-rotate-{uuid.uuid4()}"
    ops.request("GET", _lookup(), headers={**headers, "X-Request-Id": before})
    _access_log_line(log_file, before)
    rotated = log_file.rename(log_file.with_name("envoy-access.log.1"))
    address = (ops.data_dir / "envoy-admin.address").read_text().strip()
    reopen = urllib.request.Request(f"http://{address}/reopen_logs", method="POST")
    with urllib.request.urlopen(reopen, timeout=10) as reply:  # noqa: S310 (loopback)
        assert reply.status == 200

    ops.request("GET", _lookup(), headers={**headers, "X-Request-Id": after})

    assert _access_log_line(log_file, after)["request_id"] == after
    assert before not in log_file.read_text() and before in rotated.read_text()
    assert after not in rotated.read_text()


def test_envoy_stats_are_on_its_admin_port_on_loopback(ops: RunningService) -> None:
    address = (ops.data_dir / "envoy-admin.address").read_text().strip()
    assert address.startswith("127.0.0.1:")
    with urllib.request.urlopen(
        f"http://{address}/stats?filter=^http.partner_rest.downstream_rq_total$", timeout=10
    ) as reply:
        assert reply.read().decode().startswith("http.partner_rest.downstream_rq_total: ")


# -- rate limits ---------------------------------------------------------------------------


def _until_limited(ops: RunningService, headers: dict[str, str]) -> tuple[int, Response]:
    for count in range(1, 101):
        response = ops.request("GET", _lookup(), headers=headers)
        if response.status == 429:
            return count, response
        assert response.status == 404, response.body
    raise AssertionError("no 429 after 100 calls")


def test_a_partner_over_its_rate_gets_429_with_retry_after(
    ops: RunningService, ops_engine: Engine
) -> None:
    before = _scrape(ops)
    _, headers = _partner(ops_engine)
    calls, limited = _until_limited(ops, headers)
    assert calls > 10  # the burst (two seconds of 5 a second) passes
    assert int(limited.headers["retry-after"]) >= 1
    assert limited.error() == {
        "detail": "Rate limit exceeded: at most 5 requests per second (bursts of 10); retry later"
    }
    # Another partner has a bucket of its own; public calls are not partner-limited.
    _, other = _partner(ops_engine)
    assert ops.request("GET", _lookup(), headers=other).status == 404
    assert all(ops.request("GET", "/api/v1/chains").status == 200 for _ in range(15))
    after = _scrape(ops)
    assert _value(after, "yieldagent_rate_limited_total") > _value(
        before, "yieldagent_rate_limited_total"
    )
    assert (
        _value(after, "yieldagent_grpc_requests_total", method=LOOKUP, code="RESOURCE_EXHAUSTED")
        > 0
    )


def test_failed_authentications_do_not_spend_a_partners_rate(
    ops: RunningService, ops_engine: Engine
) -> None:
    name, headers = _partner(ops_engine)
    wrong = {"X-Partner-Name": name, "X-Partner-API-Key": "ya_wrong"}
    for _ in range(15):
        assert ops.request("GET", _lookup(), headers=wrong).status == 401
    assert ops.request("GET", _lookup(), headers=headers).status == 404


def test_direct_grpc_callers_get_resource_exhausted_with_retry_info(
    ops: RunningService, ops_engine: Engine
) -> None:
    name, headers = _partner(ops_engine)
    metadata = [("x-partner-name", name), ("x-partner-api-key", headers["X-Partner-API-Key"])]
    request = smart_accounts_pb2.GetSmartAccountRequest(eoa="0x" + "2" * 40, chain=8453)
    codes = []
    with grpc.insecure_channel(ops.grpc_target) as channel:
        accounts = smart_accounts_pb2_grpc.SmartAccountServiceStub(channel)
        for _ in range(100):
            with pytest.raises(grpc.RpcError) as refused:
                accounts.GetSmartAccount(request, metadata=metadata)
            codes.append(refused.value.code())
            if codes[-1] == grpc.StatusCode.RESOURCE_EXHAUSTED:
                break
    assert set(codes[:-1]) == {grpc.StatusCode.NOT_FOUND}  # no account for that EOA
    assert codes[-1] == grpc.StatusCode.RESOURCE_EXHAUSTED
    error: Any = refused.value
    trailing = dict(error.trailing_metadata())
    status = status_pb2.Status.FromString(trailing["grpc-status-details-bin"])
    retry = error_details_pb2.RetryInfo()
    assert any(detail.Unpack(retry) for detail in status.details)
    assert retry.retry_delay.seconds >= 1


# -- key rotation --------------------------------------------------------------------------


def test_a_rotated_key_keeps_working_for_its_grace_period(
    ops: RunningService, ops_engine: Engine
) -> None:
    name, old = _partner(ops_engine)
    _, new_key = PartnerStore(ops_engine).rotate(name, grace_seconds=3600)
    new = {**old, "X-Partner-API-Key": new_key}
    assert ops.request("GET", _lookup(), headers=old).status == 404
    assert ops.request("GET", _lookup(), headers=new).status == 404
    # The grace period ends (as if an hour went by).
    with ops_engine.begin() as connection:
        connection.execute(
            text("UPDATE partners SET previous_key_expires_at = :past WHERE name = :name"),
            {"past": time.time() - 1, "name": name},
        )
    assert ops.request("GET", _lookup(), headers=old).status == 401
    assert ops.request("GET", _lookup(), headers=new).status == 404
