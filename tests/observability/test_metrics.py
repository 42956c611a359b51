"""The metrics module: per-method children, the overdue gauge, and serving over HTTP."""

from __future__ import annotations

import urllib.request

import grpc
from prometheus_client.parser import text_string_to_metric_families

from yieldagent.observability.metrics import (
    AGENT_RUNS,
    MOVED_AMOUNT,
    REGISTRY,
    MethodMetrics,
    MetricsServer,
    OverdueCollector,
    record_run,
    service_registry,
)

METHOD = "/yieldagent.v1.Test/Unit"


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_method_counts_calls_by_code_and_times_them() -> None:
    first, second = MethodMetrics(METHOD), MethodMetrics(METHOD)  # two servers
    first.observe(grpc.StatusCode.OK, 0.002)
    first.observe(grpc.StatusCode.OK, 0.001)  # a bound belongs to its own bucket (le)
    second.observe(grpc.StatusCode.NOT_FOUND, 0.5)
    second.observe(grpc.StatusCode.OK, 60.0)
    assert _sample("yieldagent_grpc_requests_total", method=METHOD, code="OK") == 3
    assert _sample("yieldagent_grpc_requests_total", method=METHOD, code="NOT_FOUND") == 1
    latency = "yieldagent_grpc_request_duration_seconds"
    buckets = {
        le: _sample(f"{latency}_bucket", method=METHOD, le=le)
        for le in ("0.001", "0.0025", "0.5", "30.0", "+Inf")
    }
    assert buckets == {"0.001": 1, "0.0025": 2, "0.5": 3, "30.0": 3, "+Inf": 4}
    assert _sample(f"{latency}_count", method=METHOD) == 4
    assert _sample(f"{latency}_sum", method=METHOD) == 0.002 + 0.001 + 0.5 + 60.0


def test_runs_and_amounts_are_counted_in_the_smallest_unit() -> None:
    token = "0x" + "ab" * 20
    before = _sample("yieldagent_agent_runs_total", outcome="completed")
    record_run("completed", [(8453, token, "deposit", 2**53), (8453, token, "deposit", 1)])
    assert _sample("yieldagent_agent_runs_total", outcome="completed") - before == 1
    moved = _sample(
        "yieldagent_agent_moved_amount_total", chain_id="8453", token=token, action="deposit"
    )
    # float64: 2^53 + 1 units are shown as 2^53 (the documented limit of exactness).
    assert moved == float(2**53)
    assert AGENT_RUNS.labels(outcome="error") is not None and MOVED_AMOUNT is not None


def test_the_overdue_gauge_is_the_age_of_the_oldest_due_run() -> None:
    def family(oldest: float | None) -> float:
        [gauge] = OverdueCollector(lambda: oldest, now=lambda: 1_000.0).collect()
        return float(gauge.samples[0].value)

    assert family(400.0) == 600.0
    assert family(5_000.0) == 0.0  # scheduled in the future: nothing is overdue
    assert family(None) == 0.0

    def broken() -> float:
        raise OSError("database down")

    assert list(OverdueCollector(broken).collect()) == []  # left out, not a failed scrape


def test_a_service_serves_the_shared_metrics_and_its_own_gauge() -> None:
    server = MetricsServer(0, service_registry(lambda: None))
    server.start()
    try:
        url = f"http://127.0.0.1:{server.port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as reply:
            families = {f.name: f for f in text_string_to_metric_families(reply.read().decode())}
    finally:
        server.stop()
    assert families["yieldagent_most_overdue_wallet_age_seconds"].samples[0].value == 0
    assert "yieldagent_grpc_requests" in families
    assert families["yieldagent_webhook_deliveries"].documentation.startswith("Webhook")
    dead = [
        s
        for s in families["yieldagent_webhook_deliveries"].samples
        if s.labels["outcome"] == "dead"
    ]
    assert dead, "the dead outcome shows before any delivery dies"
    assert {s.labels["table"] for s in families["yieldagent_pruned_rows"].samples} >= {
        "wallet_events",
        "webhook_deliveries",
    }
