"""The edge serves the committed OpenAPI document, publicly, on GET and HEAD only."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.service import RunningService

DOCUMENT = Path(__file__).resolve().parents[2] / "envoy" / "openapi.json"

pytestmark = pytest.mark.parametrize("api", ["sqlite"], indirect=True)


def test_the_document_is_served_as_committed(api: RunningService) -> None:
    response = api.request("GET", "/api/v1/openapi.json")
    assert response.status == 200
    assert response.headers["content-type"] == "application/json"
    assert response.body == DOCUMENT.read_bytes()


def test_head_answers_without_a_body(api: RunningService) -> None:
    response = api.request("HEAD", "/api/v1/openapi.json")
    assert response.status == 200
    assert response.body == b""


def test_other_methods_reach_the_api_and_find_no_operation(api: RunningService) -> None:
    response = api.request("POST", "/api/v1/openapi.json", {"a": 1})
    assert response.status == 404
    assert response.json()["detail"] == "Not Found"


def test_partner_headers_change_nothing(api: RunningService) -> None:
    headers = {"X-Partner-Name": "nobody", "X-Partner-API-Key": "wrong"}
    response = api.request("GET", "/api/v1/openapi.json", headers=headers)
    assert response.status == 200
    assert response.body == DOCUMENT.read_bytes()
