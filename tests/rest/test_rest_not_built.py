"""Every documented path exists; those not built yet answer 501 with a detail, never data."""

from __future__ import annotations

import pytest

from support.service import RunningService

W = "0x" + "ef" * 20
NOT_BUILT = [
    ("GET", f"/api/v1/8453/wallets/{W}"),
    ("GET", f"/api/v1/8453/wallets/{W}?eoa=true"),
    ("GET", "/api/v1/8453/stats"),
    ("POST", "/api/v1/8453/wallets"),
    ("POST", f"/api/v1/8453/wallets/{W}:deactivate?transfer=false"),
    ("POST", f"/api/v1/8453/wallets/{W}:withdraw"),
    ("POST", f"/api/v1/8453/wallets/{W}:run"),
    ("POST", f"/api/v1/8453/wallets/{W}:top-up?tx_hash=0x" + "00" * 32),
    ("POST", f"/api/v1/8453/wallets/{W}:claim-rewards"),
    ("PUT", f"/api/v1/8453/wallets/{W}/protocols"),
    ("GET", f"/api/v1/8453/wallets/{W}/transactions?page=2&limit=5&sort=date_asc"),
    ("GET", f"/api/v1/8453/wallets/{W}/apr?start_date=2026-01-01T00:00:00%2B02:00"),
    ("GET", f"/api/v1/8453/rewards/{W}/history"),
    ("GET", f"/api/v1/8453/rewards/{W}"),
    ("POST", f"/api/v1/8453/rewards/{W}"),
    ("POST", "/api/v1/optimizer/8453/optimize"),
]


@pytest.mark.parametrize(("method", "path"), NOT_BUILT)
def test_not_built_endpoints_answer_501(
    api: RunningService, keyed: dict[str, str], method: str, path: str
) -> None:
    body = ["aave"] if path.endswith("/protocols") else ({} if method != "GET" else None)
    response = api.request(method, path, body, keyed)
    assert response.status == 501
    assert "not implemented yet" in response.json()["detail"]
