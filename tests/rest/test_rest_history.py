"""The numbers over time through the edge, as the production client reads them: a pool's
recorded history, the catalog's yield parts, and a wallet's performance, APR by token and
earnings, each only for the partner that owns the wallet."""

from __future__ import annotations

import time
from typing import Any

import pytest

from support.funded import USDC, Funded
from support.sdk_client import check_performance
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
            if protocol[f"apy_base_{window}"] is None:
                # Other tests moved the shared market's time past every recorded point:
                # the window holds none, and each of its figures is unknown.
                assert total is None and protocol[f"apy_net_{window}"] is None, protocol
                continue
            assert total == protocol[f"apy_base_{window}"] + protocol[f"apy_rewards_{window}"]
            assert protocol[f"apy_net_{window}"] == total * (1 - 1000 / 10_000)


WALLET_READS = (
    "/performance",
    "/performance?from_date=2020-01-01T00:00:00Z",
    "/apr/tokens?token_price=1.0",
    "/apr/tokens?token_price=1&period=day",
    "/earnings",
    "/earnings?interval=hour",
)


def test_a_wallets_performance_as_the_production_client_reads_it(
    api: RunningService, activated: Funded
) -> None:
    base = f"/api/v1/8453/wallets/{activated.wallet}"
    response = api.request("GET", base + "/performance", headers=activated.headers)
    assert response.status == 200, response.body
    series = check_performance(response.json())
    assert len(series) >= 2  # the activation's point, then now
    now = series[-1]
    assert now["value"] == pytest.approx(1_000, rel=1e-3)
    assert sum(a["value"] for a in now["portfolio"].values()) == pytest.approx(now["value"])
    for allocation in now["portfolio"].values():
        assert allocation["apy_total"] == allocation["apy_base"] + allocation["apy_rewards"]
        assert allocation["total_apr"] == allocation["base_apr"] + allocation["apy_rewards"]


def test_apr_by_token_is_a_bare_array(api: RunningService, activated: Funded) -> None:
    base = f"/api/v1/8453/wallets/{activated.wallet}"
    response = api.request("GET", base + "/apr/tokens?token_price=2", headers=activated.headers)
    assert response.status == 200, response.body
    [item] = response.json()
    assert item["value_in_usd"] == pytest.approx(2 * item["value"])
    assert item["base_apr"] is None and isinstance(item["total_apr"], float)
    for query in ("token_price=0", "token_price=1&period=week", ""):
        bad = api.request("GET", f"{base}/apr/tokens?{query}", headers=activated.headers)
        assert bad.status == 422, (query, bad.body)


def test_earnings_are_integers_that_sum_to_their_totals(
    api: RunningService, activated: Funded
) -> None:
    base = f"/api/v1/8453/wallets/{activated.wallet}"
    response = api.request("GET", base + "/earnings?interval=day", headers=activated.headers)
    assert response.status == 200, response.body
    body = response.json()
    assert isinstance(body["total_yield_amount"], int)
    assert body["earnings"] and all(isinstance(e["yield_amount"], int) for e in body["earnings"])
    assert sum(e["yield_amount"] for e in body["earnings"]) == body["total_yield_amount"]
    assert sum(e["fee_amount"] for e in body["earnings"]) == body["total_fee_amount"]
    bad = api.request("GET", base + "/earnings?interval=week", headers=activated.headers)
    assert bad.status == 422, bad.body


def test_only_the_owner_reads_a_wallets_numbers(  # type: ignore[no-untyped-def]
    api: RunningService, activated: Funded, make_partner
) -> None:
    stranger = make_partner()
    base = f"/api/v1/8453/wallets/{activated.wallet}"
    for path in WALLET_READS:
        assert api.request("GET", base + path, headers=activated.headers).status == 200, path
        assert api.request("GET", base + path, headers=stranger).status == 403, path
        assert api.request("GET", base + path).status == 401, path
