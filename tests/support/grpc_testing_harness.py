"""Runs the async servicers under grpc_testing, which only calls sync methods.

``serve`` wraps a servicer in a sync adapter: for each method of the service, a
function that runs the servicer's coroutine to completion on a private event loop.
Around the call it does what the production interceptor does for a keyed method
(binds the calling partner) and for a refusal (turns a ``YieldAgentError`` into
the gRPC status that ``servicers.errors.status_of`` picks, with the error's detail).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import grpc
import grpc_testing
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import Message

from yieldagent.domain.errors import YieldAgentError
from yieldagent.domain.ports.credentials import Partner
from yieldagent.servicers.auth import Authenticator
from yieldagent.servicers.errors import status_of

SyncMethod = Callable[[Any, Any], Any]


def _sync_method(servicer: object, name: str, partner: Partner | None) -> SyncMethod:
    method = getattr(servicer, name)

    def call(request: Any, context: Any) -> Any:
        # grpc_testing runs each call on a thread of its own: bind there, not here.
        token = Authenticator.bind(partner) if partner is not None else None
        try:
            with asyncio.Runner() as runner:  # a private loop, closed after the call
                return runner.run(method(request, context))
        except YieldAgentError as error:
            code, _ = status_of(error)
            context.abort(code, error.detail)  # raises, as grpc's abort does
            raise AssertionError("context.abort returned") from error
        finally:
            if token is not None:
                Authenticator.unbind(token)

    return call


class _SyncAdapter:
    """Exposes each method of a service as a sync function grpc_testing can call."""

    def __init__(self, methods: dict[str, SyncMethod]) -> None:
        self._methods = methods

    def __getattr__(self, name: str) -> SyncMethod:
        try:
            return self._methods[name]
        except KeyError:
            raise AttributeError(name) from None


def serve(
    servicer: object, service: ServiceDescriptor, partner: Partner | None = None
) -> grpc_testing.Server:
    """A grpc_testing server for ``service``, implemented by the async ``servicer``.

    ``partner``, when given, is the authenticated caller of every call.
    """
    adapter = _SyncAdapter(
        {method.name: _sync_method(servicer, method.name, partner) for method in service.methods}
    )
    return grpc_testing.server_from_dictionary({service: adapter}, grpc_testing.strict_real_time())


Termination = tuple[Any, Any, grpc.StatusCode, str]


def call(server: grpc_testing.Server, method: MethodDescriptor, request: Message) -> Termination:
    """Invokes a unary method; returns (response, trailing metadata, code, details)."""
    rpc = server.invoke_unary_unary(method, invocation_metadata=(), request=request, timeout=None)
    response, trailing_metadata, code, details = rpc.termination()
    return response, trailing_metadata, code, details
