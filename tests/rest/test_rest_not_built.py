"""Every documented path exists; those not built yet answer 501 with a detail, never data."""

from __future__ import annotations

import pytest

from support.service import RunningService

W = "0x" + "ef" * 20
NOT_BUILT = [
    ("POST", f"/api/v1/8453/wallets/{W}:run"),
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
