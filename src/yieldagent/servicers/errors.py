"""The one place where domain errors become gRPC statuses and REST responses.

gRPC callers get a canonical status code plus ``google.rpc`` details in
``grpc-status-details-bin``: an ErrorInfo always, and a BadRequest with field
violations for malformed input, a RetryInfo for a conflict with a retry hint and
for an exceeded rate limit (RESOURCE_EXHAUSTED). Calls through the REST edge also
get the REST status and the contract's JSON error body as metadata, which
envoy/rest.lua turns into the HTTP response (adding the call's ``request_id`` to
the body), and the retry hint as a ``Retry-After`` header.

A failure of the chain's node (``NodeUnavailable``) is told in one fixed sentence with the
call's request id, whatever the node or its HTTP client said: their words carry the node's
URL, and with it the provider's API key. The cause is in the log line of that request id.

Every other text a caller sees goes through ``shorten`` first: messages echo input (an
unknown protocol name, a map key), and all of it travels in metadata, whose size
gRPC and Envoy limit. At most ``MAX_VIOLATIONS`` malformed fields are listed.
"""

from __future__ import annotations

import json
import re

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from yieldagent.domain.errors import (
    NODE_DID_NOT_ANSWER,
    AccessDenied,
    AuthenticationFailed,
    ChainRejected,
    ChainUnavailable,
    Conflict,
    InvalidInput,
    InvalidRequest,
    NodeUnavailable,
    NotFound,
    NotImplementedYet,
    RateLimited,
    YieldAgentError,
)
from yieldagent.observability.logs import current_request_id
from yieldagent.servicers.method_policy import ERROR_HEADER, STATUS_HEADER, MethodPolicy

ERROR_DOMAIN = "yieldagent.v1"
RETRY_AFTER_HEADER = "retry-after"
INTERNAL_DETAIL = "Internal server error"

ECHO_HEAD = 200
ECHO_TAIL = 100
MAX_VIOLATIONS = 10


def shorten(text: str) -> str:
    """``text`` cut for an error: its first 200 and last 100 characters around "…".

    Texts of up to 301 characters are left whole. The tail keeps the end of a
    message, which usually follows the echoed value (the list of valid names, say).
    """
    if len(text) <= ECHO_HEAD + 1 + ECHO_TAIL:
        return text
    return text[:ECHO_HEAD] + "…" + text[-ECHO_TAIL:]


def told(error: YieldAgentError | None) -> str:
    """The text a caller is told of ``error``."""
    if error is None:
        return INTERNAL_DETAIL
    if isinstance(error, NodeUnavailable):
        request_id = current_request_id()
        return f"{NODE_DID_NOT_ANSWER} (request {request_id})" if request_id else error.detail
    return shorten(error.detail)


def _shown(loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    return tuple(shorten(part) if isinstance(part, str) else part for part in loc)


# Each kind of error, once: its gRPC code and its REST status.
STATUS_OF: dict[type[YieldAgentError], tuple[grpc.StatusCode, int]] = {
    InvalidInput: (grpc.StatusCode.INVALID_ARGUMENT, 422),
    InvalidRequest: (grpc.StatusCode.INVALID_ARGUMENT, 400),
    AuthenticationFailed: (grpc.StatusCode.UNAUTHENTICATED, 401),
    AccessDenied: (grpc.StatusCode.PERMISSION_DENIED, 403),
    NotFound: (grpc.StatusCode.NOT_FOUND, 404),
    Conflict: (grpc.StatusCode.FAILED_PRECONDITION, 409),
    ChainRejected: (grpc.StatusCode.FAILED_PRECONDITION, 409),  # the revert reason in detail
    ChainUnavailable: (grpc.StatusCode.UNAVAILABLE, 503),
    NotImplementedYet: (grpc.StatusCode.UNIMPLEMENTED, 501),
    RateLimited: (grpc.StatusCode.RESOURCE_EXHAUSTED, 429),  # with RetryInfo / Retry-After
}
_INTERNAL = (grpc.StatusCode.INTERNAL, 500)
# A conflict that passes (it carries a retry hint): retry at a higher level.
_PASSING_CONFLICT = (grpc.StatusCode.ABORTED, 409)


def retry_after(error: YieldAgentError | None) -> int | None:
    """The seconds after which a retry may succeed, when the error says so."""
    if isinstance(error, Conflict | RateLimited):
        return error.retry_after_seconds
    return None


def status_of(error: YieldAgentError | None) -> tuple[grpc.StatusCode, int]:
    """gRPC code and REST status for an error; None stands for an unexpected failure."""
    if error is None:
        return _INTERNAL
    if isinstance(error, Conflict) and error.retry_after_seconds is not None:
        return _PASSING_CONFLICT
    for kind in type(error).__mro__:
        if kind in STATUS_OF:
            return STATUS_OF[kind]
    return _INTERNAL


def _reason(error: YieldAgentError | None) -> str:
    name = type(error).__name__ if error is not None else "Internal"
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


def _field_path(loc: tuple[str | int, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else part)
    return path


def rest_body(error: YieldAgentError | None, policy: MethodPolicy) -> str:
    """The contract's JSON error body: ``{"detail": ...}``.

    Input errors list each field with its REST location, such as ``["body", "eoa"]``.
    """
    if isinstance(error, InvalidInput):
        detail: object = [
            {"loc": list(_shown(policy.locate(v.loc))), "msg": shorten(v.msg), "type": v.type}
            for v in error.violations[:MAX_VIOLATIONS]
        ]
    else:
        detail = told(error)
    return json.dumps({"detail": detail}, ensure_ascii=True, separators=(",", ":"))


def grpc_status(error: YieldAgentError | None) -> grpc.Status:
    """The gRPC status, with google.rpc details, that reports ``error``."""
    code, _ = status_of(error)
    message = told(error)
    details = [error_details_pb2.ErrorInfo(reason=_reason(error), domain=ERROR_DOMAIN)]
    if isinstance(error, InvalidInput):
        details.append(
            error_details_pb2.BadRequest(
                field_violations=[
                    error_details_pb2.BadRequest.FieldViolation(
                        field=_field_path(_shown(v.loc)), description=shorten(v.msg), reason=v.type
                    )
                    for v in error.violations[:MAX_VIOLATIONS]
                ]
            )
        )
    delay = retry_after(error)
    if delay is not None:
        details.append(
            error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=delay))
        )
    packed = []
    for detail in details:
        holder = any_pb2.Any()
        holder.Pack(detail)
        packed.append(holder)
    status = status_pb2.Status(code=getattr(code_pb2, code.name), message=message, details=packed)
    return rpc_status.to_status(status)


async def abort(
    context: grpc.aio.ServicerContext,
    error: YieldAgentError | None,
    policy: MethodPolicy,
    rest: bool,
    extra: tuple[tuple[str, str], ...] = (),
) -> None:
    """Ends the call with ``error`` (None: an unexpected failure), adding ``extra`` to
    the trailing metadata (the request id the server made). Never returns."""
    status = grpc_status(error)
    metadata = tuple(status.trailing_metadata) + extra
    if rest:
        rest_status = str(status_of(error)[1])
        metadata += ((STATUS_HEADER, rest_status), (ERROR_HEADER, rest_body(error, policy)))
        if (delay := retry_after(error)) is not None:
            metadata += ((RETRY_AFTER_HEADER, str(delay)),)
    await context.abort(status.code, status.details, trailing_metadata=metadata)
