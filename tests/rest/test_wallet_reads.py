"""The wallet read through the edge: a partner reads its own writes at once, from any
replica, and however it spells the address; no reply is cached on the way."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.funded import Funded
from support.service import Response, RunningService, running_service


def _read(api: RunningService, key: str, query: str = "") -> Response:
    response = api.request("GET", f"/api/v1/8453/wallets/{key}{query}")
    assert response.status == 200, response.body
    return response


def _set_protocols(api: RunningService, funded: Funded, protocols: list[str]) -> None:
    response = api.request(
        "PUT",
        f"/api/v1/8453/wallets/{funded.wallet}/protocols",
        protocols,
        headers=funded.headers,
    )
    assert response.status == 204, response.body


def test_a_read_after_put_protocols_shows_the_new_ones(
    api: RunningService, activated: Funded
) -> None:
    _read(api, activated.wallet)  # the old protocols, read once before the write

    for protocols in (["aave"], ["compound", "moonwell"], ["aave", "compound"]):
        _set_protocols(api, activated, protocols)

        assert _read(api, activated.wallet).json()["selected_protocols"] == protocols
        assert _read(api, activated.eoa, "?eoa=true").json()["selected_protocols"] == protocols


def test_no_reply_says_it_may_be_cached(api: RunningService, activated: Funded) -> None:
    for _ in range(3):
        response = _read(api, activated.wallet)

        assert "cache-control" not in response.headers
        assert "age" not in response.headers


def test_every_spelling_of_the_address_reads_the_same_wallet(
    api: RunningService, activated: Funded
) -> None:
    wallet, eoa = activated.wallet, activated.eoa
    first = _read(api, wallet).json()
    spellings = [wallet, wallet.lower(), "0x" + wallet[2:].upper()]
    eoas = [eoa, eoa.lower(), "0x" + eoa[2:].upper()]

    assert all(_read(api, key).json() == first for key in spellings)
    assert all(_read(api, key, "?eoa=true").json() == first for key in eoas)

    _set_protocols(api, activated, ["moonwell"])
    assert {tuple(_read(api, key).json()["selected_protocols"]) for key in spellings} == {
        ("moonwell",)
    }


def test_an_address_that_is_no_address_is_refused_in_the_contract_shape(
    api: RunningService,
) -> None:
    response = api.request("GET", "/api/v1/8453/wallets/0xnot-an-address")

    assert response.status == 422, response.body
    assert response.error()["detail"][0]["loc"] == ["path", "wallet"]


@pytest.fixture
def replica(api: RunningService, tmp_path: Path) -> Iterator[RunningService]:
    """A second replica (its own Envoy and gRPC server) on the same database."""
    with running_service(api.database_url, tmp_path) as other:
        yield other


def test_a_write_through_one_replica_is_read_at_once_through_another(
    api: RunningService, replica: RunningService, activated: Funded
) -> None:
    assert _read(replica, activated.wallet).json()["status"] == "activated"

    _set_protocols(api, activated, ["compound"])
    assert _read(replica, activated.wallet).json()["selected_protocols"] == ["compound"]

    response = api.request(
        "POST",
        f"/api/v1/8453/wallets/{activated.wallet}:deactivate?transfer=false",
        headers=activated.headers,
    )
    assert response.status == 200, response.body
    assert _read(replica, activated.wallet).json()["status"] == "deactivated"
    assert _read(replica, activated.eoa, "?eoa=true").json()["status"] == "deactivated"
