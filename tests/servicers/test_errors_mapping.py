"""Each domain error maps once to a gRPC code and a REST status and body."""

from __future__ import annotations

import json

import grpc
import pytest

from yieldagent.domain import errors as domain
from yieldagent.servicers.errors import grpc_status, rest_body, status_of
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
        (domain.NotImplementedYet("no"), grpc.StatusCode.UNIMPLEMENTED, 501),
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
