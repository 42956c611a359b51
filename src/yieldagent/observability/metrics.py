"""Prometheus metrics: every metric the service exports, and the HTTP endpoint serving them.

The metrics live in one registry of their own (``REGISTRY``), served at ``/metrics`` on
``YIELDAGENT_METRICS_PORT`` (127.0.0.1 only) by ``MetricsServer``. They are recorded from
the servicer, app and worker layers, never from the domain:

- ``yieldagent_grpc_requests_total{method,code}`` and
  ``yieldagent_grpc_request_duration_seconds{method}``: every API call, counted by its
  gRPC status code and timed, in ``servicers.interceptor`` (``MethodMetrics``, bound once
  per method: a call updates three plain fields, no lock, no label lookup);
- ``yieldagent_agent_runs_total{outcome}``: agent runs by how they ended
  (``completed``: funds moved, ``no_action``: held, ``failed``: the chain or the rules
  refused, ``recovered``: finished after a crash, ``error``: an unexpected exception);
- ``yieldagent_agent_moved_amount_total{chain_id,token,action}``: what completed runs moved,
  in the token's **smallest unit** (USDC: 10^-6 USDC), by step action (``withdraw`` from a
  protocol, ``deposit`` into one). Prometheus counters are float64: a total is exact up to
  2^53 units (9·10^15: nine billion USDC, but only 0.009 of an 18-decimal token); past that
  it keeps 15-16 significant digits. That is enough for rates and dashboards, and is no
  record of money: the books (``wallet_transactions``) hold the exact integers;
- ``yieldagent_most_overdue_wallet_age_seconds``: how late the most overdue activated
  wallet's run is (0 when none is due), read from the database on each scrape (indexed
  reads: ``storage.runs.RunStore.oldest_due``); served with the rest by each service
  (``service_registry``);
- ``yieldagent_webhook_deliveries_total{outcome}``: webhook delivery attempts by outcome
  (``delivered``; ``failed``: the receiver answered an error, did not answer, or its
  address is refused, retried later; ``dead``: failed once its event was older than
  ``YIELDAGENT_WEBHOOK_DEAD_AFTER_SECONDS``, never retried). Defined here; the delivery
  job records it (``compose.count_delivery``).
- ``yieldagent_rate_limited_total``: partner calls refused with 429 / RESOURCE_EXHAUSTED.
- ``yieldagent_pruned_rows_total{table}``: rows the retention job deleted (``wallet_events``,
  ``webhook_deliveries``); recorded by ``compose.event_pruning``.
"""

from __future__ import annotations

import logging
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from itertools import accumulate
from threading import Thread
from typing import Any
from wsgiref.simple_server import WSGIServer

import grpc
from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

REGISTRY = CollectorRegistry(auto_describe=True)
"""The service's metrics (not prometheus_client's global registry: tests and embedders
may run several services in one process)."""

LATENCY_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
"""Seconds: reads take a millisecond or two, calls that wait for the chain seconds."""

AGENT_RUNS = Counter(
    "yieldagent_agent_runs",
    "Agent runs by outcome: completed (moved funds), no_action (held), failed (refused by "
    "the chain or the rules), recovered (finished after a crash), error (unexpected).",
    ["outcome"],
    registry=REGISTRY,
)
MOVED_AMOUNT = Counter(
    "yieldagent_agent_moved_amount",
    "Amounts completed agent runs moved, in the token's smallest unit (float64: exact up to "
    "2^53 units), by chain id, token address and step action (withdraw, deposit).",
    ["chain_id", "token", "action"],
    registry=REGISTRY,
)
RISK_TRIPS = Counter(
    "yieldagent_risk_guard_trips",
    "Risk guards that tripped on a pool whose state changed (ok, no_new_funds, exit), and "
    "moves the move-loss rule refused, by rule, chain id and protocol.",
    ["rule", "chain_id", "protocol"],
    registry=REGISTRY,
)
RISK_STATE = Gauge(
    "yieldagent_risk_pool_state",
    "Each pool's state under the risk guards as last judged: 0 ok, 1 no_new_funds, 2 exit; "
    "by chain id, token address and protocol.",
    ["chain_id", "token", "protocol"],
    registry=REGISTRY,
)
WEBHOOK_DELIVERIES = Counter(
    "yieldagent_webhook_deliveries",
    "Webhook delivery attempts by outcome: delivered, failed (to be retried), dead (failed "
    "after YIELDAGENT_WEBHOOK_DEAD_AFTER_SECONDS: never retried).",
    ["outcome"],
    registry=REGISTRY,
)
PRUNED_ROWS = Counter(
    "yieldagent_pruned_rows",
    "Rows deleted for being older than YIELDAGENT_EVENT_RETENTION_SECONDS, by table "
    "(wallet_events, webhook_deliveries).",
    ["table"],
    registry=REGISTRY,
)
RATE_LIMITED = Counter(
    "yieldagent_rate_limited",
    "Partner calls refused because the partner exceeded YIELDAGENT_PARTNER_RATE_LIMIT.",
    registry=REGISTRY,
)

RUN_OUTCOMES = ("completed", "no_action", "failed", "recovered", "error")
for _outcome in RUN_OUTCOMES:  # every outcome shows from the start, at 0
    AGENT_RUNS.labels(outcome=_outcome)
for _outcome in ("delivered", "failed", "dead"):
    WEBHOOK_DELIVERIES.labels(outcome=_outcome)
for _table in ("wallet_events", "webhook_deliveries"):
    PRUNED_ROWS.labels(table=_table)


REQUESTS_HELP = (
    "API calls served, by full gRPC method name and gRPC status code (REST calls included: "
    "Envoy transcodes them to these methods)."
)
LATENCY_HELP = (
    "Time the server spent on an API call, authentication and error mapping included, by "
    "full gRPC method name."
)


class MethodMetrics:
    """One method's call counts by status code and its latency histogram, in plain fields.

    ``observe`` is the per-call cost: no lock and no label lookup (prometheus_client's
    children take a lock per update, which costs every call; ``docs/performance.md``). Each
    interceptor binds one per method, and a server's interceptor runs on that server's
    event loop thread only, so the fields have a single writer; ``ApiCallCollector``
    reads (copies) them at scrape time from the metrics thread.
    """

    __slots__ = ("buckets", "codes", "method", "sum")

    def __init__(self, method: str) -> None:
        self.method = method
        self.codes: dict[grpc.StatusCode, int] = {}
        self.buckets = [0] * (len(LATENCY_BUCKETS) + 1)  # per bucket; the last is +Inf
        self.sum = 0.0
        _API_CALLS.append(self)

    def observe(self, code: grpc.StatusCode, seconds: float) -> None:
        """Counts one call that ended with ``code`` after ``seconds``."""
        codes = self.codes
        codes[code] = codes.get(code, 0) + 1
        self.buckets[bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.sum += seconds


_API_CALLS: list[MethodMetrics] = []


class ApiCallCollector(Collector):
    """``yieldagent_grpc_requests_total`` and ``yieldagent_grpc_request_duration_seconds``
    from every ``MethodMetrics`` of the process (summed per method: tests run several
    servers in one process)."""

    def collect(self) -> Sequence[Any]:
        """The two families, as of now."""
        codes: dict[tuple[str, str], int] = {}
        buckets: dict[str, list[int]] = {}
        sums: dict[str, float] = {}
        for metrics in list(_API_CALLS):
            method = metrics.method
            for code, count in dict(metrics.codes).items():
                codes[method, code.name] = codes.get((method, code.name), 0) + count
            counted = list(metrics.buckets)
            total = buckets.setdefault(method, [0] * len(counted))
            for index, count in enumerate(counted):
                total[index] += count
            sums[method] = sums.get(method, 0.0) + metrics.sum
        requests = CounterMetricFamily(
            "yieldagent_grpc_requests", REQUESTS_HELP, labels=["method", "code"]
        )
        for (method, code), count in sorted(codes.items()):
            requests.add_metric([method, code], count)
        latency = HistogramMetricFamily(
            "yieldagent_grpc_request_duration_seconds", LATENCY_HELP, labels=["method"]
        )
        bounds = [str(float(bound)) for bound in LATENCY_BUCKETS] + ["+Inf"]
        for method, counted in sorted(buckets.items()):
            cumulative = list(accumulate(counted))
            latency.add_metric(
                [method], buckets=list(zip(bounds, cumulative, strict=True)), sum_value=sums[method]
            )
        return [requests, latency]


REGISTRY.register(ApiCallCollector())


def record_run(outcome: str, moved: Iterable[tuple[int, str, str, int]] = ()) -> None:
    """Counts one agent run by ``outcome`` and what it moved: ``(chain_id, token, action,
    amount)`` with the amount in the token's smallest unit."""
    AGENT_RUNS.labels(outcome=outcome).inc()
    for chain_id, token, action, amount in moved:
        MOVED_AMOUNT.labels(chain_id=str(chain_id), token=token, action=action).inc(amount)


def record_risk(chain_id: int, token: str, protocol: str, state: int, rules: Iterable[str]) -> None:
    """Notes a pool whose state changed under the risk guards: its state (0 ok, 1
    no_new_funds, 2 exit) and a trip of each rule that put it there."""
    RISK_STATE.labels(chain_id=str(chain_id), token=token, protocol=protocol).set(state)
    for rule in rules:
        RISK_TRIPS.labels(rule=rule, chain_id=str(chain_id), protocol=protocol).inc()


def record_move_refused(chain_id: int, protocol: str) -> None:
    """Counts a trip of the move-loss rule: a wallet's move out of ``protocol`` refused."""
    RISK_TRIPS.labels(rule="move_loss", chain_id=str(chain_id), protocol=protocol).inc()


class OverdueCollector(Collector):
    """``yieldagent_most_overdue_wallet_age_seconds``, read on each scrape.

    ``oldest_due`` answers since when (unix seconds) the most overdue activated wallet of
    the service's database has been due, or None; a failing read is logged and the gauge
    left out of that scrape.
    """

    def __init__(
        self, oldest_due: Callable[[], float | None], now: Callable[[], float] = time.time
    ) -> None:
        self._oldest_due = oldest_due
        self._now = now

    def collect(self) -> Sequence[GaugeMetricFamily]:
        """The gauge's current value."""
        try:
            oldest = self._oldest_due()
        except Exception:
            log.exception("overdue wallet metric failed")
            return []
        age = max(0.0, self._now() - oldest) if oldest is not None else 0.0
        return [
            GaugeMetricFamily(
                "yieldagent_most_overdue_wallet_age_seconds",
                "Seconds since the most overdue activated wallet's agent run was due (0 when "
                "none is due).",
                value=age,
            )
        ]


class _Shared(Collector):
    """The process-wide ``REGISTRY``'s metrics, inside a service's own registry."""

    def collect(self) -> Iterable[Any]:
        return REGISTRY.collect()


def service_registry(oldest_due: Callable[[], float | None] | None = None) -> CollectorRegistry:
    """What a service serves: every metric of ``REGISTRY`` and, given the read of its
    database's most overdue run, the overdue gauge (one per service: several services in
    one process, as in tests, each show their own)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Shared())
    if oldest_due is not None:
        registry.register(OverdueCollector(oldest_due))
    return registry


class MetricsServer:
    """``/metrics`` over HTTP on 127.0.0.1, from a thread of its own."""

    def __init__(
        self, port: int, registry: CollectorRegistry = REGISTRY, host: str = "127.0.0.1"
    ) -> None:
        self._requested = port
        self._registry = registry
        self._host = host
        self._server: WSGIServer | None = None
        self._thread: Thread | None = None

    @property
    def port(self) -> int:
        """The port it listens on (known once started)."""
        assert self._server is not None, "not started"
        return int(self._server.server_port)

    def start(self) -> None:
        """Starts serving its registry; port 0 takes any free port."""
        self._server, self._thread = start_http_server(
            self._requested, addr=self._host, registry=self._registry
        )
        log.info("metrics served", extra={"url": f"http://{self._host}:{self.port}/metrics"})

    def stop(self) -> None:
        """Stops serving."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
