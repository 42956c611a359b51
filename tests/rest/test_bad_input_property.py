"""Generated nasty requests to every REST method of the contract, through the real Envoy.

For each of the contract's 21 routes, hypothesis draws path values, a query string, a
body, credentials, a content type and extra headers: invalid UTF-8, control characters,
huge numbers, deep nesting, values of the wrong JSON type, Unicode digits, very long
strings, header names gRPC refuses, next to valid values (a real activated wallet, a real
partner's key) so that requests also get past the first checks. Whatever the request,
the answer is never a 5xx, and an error body has the contract's shape:
``{"detail": "..."}``, or for a 422 a list of
``{"loc": [...], "msg": "...", "type": "..."}``.

The profile keeps it bounded: ``FUZZ_EXAMPLES`` requests per route and backend (10, so
210 per backend; set ``YIELDAGENT_FUZZ_EXAMPLES`` for a longer run).
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest
from eth_utils.address import to_checksum_address
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from support.funded import PROTOCOLS, USDC
from support.service import Response, RunningService
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.storage.partners import PartnerStore

FUZZ_EXAMPLES = int(os.environ.get("YIELDAGENT_FUZZ_EXAMPLES", "10"))
settings.register_profile(
    "rest-fuzz",
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FUZZ = settings.get_profile("rest-fuzz")

# The contract's routes: method, path template, body kind (None: no body), query names.
ROUTES: list[tuple[str, str, str | None, tuple[str, ...]]] = [
    ("GET", "/api/v1/healthcheck", None, ()),
    ("GET", "/api/v1/chains", None, ()),
    ("GET", "/api/v1/{chain_id}/tokens", None, ()),
    ("GET", "/api/v1/{chain_id}/{token}/protocols", None, ()),
    ("GET", "/api/v1/{chain_id}/wallets/{wallet}", None, ("eoa",)),
    ("GET", "/api/v1/{chain_id}/stats", None, ()),
    ("POST", "/api/v1/{chain_id}/wallets", "object", ()),
    ("POST", "/api/v1/{chain_id}/wallets/{wallet}:deactivate", None, ("transfer",)),
    ("POST", "/api/v1/{chain_id}/wallets/{wallet}:withdraw", "object", ()),
    ("POST", "/api/v1/{chain_id}/wallets/{wallet}:run", None, ()),
    ("POST", "/api/v1/{chain_id}/wallets/{wallet}:top-up", None, ("tx_hash",)),
    ("POST", "/api/v1/{chain_id}/wallets/{wallet}:claim-rewards", None, ()),
    ("PUT", "/api/v1/{chain_id}/wallets/{wallet}/protocols", "list", ()),
    ("POST", "/api/v1/optimizer/{chain_id}/optimize", "object", ()),
    ("POST", "/api/v1/proxy/zerodev/smart-accounts", "object", ()),
    ("GET", "/api/v1/proxy/zerodev/smart-accounts", None, ("eoa", "chain", "agent_id")),
    ("GET", "/api/v1/{chain_id}/wallets/{wallet}/transactions", None, ("page", "limit", "sort")),
    (
        "GET",
        "/api/v1/{chain_id}/wallets/{wallet}/apr",
        None,
        ("start_date", "end_date", "use_exact_end_date"),
    ),
    ("GET", "/api/v1/{chain_id}/rewards/{wallet}/history", None, ("page", "limit", "sort")),
    ("GET", "/api/v1/{chain_id}/rewards/{wallet}", None, ()),
    ("POST", "/api/v1/{chain_id}/rewards/{wallet}", "object", ()),
]

# Field names the bodies use, so that generated members reach real fields.
FIELDS = [
    "wallet",
    "eoa",
    "initial_token",
    "selected_protocols",
    "tx_hash",
    "constraints",
    "kind",
    "params",
    "min_protocols",
    "min_fraction_per_protocol",
    "protocol",
    "max_amount",
    "max_ratio",
    "min_amount",
    "amount",
    "total_capital",
    "token_address",
    "current_allocations",
    "protocols",
    "wallet_address",
    "chain",
    "agent_id",
    "is_staked",
    "isStaked",
    "chain_id",
]


@dataclass(frozen=True)
class Target:
    """What the generated requests aim at on one backend."""

    headers: dict[str, str]
    wallet: str
    eoa: str
    tx_hash: str


_targets = itertools.count(0xF0220)


@pytest.fixture(scope="module")
def target(api: RunningService, api_engine: Engine, world: SimulatedMarket) -> Target:
    """A partner with every permission and an activated wallet of its own."""
    number = next(_targets)
    name = f"fuzz-{number}"
    _, key = PartnerStore(api_engine).create(name, PERMISSIONS)
    headers = {"X-Partner-Name": name, "X-Partner-API-Key": key}
    eoa = to_checksum_address(f"0x{number:040x}")
    created = api.request(
        "POST", "/api/v1/proxy/zerodev/smart-accounts", {"eoa": eoa, "chain": 8453}, headers
    )
    assert created.status == 200, created.body
    wallet = created.json()["smartAccount"]
    transfer = world.deposit_from(8453, USDC, eoa, wallet, 1_000 * 10**6)
    activation = {
        "wallet": wallet,
        "eoa": eoa,
        "initial_token": USDC,
        "selected_protocols": PROTOCOLS,
        "tx_hash": transfer.tx_hash,
    }
    activated = api.request("POST", "/api/v1/8453/wallets", activation, headers)
    assert activated.status == 201, activated.body
    return Target(headers, wallet, eoa, transfer.tx_hash)


# -- strategies ------------------------------------------------------------------------------

UNICODE_DIGITS = ["²", "٣", "１２", "߀", "๕", "Ⅻ", "𝟘"]
HUGE = [10**30, 2**256 - 1, 2**256, 10**400, -(2**63), 2**63]


def _long(text: str) -> st.SearchStrategy[str]:
    return st.sampled_from([1_000, 20_000, 100_000]).map(lambda n: (text * n)[:n])


nasty_text = st.one_of(
    st.text(max_size=30),  # any code point: controls, lone surrogates, non-characters
    st.sampled_from(UNICODE_DIGITS),
    st.sampled_from(["", " ", "0", "-1", "1e6", "0x10", "true", "null", "NaN", "aave", USDC]),
    st.integers().map(str),
    st.sampled_from(HUGE).map(str),
    _long("p"),
    _long("é\x00"),
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from(HUGE),
    st.floats(allow_nan=False, allow_infinity=False),
    nasty_text,
)
keys = st.one_of(st.sampled_from(FIELDS), st.text(max_size=12))
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(keys, children, max_size=5),
    ),
    max_leaves=12,
)


@st.composite
def bodies(draw: st.DrawFn, kind: str | None) -> bytes | None:
    """A body: JSON of the route's shape with nasty members, or anything at all."""
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return None
    if choice == 1:
        return draw(st.binary(max_size=64))
    if choice == 2:  # deep nesting
        depth = draw(st.sampled_from([30, 65, 101, 5_000]))
        opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
        return (opener * depth + "1" + closer * depth).encode()
    if choice == 3:  # numbers no double holds, strings no UTF-8 reads
        field = draw(st.sampled_from(FIELDS)).encode()
        literal = draw(
            st.sampled_from(
                [
                    b"1" + b"0" * 400,
                    b"9" * 5_000,
                    b"1e400",
                    b"-0",
                    b"01",
                    b'"\xff\xfe"',
                    b'"\\ud800"',
                ]
            )
        )
        return b'{"' + field + b'": ' + literal + b"}"
    if kind == "list" or choice == 4:
        value: Any = draw(st.lists(json_values, max_size=5))
    else:
        value = draw(st.dictionaries(keys, json_values, max_size=6))
    text = json.dumps(value, ensure_ascii=draw(st.booleans()))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: send it escaped
        return json.dumps(value, ensure_ascii=True).encode()


# Header names HTTP takes but gRPC metadata does not, names gRPC reads as its own, and
# values beyond printable ASCII. Framing headers stay out: a wrong Content-Length
# would leave Envoy waiting for the rest of the body.
header_names = st.one_of(
    st.from_regex(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,20}", fullmatch=True),
    st.sampled_from(
        [
            "grpc-timeout",
            "grpc-encoding",
            "grpc-status",
            "x-trace-bin",
            "te",
            "x-envoy-upstream-rq-timeout-ms",
            "x-yieldagent-status",
            "x-yieldagent-edge",
            "Content-Encoding",
        ]
    ),
).filter(
    lambda n: (
        n.lower() not in {"content-length", "transfer-encoding", "host", "connection", "expect"}
    )
)
header_values = st.one_of(
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=40).map(
        str.strip
    ),
    st.sampled_from(["1n", "garbage", "gzip", "!!!", "AAAA", "-1", "trailers"]),
    st.sampled_from([2_000, 6_000]).map(lambda n: "v" * n),
)


def _escaped(raw: bytes) -> str:
    return "".join(f"%{b:02X}" for b in raw)


def segments(valid: str) -> st.SearchStrategy[str]:
    """A path segment: the valid value, or a nasty one, percent-encoded."""
    return st.one_of(
        st.just(valid),
        st.just(valid),
        nasty_text.map(lambda t: quote(t.encode("utf-8", "surrogatepass"), safe="")),
        st.binary(min_size=1, max_size=12).map(_escaped),
    )


@st.composite
def queries(draw: st.DrawFn, names: tuple[str, ...]) -> str:
    pairs = draw(
        st.lists(
            st.tuples(
                st.one_of(st.sampled_from(names or ("x",)), st.text(max_size=6)),
                st.one_of(
                    nasty_text.map(lambda t: quote(t.encode("utf-8", "surrogatepass"), safe="")),
                    st.binary(max_size=8).map(_escaped),
                    st.sampled_from(["true", "false", "1", "0", "yes", "20", "101", "date_asc"]),
                ),
            ),
            max_size=4,
        )
    )
    encoded = [f"{quote(k.encode('utf-8', 'surrogatepass'), safe='')}={v}" for k, v in pairs]
    return "&".join(encoded)


@st.composite
def requests(
    draw: st.DrawFn, route: int, target: Target
) -> tuple[str, str, bytes | None, dict[str, str]]:
    method, template, kind, names = ROUTES[route]
    path = template
    for name, valid in (
        ("chain_id", "8453"),
        ("token", USDC),
        ("wallet", target.wallet),
    ):
        if "{" + name + "}" in path:
            path = path.replace("{" + name + "}", draw(segments(valid)))
    query = draw(queries(names))
    if query:
        path += "?" + query
    headers: dict[str, str] = draw(
        st.sampled_from(
            [
                {},
                dict(target.headers),
                {**target.headers, "X-Partner-API-Key": "ya_wrong"},
                {"X-Partner-Name": "nobody", "X-Partner-API-Key": "x" * 200},
            ]
        )
    )
    content_type = draw(
        st.sampled_from(
            [
                "application/json",
                "application/json",
                "application/json",
                "text/plain",
                "application/json; charset=latin-1",
                "application/grpc",
                "",
            ]
        )
    )
    if content_type:
        headers["Content-Type"] = content_type
    headers.update(draw(st.dictionaries(header_names, header_values, max_size=3)))
    body = draw(bodies(kind))
    method = draw(st.sampled_from([method] * 6 + ["GET", "POST", "PUT", "DELETE", "FOO"]))
    return method, path, body, headers


def _assert_contract_shape(method: str, path: str, response: Response) -> None:
    where = f"{method} {path[:200]} -> {response.status} {response.body[:300]!r}"
    assert response.status < 500, where
    if response.status < 400 or method == "HEAD":
        return
    assert response.headers.get("content-type") == "application/json", where
    body = json.loads(response.body.decode("utf-8"))
    assert isinstance(body, dict), where
    assert body.pop("request_id", None) == response.headers.get("x-request-id"), where
    assert set(body) == {"detail"}, where
    detail = body["detail"]
    if response.status != 422:
        assert isinstance(detail, str) and detail, where
        return
    assert isinstance(detail, list) and detail, where
    for item in detail:
        assert set(item) == {"loc", "msg", "type"}, where
        assert isinstance(item["loc"], list) and item["loc"], where
        assert all(isinstance(part, str | int) for part in item["loc"]), where
        assert isinstance(item["msg"], str) and isinstance(item["type"], str), where


@pytest.mark.parametrize("route", range(len(ROUTES)), ids=[f"{m} {p}" for m, p, _, _ in ROUTES])
def test_no_request_gets_a_5xx_or_an_error_outside_the_contract(
    api: RunningService, target: Target, route: int
) -> None:
    @FUZZ
    @given(request=requests(route, target))
    def check(request: tuple[str, str, bytes | None, dict[str, str]]) -> None:
        method, path, body, headers = request
        response = api.request(method, path, headers=headers, raw=body)
        _assert_contract_shape(method, path, response)

    check()
