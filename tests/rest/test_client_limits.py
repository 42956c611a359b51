"""Per-client limits at the edge, through a real Envoy: public requests and requests from
an address whose partner keys keep failing get a token bucket per client address.

Every client here is a loopback address of its own (127.0.0.2, 127.0.0.3, ...), which
Linux routes to the listener on 127.0.0.1: that is how one test tells addresses apart.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from http.client import HTTPConnection
from pathlib import Path

import pytest
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


def _get(service: RunningService, source: str, path: str, headers: dict[str, str]) -> Response:
    connection = HTTPConnection(
        "127.0.0.1", service.http_port, timeout=30, source_address=(source, 0)
    )
    try:
        connection.request("GET", path, headers=headers)
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
