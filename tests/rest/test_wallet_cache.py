"""The wallet poll's edge cache: ``GET /api/v1/{chain_id}/wallets/{wallet}`` may be answered
from Envoy's copy, never more than a second old, and nothing else is cached."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.funded import Funded
from support.service import Response, RunningService, running_service

_BOUND_SECONDS = 1.0
"""The documented staleness bound: Envoy serves a ``max-age=0`` reply until the second
named in its Date header ends."""


def _wallet(api: RunningService, funded: Funded, **query: str) -> Response:
    suffix = "".join(f"?{k}={v}" for k, v in query.items())
    key = funded.eoa if query else funded.wallet
    return api.request("GET", f"/api/v1/8453/wallets/{key}{suffix}", cached=True)


def _until_cached(api: RunningService, funded: Funded, **query: str) -> Response:
    """Reads until a reply comes from the cache (it has an ``age``). Envoy's Date lags
    the clock by up to half a second, and a copy dated an ended second is stale at once,
    so reads may miss for that long; any five seconds hold hits."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        response = _wallet(api, funded, **query)
        assert response.status == 200, response.body
        if "age" in response.headers:
            return response
    raise AssertionError("no read was answered from the cache")


def _deactivate(api: RunningService, funded: Funded) -> None:
    """A write that changes the wallet's reply (its status), committed when this returns."""
    response = api.request(
        "POST",
        f"/api/v1/8453/wallets/{funded.wallet}:deactivate?transfer=false",
        headers=funded.headers,
    )
    assert response.status == 200, response.body


def test_the_poll_is_answered_from_the_cache_with_the_fresh_body(
    api: RunningService, activated: Funded
) -> None:
    fresh = api.request("GET", f"/api/v1/8453/wallets/{activated.wallet}")
    cached = _until_cached(api, activated)

    assert cached.body == fresh.body
    assert cached.headers["cache-control"] == "public, max-age=0"
    assert cached.headers["age"] == "0"
    assert cached.headers["content-type"] == "application/json"
    # Each reply names its own request, cached or not.
    assert cached.headers["x-request-id"] != fresh.headers["x-request-id"]


def test_a_read_by_eoa_is_cached_apart(api: RunningService, activated: Funded) -> None:
    by_eoa = _until_cached(api, activated, eoa="true")

    assert by_eoa.json()["wallet"] == activated.wallet
    assert by_eoa.json()["eoa"] == activated.eoa


def test_a_write_is_seen_by_every_read_a_second_after_it(
    api: RunningService, activated: Funded
) -> None:
    _until_cached(api, activated)  # the cache holds the activated wallet

    _deactivate(api, activated)
    written = time.monotonic()
    time.sleep(_BOUND_SECONDS + 0.05)

    for _ in range(5):
        after = _wallet(api, activated)
        assert after.status == 200, after.body
        assert after.json()["status"] == "deactivated", (time.monotonic() - written, after.body)


@pytest.fixture
def replica(api: RunningService, tmp_path: Path) -> Iterator[RunningService]:
    """A second replica (its own Envoy, cache and gRPC server) on the same database."""
    with running_service(api.database_url, tmp_path) as other:
        yield other


def test_a_write_in_one_replica_is_seen_in_another_within_the_bound(
    api: RunningService, replica: RunningService, activated: Funded
) -> None:
    _until_cached(replica, activated)

    _deactivate(api, activated)
    fresh = replica.request("GET", f"/api/v1/8453/wallets/{activated.wallet}")
    assert fresh.json()["status"] == "deactivated"  # no-cache: the database, at once
    time.sleep(_BOUND_SECONDS + 0.05)

    assert _wallet(replica, activated).json()["status"] == "deactivated"


def test_a_no_cache_read_sees_a_write_at_once(api: RunningService, activated: Funded) -> None:
    _until_cached(api, activated)

    _deactivate(api, activated)
    fresh = api.request("GET", f"/api/v1/8453/wallets/{activated.wallet}")

    assert fresh.json()["status"] == "deactivated"


def test_errors_are_never_cached(api: RunningService) -> None:
    missing = "0x" + "ab" * 20
    for _ in range(3):
        response = api.request("GET", f"/api/v1/8453/wallets/{missing}", cached=True)

        assert response.status == 404
        assert "age" not in response.headers
        assert "cache-control" not in response.headers
        assert "not found" in response.error()["detail"]  # its own request id


def test_other_reads_are_not_cached(api: RunningService, activated: Funded) -> None:
    for path in (
        "/api/v1/chains",
        f"/api/v1/8453/wallets/{activated.wallet}/transactions",
        "/api/v1/8453/stats",
    ):
        for _ in range(3):
            response = api.request("GET", path, headers=activated.headers, cached=True)

            assert response.status == 200, (path, response.body)
            assert "age" not in response.headers, path
            assert "cache-control" not in response.headers, path


def test_the_host_and_unknown_parameters_do_not_split_the_cache(
    api: RunningService, activated: Funded
) -> None:
    """Each read has a Host and a parameter of its own: only one entry per wallet (and
    `eoa`) lets any of them come from the cache, which never evicts."""
    deadline = time.monotonic() + 5
    reads = 0
    while time.monotonic() < deadline:
        reads += 1
        response = api.request(
            "GET",
            f"/api/v1/8453/wallets/{activated.eoa}?junk={reads}&eoa=true&more={reads}",
            headers={"Host": f"host-{reads}.example"},
            cached=True,
        )
        assert response.status == 200, response.body
        assert response.json()["wallet"] == activated.wallet
        if "age" in response.headers:
            return
    raise AssertionError(f"none of {reads} reads was answered from the cache")
