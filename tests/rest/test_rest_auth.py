"""Partner authentication over REST: which endpoints need the key, and 401 versus 403.

Scope of the contract's "unlisted" endpoints (transactions, APR, reward history and
reward status): they need the key, like every call about one partner's wallets.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine

from support.service import RunningService
from yieldagent.storage.partners import PartnerStore

W = "0x" + "ee" * 20
KEYED = [
    ("POST", "/api/v1/proxy/zerodev/smart-accounts"),
    ("GET", "/api/v1/proxy/zerodev/smart-accounts?eoa=0x" + "ee" * 20 + "&chain=8453"),
    ("POST", "/api/v1/8453/wallets"),
    ("POST", f"/api/v1/8453/wallets/{W}:deactivate"),
    ("POST", f"/api/v1/8453/wallets/{W}:withdraw"),
    ("POST", f"/api/v1/8453/wallets/{W}:run"),
    ("POST", f"/api/v1/8453/wallets/{W}:top-up?tx_hash=0x" + "00" * 32),
    ("POST", f"/api/v1/8453/wallets/{W}:claim-rewards"),
    ("PUT", f"/api/v1/8453/wallets/{W}/protocols"),
    ("POST", "/api/v1/optimizer/8453/optimize"),
    ("POST", f"/api/v1/8453/rewards/{W}"),
    # The contract leaves these four unlisted; we require the key.
    ("GET", f"/api/v1/8453/wallets/{W}/transactions"),
    ("GET", f"/api/v1/8453/wallets/{W}/apr"),
    ("GET", f"/api/v1/8453/rewards/{W}/history"),
    ("GET", f"/api/v1/8453/rewards/{W}"),
]
PUBLIC = [
    "/api/v1/healthcheck",
    "/api/v1/chains",
    "/api/v1/8453/tokens",
    "/api/v1/8453/0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913/protocols",
    f"/api/v1/8453/wallets/{W}",
    "/api/v1/8453/stats",
]


def _body(method: str, path: str) -> Any:
    if path.endswith("/protocols") and method == "PUT":
        return ["aave"]
    return {} if method in ("POST", "PUT") else None


@pytest.mark.parametrize(("method", "path"), KEYED)
def test_keyed_endpoints_refuse_missing_and_wrong_keys(
    api: RunningService, keyed: dict[str, str], method: str, path: str
) -> None:
    wrong = {**keyed, "X-Partner-API-Key": keyed["X-Partner-API-Key"] + "x"}
    for headers in (
        {},
        {"X-Partner-Name": keyed["X-Partner-Name"]},
        wrong,
        {"X-Partner-Name": "nobody", "X-Partner-API-Key": "ya_nothing"},
    ):
        response = api.request(method, path, _body(method, path), headers)
        assert response.status == 401, (headers, response.body)
        assert response.error() == {"detail": "Invalid or missing API key"}


@pytest.mark.parametrize(("method", "path"), KEYED)
def test_keyed_endpoints_let_a_valid_partner_through(
    api: RunningService, keyed: dict[str, str], method: str, path: str
) -> None:
    response = api.request(method, path, _body(method, path), keyed)
    assert response.status not in (401, 403), response.body


@pytest.mark.parametrize("path", PUBLIC)
def test_public_endpoints_need_no_key(api: RunningService, path: str) -> None:
    response = api.request("GET", path)
    assert response.status not in (401, 403), response.body


def test_a_disabled_partner_gets_403(
    api: RunningService, api_engine: Engine, make_partner: Any
) -> None:
    headers = make_partner()
    PartnerStore(api_engine).disable(headers["X-Partner-Name"])
    response = api.request(
        "POST",
        "/api/v1/proxy/zerodev/smart-accounts",
        {"eoa": "0x" + "ab" * 20, "chain": 8453},
        headers,
    )
    assert response.status == 403
    assert response.error() == {"detail": "Access denied: the API key is inactive"}


def test_a_partner_without_the_permission_gets_403(api: RunningService, make_partner: Any) -> None:
    headers = make_partner(frozenset({"wallets"}))
    response = api.request(
        "POST",
        "/api/v1/proxy/zerodev/smart-accounts",
        {"eoa": "0x" + "ab" * 20, "chain": 8453},
        headers,
    )
    assert response.status == 403
    assert response.json()["detail"] == "Access denied: the partner may not use accounts"


def test_a_rotated_key_replaces_the_old_one(
    api: RunningService, api_engine: Engine, make_partner: Any
) -> None:
    headers = make_partner()
    _, new_key = PartnerStore(api_engine).rotate(headers["X-Partner-Name"])
    body = {"eoa": "0x" + "ab" * 20, "chain": 8453, "agent_id": "rotation"}
    path = "/api/v1/proxy/zerodev/smart-accounts"
    assert api.request("POST", path, body, headers).status == 401
    assert api.request("POST", path, body, {**headers, "X-Partner-API-Key": new_key}).status == 200
