"""Bad input, through Envoy, to the real service: a clear 4xx in the contract's shape.

Each test is a malformed request fuzzing found; its docstring says what was wrong with
the answer. No malformed request may answer 5xx, leak internals, or change anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from support.funded import PROTOCOLS, USDC, Funded
from support.service import Response, RunningService

WALLETS = "/api/v1/8453/wallets"
OPTIMIZE = "/api/v1/optimizer/8453/optimize"
MAX_AMOUNT = 2**256 - 1


def _detail(response: Response) -> Any:
    assert response.headers["content-type"] == "application/json", response.headers
    body = response.json()
    # Every error body carries the request's id, but for requests Envoy refuses before
    # any filter sees them (headers too large for its parser): those have no id.
    assert body.pop("request_id", None) == response.headers.get("x-request-id"), body
    assert set(body) == {"detail"}, body
    return body["detail"]


def _field_error(response: Response, loc: Sequence[str | int]) -> dict[str, Any]:
    assert response.status == 422, (response.status, response.body[:300])
    detail = _detail(response)
    assert [item["loc"] for item in detail] == [list(loc)], detail
    assert set(detail[0]) == {"loc", "msg", "type"}
    return dict(detail[0])


def _selected(api: RunningService, funded: Funded) -> list[str]:
    return list(api.request("GET", f"{WALLETS}/{funded.wallet}").json()["selected_protocols"])


# -- query parameters --------------------------------------------------------------------


@pytest.mark.parametrize("query", ["x=1", "%00=yes", "page=1&%ff=%ff", "a", "&&", "=1"])
def test_unknown_query_parameters_are_ignored(api: RunningService, query: str) -> None:
    """They answered 503, and ?%00=yes 502."""
    response = api.request("GET", f"/api/v1/chains?{query}")
    assert response.status == 200
    assert response.json()["chain_ids"]


def test_unknown_query_parameters_are_ignored_on_keyed_calls(
    api: RunningService, activated: Funded
) -> None:
    path = f"{WALLETS}/{activated.wallet}/transactions?limit=5&utm_source=mail"
    response = api.request("GET", path, headers=activated.headers)
    assert response.status == 200
    assert response.json()["pagination"]["items_per_page"] == 5


@pytest.mark.parametrize(
    ("query", "loc"),
    [
        ("sort=%ff", ["query", "sort"]),
        ("limit=1.0", ["query", "limit"]),
        ("page=%2B1", ["query", "page"]),
        ("page=%20%201", ["query", "page"]),
    ],
)
def test_query_values_are_read_exactly(
    api: RunningService, activated: Funded, query: str, loc: list[str]
) -> None:
    """?sort=%ff answered 500, like an invalid UTF-8 path value."""
    path = f"{WALLETS}/{activated.wallet}/transactions?{query}"
    response = api.request("GET", path, headers=activated.headers)
    _field_error(response, loc)


@pytest.mark.parametrize("value", ["yes", "y", "t", "2", "", "%ff"])
def test_a_query_bool_is_true_false_1_or_0(api: RunningService, value: str) -> None:
    """?eoa=yes was read as true."""
    response = api.request("GET", f"{WALLETS}/0x{'ab' * 20}?eoa={value}")
    _field_error(response, ["query", "eoa"])


@pytest.mark.parametrize("value", ["true", "True", "1", "false", "0"])
def test_query_bools_take_true_false_1_and_0(api: RunningService, value: str) -> None:
    response = api.request("GET", f"{WALLETS}/0x{'ab' * 20}?eoa={value}")
    assert response.status == 404  # no such wallet: the query was read


# -- paths ---------------------------------------------------------------------------------


@pytest.mark.parametrize("segment", ["%ff", "%C3%28", "%ED%A0%80", "a%80b"])
def test_a_path_value_that_is_not_utf8_is_a_422_on_that_field(
    api: RunningService, segment: str
) -> None:
    """GET /api/v1/8453/wallets/%ff answered 500 with a protobuf DecodeError in the body."""
    response = api.request("GET", f"{WALLETS}/{segment}")
    error = _field_error(response, ["path", "wallet"])
    assert error["type"] == "string_unicode"
    assert b"Decode" not in response.body and b"protobuf" not in response.body


def test_a_path_integer_that_is_not_utf8_points_at_the_path(api: RunningService) -> None:
    response = api.request("GET", "/api/v1/%ff/tokens")
    _field_error(response, ["path", "chain_id"])
    response.body.decode("utf-8")  # the echo is valid UTF-8


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/yieldagent.v1.HealthcheckService/Check"),
        ("POST", "/yieldagent.v1.WalletService/GetWallet"),
        ("POST", "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"),
        ("GET", "/api/v1"),
        ("GET", "/api/v2/chains"),
        ("GET", "/"),
    ],
)
@pytest.mark.parametrize("content_type", ["application/json", "application/grpc"])
def test_only_the_rest_paths_are_served(
    api: RunningService, method: str, path: str, content_type: str
) -> None:
    """Raw gRPC paths were proxied to the gRPC server (the REST port served gRPC)."""
    response = api.request(method, path, headers={"Content-Type": content_type}, raw=b"")
    assert response.status == 404
    assert _detail(response) == "Not Found"


@pytest.mark.parametrize(
    "content_type", ["application/grpc", "application/grpc+proto", "Application/gRPC-Web"]
)
def test_a_grpc_content_type_on_a_rest_path_is_415(api: RunningService, content_type: str) -> None:
    """It answered 200 with an Envoy reset message as detail."""
    for method in ("GET", "POST"):
        response = api.request(
            method, "/api/v1/chains", headers={"Content-Type": content_type}, raw=b""
        )
        assert response.status == 415
        assert "gRPC has its own port" in _detail(response)


@pytest.mark.parametrize("method", ["FOO", "DELETE", "PATCH", "OPTIONS", "TRACE"])
def test_unknown_methods_are_404(api: RunningService, method: str) -> None:
    """FOO /api/v1/chains answered 422 "JSON decode error"."""
    response = api.request(method, "/api/v1/chains")
    assert response.status == 404
    assert _detail(response) == "Not Found"


def test_head_gets_no_body(api: RunningService) -> None:
    response = api.request("HEAD", "/api/v1/chains")
    assert response.status == 404
    assert response.body == b""


# -- headers -------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [8_500, 12_000, 16_500, 40_000, 70_000])
def test_oversized_headers_are_431(api: RunningService, size: int) -> None:
    """Over 16 KB they answered 429 (gRPC's metadata limit), and from 8 KB they could."""
    response = api.request("GET", "/api/v1/chains", headers={"X-Big": "a" * size})
    assert response.status == 431
    assert _detail(response) == "Request Header Fields Too Large"


def test_headers_well_under_the_limit_pass(api: RunningService) -> None:
    response = api.request("GET", "/api/v1/chains", headers={"X-Big": "a" * 4_000})
    assert response.status == 200


def test_credentials_under_envoys_limit_are_refused_as_credentials(api: RunningService) -> None:
    """With Envoy's own headers added they exceed gRPC's default metadata limit (8 KiB),
    which answered a 5xx: the service takes more than Envoy admits."""
    headers = {"X-Partner-Name": "p" * 7_900, "X-Partner-API-Key": "ya_x"}
    response = api.request("GET", f"{WALLETS}/0x{'ab' * 20}/transactions", headers=headers)
    assert response.status == 401
    assert _detail(response) == "Invalid or missing API key"


def test_many_headers_under_envoys_limit_pass(api: RunningService) -> None:
    """95 headers of 7,600 bytes: with gRPC's 32 bytes per entry, 10.6 KB of metadata.
    Between its soft (8 KiB) and hard limits gRPC refuses a share of such calls at random:
    20 of them all pass only when the limit is above them."""
    headers = {f"x-h{i:02}": "v" * 74 for i in range(95)}
    for _ in range(20):
        response = api.request("GET", "/api/v1/chains", headers=headers)
        assert response.status == 200, response.body


# -- echoed input ----------------------------------------------------------------------------


@pytest.mark.parametrize("size", [20_000, 100_000])
def test_a_huge_protocol_name_is_a_400_with_the_echo_cut(
    api: RunningService, activated: Funded, size: int
) -> None:
    """A 20 KB name answered 503 and a 100 KB one 502: the echo overflowed the metadata."""
    before = _selected(api, activated)
    name = "p" * size
    url = f"{WALLETS}/{activated.wallet}/protocols"
    response = api.request("PUT", url, ["aave", name], activated.headers)
    assert response.status == 400
    detail = _detail(response)
    assert detail.startswith("Invalid protocol name: ppp")
    assert "…" in detail and len(detail) <= 301
    assert _selected(api, activated) == before


def test_a_huge_map_key_is_cut_in_the_loc(api: RunningService, keyed: dict[str, str]) -> None:
    key = "k" * 50_000
    body = {"total_capital": "1", "token_address": USDC, "current_allocations": {key: "x"}}
    response = api.request("POST", OPTIMIZE, body, keyed)
    assert response.status == 422
    [item] = _detail(response)
    assert item["loc"][:2] == ["body", "current_allocations"]
    assert len(item["loc"][2]) <= 303 and "…" in item["loc"][2]


# -- lenient parsing that changed data ---------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "loc", "kind"),
    [
        ([["compound"]], ["body", 0], "string_type"),
        ("compound", ["body"], "list_type"),
        (["compound", 5], ["body", 1], "string_type"),
        (["compound", None], ["body", 1], "string_type"),
        ({"protocols": ["compound"]}, ["body"], "list_type"),
    ],
    ids=["nested list", "bare string", "a number", "a null", "an object"],
)
def test_a_protocol_list_must_be_a_list_of_strings(
    api: RunningService, activated: Funded, body: Any, loc: list[Any], kind: str
) -> None:
    """[["compound"]] answered 204 and saved ["compound"]; "compound" did the same."""
    before = _selected(api, activated)
    url = f"{WALLETS}/{activated.wallet}/protocols"
    response = api.request("PUT", url, body, activated.headers)
    assert _field_error(response, loc)["type"] == kind
    assert _selected(api, activated) == before


@pytest.mark.parametrize("value", ["yes", "true", 1, 0, "1", [True], {"v": True}])
def test_is_staked_must_be_a_json_bool(api: RunningService, activated: Funded, value: Any) -> None:
    """{"is_staked": "yes"} and {"is_staked": 1} were accepted as true."""
    url = f"/api/v1/8453/rewards/{activated.wallet}"
    response = api.request("POST", url, {"is_staked": value}, activated.headers)
    _field_error(response, ["body", "is_staked"])
    assert api.request("GET", url, headers=activated.headers).json()["is_staked"] is False


def test_a_field_answers_to_its_json_name_and_escapes_with_the_same_checks(
    api: RunningService, activated: Funded
) -> None:
    url = f"/api/v1/8453/rewards/{activated.wallet}"
    for raw in (b'{"isStaked": 1}', b'{"is\\u005fstaked": "yes"}'):
        response = api.request("POST", url, headers=activated.headers, raw=raw)
        _field_error(response, ["body", "is_staked"])


@pytest.mark.parametrize(
    ("body", "loc", "kind"),
    [
        ({"eoa": 5, "chain": 8453}, ["body", "eoa"], "string_type"),
        ({"eoa": "0x" + "ab" * 20, "chain": "8453"}, ["body", "chain"], "int_type"),
        ({"eoa": "0x" + "ab" * 20, "chain": 8453.5}, ["body", "chain"], "int_from_float"),
        (
            {"eoa": "0x" + "ab" * 20, "chain": 8453, "agent_id": 12},
            ["body", "agent_id"],
            "string_type",
        ),
        ({"eoa": True, "chain": 8453}, ["body", "eoa"], "string_type"),
        ({"eoa": {"a": 1}, "chain": 8453}, ["body", "eoa"], "string_type"),
    ],
)
def test_each_field_takes_its_own_json_type(
    api: RunningService, keyed: dict[str, str], body: Any, loc: list[str], kind: str
) -> None:
    """An integer reached a string field as a string: agent_id 12 made the account of "12"."""
    response = api.request("POST", "/api/v1/proxy/zerodev/smart-accounts", body, keyed)
    assert _field_error(response, loc)["type"] == kind


@pytest.mark.parametrize(
    "raw",
    [b'{"is_staked": true,}', b"{'is_staked': true}", b'{"is_staked": tru}', b"[1,2", b'"\\x"'],
)
def test_malformed_json_is_a_422(api: RunningService, activated: Funded, raw: bytes) -> None:
    url = f"/api/v1/8453/rewards/{activated.wallet}"
    response = api.request("POST", url, headers=activated.headers, raw=raw)
    assert _field_error(response, ["body"])["type"] == "json_invalid"


def test_a_body_cannot_override_a_path_value(api: RunningService, activated: Funded) -> None:
    other = "0x" + "cd" * 20
    url = f"{WALLETS}/{activated.wallet}:run"
    response = api.request("POST", url, {"wallet": other}, activated.headers)
    assert response.status == 422
    assert other.lower() in response.body.decode().lower()


def test_a_get_body_is_ignored(api: RunningService, activated: Funded) -> None:
    other = "0x" + "cd" * 20
    response = api.request("GET", f"{WALLETS}/{activated.wallet}", {"wallet": other, "eoa": 1})
    assert response.status == 200
    assert response.json()["wallet"] == activated.wallet


# -- amounts -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("amount", "kind"),
    [
        ("²", "int_parsing"),
        ("١٢", "int_parsing"),
        ("9" * 5_000, "less_than_equal"),
        (str(MAX_AMOUNT + 1), "less_than_equal"),
        (1.5, "int_from_float"),
        (True, "int_type"),
    ],
    ids=["superscript", "arabic-indic", "5000 digits", "2**256", "fraction", "bool"],
)
def test_a_withdrawal_amount_is_checked_strictly(
    api: RunningService, activated: Funded, amount: Any, kind: str
) -> None:
    """ "²" answered 500 (int() refused what isdigit() accepted), 5,000 digits too."""
    url = f"{WALLETS}/{activated.wallet}:withdraw"
    response = api.request("POST", url, {"amount": amount}, activated.headers)
    assert _field_error(response, ["body", "amount"])["type"] == kind
    assert api.request("GET", f"{WALLETS}/{activated.wallet}").json()["withdraws"] == []


@pytest.mark.parametrize(
    "raw",
    [
        b'{"total_capital": "1' + b"0" * 400 + b'"',
        b'{"total_capital": 1' + b"0" * 400,
        b'{"total_capital": "' + b"9" * 5_000 + b'"',
    ],
    ids=["10**400 as text", "10**400 as a number", "5000 digits"],
)
def test_an_optimizer_capital_beyond_uint256_is_a_422(
    api: RunningService, keyed: dict[str, str], raw: bytes
) -> None:
    """total_capital 10**400 answered 500: a float conversion overflowed."""
    body = raw + b', "token_address": "' + USDC.encode() + b'", "protocols": ["aave"]}'
    response = api.request("POST", OPTIMIZE, headers=keyed, raw=body)
    assert _field_error(response, ["body", "total_capital"])["type"] == "less_than_equal"


def test_the_largest_capital_is_optimized_without_failing(
    api: RunningService, keyed: dict[str, str]
) -> None:
    body = {"total_capital": MAX_AMOUNT, "token_address": USDC, "protocols": PROTOCOLS}
    response = api.request("POST", OPTIMIZE, body, keyed)
    assert response.status < 500, response.body[:300]


def test_query_values_are_checked_on_calls_with_a_body(
    api: RunningService, keyed: dict[str, str]
) -> None:
    """The transcoder binds query parameters even where the whole body is the message:
    POST …/smart-accounts?eoa=%80 answered 500 (found by test_bad_input_property)."""
    response = api.request("POST", "/api/v1/proxy/zerodev/smart-accounts?eoa=%80", {}, keyed)
    assert _field_error(response, ["query", "eoa"])["type"] == "string_unicode"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("X!Y", "1"),
        ("x-trace-bin", "!!!not base64"),
        ("grpc-timeout", "garbage"),
        ("grpc-timeout", "1n"),
        ("X-Tab", "a\tb"),
        ("X-Latin", "é"),
    ],
)
def test_headers_grpc_refuses_are_not_forwarded(
    api: RunningService, activated: Funded, name: str, value: str
) -> None:
    """A header name outside gRPC's metadata alphabet, a -bin value that is not base64 or
    a grpc-timeout of "garbage" failed the call: a 500."""
    headers = {**activated.headers, name: value}
    response = api.request("GET", f"{WALLETS}/{activated.wallet}/transactions", headers=headers)
    assert response.status == 200, response.body
