"""The numbers over time through the edge, as the production client reads them: a pool's
recorded history, the catalog's yield parts, and a wallet's performance, APR by token and
earnings, each only for the partner that owns the wallet."""

from __future__ import annotations

import time
from typing import Any

from support.funded import USDC
from support.service import RunningService

HISTORY = "/api/v1/8453/protocols/{protocol}/history"


def _points(api: RunningService, query: str = "", protocol: str = "moonwell") -> list[Any]:
    """The pool's points, once the worker recorded some (it does at start-up)."""
    deadline = time.monotonic() + 30
    while True:
        response = api.request("GET", HISTORY.format(protocol=protocol) + query)
        assert response.status == 200, response.body
        points: list[Any] = response.json()["points"]
        if points or time.monotonic() > deadline:
            return points
        time.sleep(0.2)


def test_a_pool_history_lists_what_the_service_recorded(api: RunningService) -> None:
    points = _points(api)
    assert points
    for point in points:
        assert set(point) == {"time", "apy_base", "apy_rewards", "tvl", "utilization"}
        assert point["apy_base"] > 0 and point["apy_rewards"] > 0  # WELL emissions
        assert point["tvl"] > 1_000_000 and 0 < point["utilization"] < 1
    daily = _points(api, "?interval=day&from=2020-01-01T00:00:00Z")
    assert daily and all(p["time"].endswith("T00:00:00Z") for p in daily)


def test_a_pool_history_refuses_what_it_cannot_read(api: RunningService) -> None:
    bad = api.request("GET", HISTORY.format(protocol="moonwell") + "?interval=week")
    assert bad.status == 422, bad.body
    assert bad.error()["detail"][0]["loc"] == ["query", "interval"]
    assert api.request("GET", HISTORY.format(protocol="moonwell") + "?from=soon").status == 422
    assert api.request("GET", HISTORY.format(protocol="nope")).status == 404


def test_the_catalog_shows_each_pools_yield_in_parts(api: RunningService) -> None:
    _points(api)  # a point recorded: the averages exist
    response = api.request("GET", f"/api/v1/8453/{USDC}/protocols")
    assert response.status == 200, response.body
    for protocol in response.json()["protocols"]:
        assert protocol["apy_total"] == protocol["apy_base"] + protocol["apy_rewards"]
        assert protocol["apy_net"] == protocol["apy_total"] * (1 - 1000 / 10_000)
        for window in ("7d", "30d"):
            total = protocol[f"apy_total_{window}"]
            assert total == protocol[f"apy_base_{window}"] + protocol[f"apy_rewards_{window}"]
            assert protocol[f"apy_net_{window}"] == total * (1 - 1000 / 10_000)
