"""Each domain error maps once to a gRPC code and a REST status and body."""

from __future__ import annotations

import json
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from yieldagent.domain import errors as domain
from yieldagent.servicers.errors import abort, grpc_status, rest_body, status_of
from yieldagent.servicers.method_policy import load_policies

CREATE = load_policies()["/yieldagent.v1.SmartAccountService/CreateSmartAccount"]


@pytest.mark.parametrize(
    ("error", "code", "http"),
    [
        (domain.InvalidInput.field(("eoa",), "bad"), grpc.StatusCode.INVALID_ARGUMENT, 422),
        (domain.InvalidRequest("no"), grpc.StatusCode.INVALID_ARGUMENT, 400),
        (domain.AuthenticationFailed("no"), grpc.StatusCode.UNAUTHENTICATED, 401),
        (domain.AccessDenied("no"), grpc.StatusCode.PERMISSION_DENIED, 403),
        (domain.NotFound("no"), grpc.StatusCode.NOT_FOUND, 404),
        (domain.Conflict("no"), grpc.StatusCode.FAILED_PRECONDITION, 409),
        (domain.Conflict("busy", retry_after_seconds=3), grpc.StatusCode.ABORTED, 409),
        (domain.ChainRejected("reverted: no", "no"), grpc.StatusCode.FAILED_PRECONDITION, 409),
        (domain.ChainUnavailable("down"), grpc.StatusCode.UNAVAILABLE, 503),
        (domain.NotImplementedYet("no"), grpc.StatusCode.UNIMPLEMENTED, 501),
        (domain.RateLimited("slow down", 2), grpc.StatusCode.RESOURCE_EXHAUSTED, 429),
        (domain.ConfigurationError("no"), grpc.StatusCode.INTERNAL, 500),
        (None, grpc.StatusCode.INTERNAL, 500),
    ],
)
def test_status_of(error: domain.YieldAgentError | None, code: grpc.StatusCode, http: int) -> None:
    assert status_of(error) == (code, http)
    assert grpc_status(error).code == code


def test_rest_bodies() -> None:
    assert json.loads(rest_body(domain.NotFound("gone"), CREATE)) == {"detail": "gone"}
    assert json.loads(rest_body(None, CREATE)) == {"detail": "Internal server error"}
    invalid = domain.InvalidInput([domain.FieldViolation(("eoa",), "bad é", "value_error")])
    body = rest_body(invalid, CREATE)
    assert body.isascii()  # it travels in a header
    assert json.loads(body) == {
        "detail": [{"loc": ["body", "eoa"], "msg": "bad é", "type": "value_error"}]
    }


def test_a_revert_reaches_the_caller_with_its_reason() -> None:
    rejected = domain.ChainRejected("transaction 0xab reverted: not enough cash", "not enough cash")
    assert json.loads(rest_body(rejected, CREATE)) == {
        "detail": "transaction 0xab reverted: not enough cash"
    }
    status = grpc_status(rejected)
    assert status.details == "transaction 0xab reverted: not enough cash"
    [info] = _details(rejected)
    assert info.reason == "CHAIN_REJECTED"
    replayed = domain.error_named("ChainRejected", rejected.detail)  # a stored failure
    assert isinstance(replayed, domain.ChainRejected) and replayed.detail == rejected.detail


def test_a_header_location_stays_a_header() -> None:
    invalid = domain.InvalidInput.field(("header", "Idempotency-Key"), "bad", "value_error")
    assert json.loads(rest_body(invalid, CREATE))["detail"][0]["loc"] == [
        "header",
        "Idempotency-Key",
    ]


def _details(error: domain.YieldAgentError) -> list[Any]:
    """The google.rpc details a status carries, unpacked."""
    metadata = dict(grpc_status(error).trailing_metadata)
    status = status_pb2.Status.FromString(metadata["grpc-status-details-bin"])
    kinds = {"ErrorInfo": error_details_pb2.ErrorInfo, "RetryInfo": error_details_pb2.RetryInfo}
    found = []
    for packed in status.details:
        detail = kinds[packed.TypeName().rsplit(".", 1)[1]]()
        packed.Unpack(detail)
        found.append(detail)
    return found


def test_a_retry_hint_is_a_retry_info_detail() -> None:
    info, retry = _details(domain.Conflict("busy", retry_after_seconds=3))
    assert info.reason == "CONFLICT" and retry.retry_delay.seconds == 3
    assert [type(d).__name__ for d in _details(domain.Conflict("no"))] == ["ErrorInfo"]


class _Context:
    def __init__(self) -> None:
        self.trailing: tuple[tuple[str, Any], ...] = ()

    async def abort(self, code: grpc.StatusCode, details: str, trailing_metadata: Any) -> None:
        self.trailing = tuple(trailing_metadata)


@pytest.mark.parametrize("rest", [True, False], ids=["rest", "grpc"])
async def test_only_rest_calls_get_a_retry_after_header(rest: bool) -> None:
    context = _Context()
    await abort(context, domain.Conflict("busy", retry_after_seconds=3), CREATE, rest)
    headers = dict(context.trailing)
    assert headers.get("retry-after") == ("3" if rest else None)
    await abort(context, domain.Conflict("no"), CREATE, rest)
    assert "retry-after" not in dict(context.trailing)


def test_a_retry_hint_cannot_be_negative() -> None:
    with pytest.raises(ValueError, match="negative"):
        domain.Conflict("busy", retry_after_seconds=-1)


async def test_a_rate_limit_gives_a_retry_info_and_a_retry_after_header() -> None:
    limited = domain.RateLimited("Rate limit exceeded", 2)
    info, retry = _details(limited)
    assert info.reason == "RATE_LIMITED" and retry.retry_delay.seconds == 2
    context = _Context()
    await abort(context, limited, CREATE, True, (("x-request-id", "abc"),))
    headers = dict(context.trailing)
    assert headers["retry-after"] == "2" and headers["x-yieldagent-status"] == "429"
    assert json.loads(headers["x-yieldagent-error"]) == {"detail": "Rate limit exceeded"}
    assert headers["x-request-id"] == "abc"  # the id the server made, for direct callers
