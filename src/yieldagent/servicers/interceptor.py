"""One interceptor for every API method: authentication, errors and REST hints.

For each ``yieldagent.v1`` call it:
1. authenticates the partner when the method names a ``partner_permission``;
   on an ``idempotent`` method called with a key, runs it through
   ``servicers.idempotency`` (executed once, answers replayed);
2. turns a domain error (or any unexpected exception) into the canonical gRPC
   status via ``servicers.errors``;
3. on calls from the REST edge, sends the method's REST hints (success status,
   JSON integers and nulls) as initial metadata.
Servicers therefore only translate messages and call the domain.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import grpc

from yieldagent.domain.errors import NotImplementedYet, YieldAgentError
from yieldagent.servicers import errors
from yieldagent.servicers.auth import Authenticator
from yieldagent.servicers.idempotency import Idempotency, key_of
from yieldagent.servicers.method_policy import Metadata, MethodPolicy

log = logging.getLogger(__name__)

EDGE_HEADER = "x-yieldagent-edge"
"""Request metadata that Envoy adds to every call it transcodes from REST."""

Behavior = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]
StreamBehavior = Callable[[Any, grpc.aio.ServicerContext], AsyncIterator[Any]]


def _from_rest(metadata: Any) -> bool:
    return any(key == EDGE_HEADER for key, _ in metadata or ())


class ApiInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Applies each method's policy around its servicer method."""

    def __init__(
        self,
        policies: Mapping[str, MethodPolicy],
        authenticator: Authenticator,
        idempotency: Idempotency | None = None,
    ) -> None:
        self._policies = policies
        self._authenticator = authenticator
        self._idempotency = idempotency
        self._wrapped: dict[str, tuple[Any, Any]] = {}

    async def intercept_service(
        self, continuation: Callable[[Any], Awaitable[Any]], details: grpc.HandlerCallDetails
    ) -> Any:
        handler = await continuation(details)
        policy = self._policies.get(details.method)
        if handler is None or policy is None:
            return handler
        if handler.unary_unary is None and handler.unary_stream is None:
            return handler
        cached = self._wrapped.get(details.method)
        if cached is None or cached[0] is not handler:
            if handler.unary_unary is not None:
                wrapped = handler._replace(unary_unary=self._wrap(policy, handler.unary_unary))
            else:
                wrapped = handler._replace(
                    unary_stream=self._wrap_stream(policy, handler.unary_stream)
                )
            cached = (handler, wrapped)
            self._wrapped[details.method] = cached
        return cached[1]

    def _wrap(self, policy: MethodPolicy, behavior: Behavior) -> Behavior:
        authenticator = self._authenticator
        idempotency = self._idempotency if policy.idempotent else None

        async def guarded(request: Any, context: grpc.aio.ServicerContext) -> Any:
            metadata = context.invocation_metadata()
            rest = _from_rest(metadata)
            token = None
            replayed: Metadata = ()
            try:
                if policy.permission is not None:
                    partner = authenticator.authenticate(metadata or (), policy.permission)
                    token = authenticator.bind(partner)
                key = key_of(metadata) if idempotency is not None else None
                if idempotency is not None and key is not None:
                    response, replayed = await idempotency.call(
                        policy, partner.id, key, request, behavior, context, rest
                    )
                else:
                    response = await behavior(request, context)
            except grpc.aio.AbortError:
                raise
            except YieldAgentError as error:
                log.info(
                    "request refused",
                    extra={
                        "method": policy.full_name,
                        "error": type(error).__name__,
                        "detail": error.detail,
                    },
                )
                await errors.abort(context, error, policy, rest)
            except NotImplementedError:  # a generated servicer base: not built yet
                missing = NotImplementedYet(f"{policy.full_name} is not implemented yet")
                await errors.abort(context, missing, policy, rest)
            except Exception:
                log.exception("request failed", extra={"method": policy.full_name})
                await errors.abort(context, None, policy, rest)
            finally:
                if token is not None:
                    authenticator.unbind(token)
            hints = (policy.rest_metadata if rest else ()) + replayed
            if hints:
                await context.send_initial_metadata(hints)
            return response

        return guarded

    def _wrap_stream(self, policy: MethodPolicy, behavior: StreamBehavior) -> StreamBehavior:
        """A server-streaming method (gRPC only; the edge transcodes no stream): the same
        authentication and error mapping, around the whole stream."""
        authenticator = self._authenticator

        async def guarded(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            token = None
            try:
                if policy.permission is not None:
                    partner = authenticator.authenticate(
                        context.invocation_metadata() or (), policy.permission
                    )
                    token = authenticator.bind(partner)
                async for response in behavior(request, context):
                    yield response
            except grpc.aio.AbortError:
                raise
            except YieldAgentError as error:
                log.info(
                    "request refused",
                    extra={
                        "method": policy.full_name,
                        "error": type(error).__name__,
                        "detail": error.detail,
                    },
                )
                await errors.abort(context, error, policy, False)
            except Exception:
                log.exception("request failed", extra={"method": policy.full_name})
                await errors.abort(context, None, policy, False)
            finally:
                if token is not None:
                    authenticator.unbind(token)

        return guarded
