"""One interceptor for every API method: authentication, limits, errors, REST hints,
request ids and metrics.

For each ``yieldagent.v1`` call it:
1. binds the call's request id (``x-request-id`` metadata, which Envoy always sends;
   one it makes otherwise, returned in trailing metadata) to every log line of the call;
2. authenticates the partner when the method names a ``partner_permission``, then
   takes a token from that partner's rate limit bucket (``domain.partners.rate_limits``);
   a stream also takes a lease (``servicers.streams``: a cap per partner, credentials
   checked again while it is open);
   on an ``idempotent`` method called with a key, runs it through
   ``servicers.idempotency`` (executed once, answers replayed); a money call that
   executes counts against its wallet's limit first (``domain.partners.money_calls``;
   a replayed answer is not counted);
3. turns a domain error (or any unexpected exception) into the canonical gRPC
   status via ``servicers.errors``;
4. on calls from the REST edge, words a refusal for REST (status and body, in trailing
   metadata); the hints of a success (status, JSON integers and nulls) are constant per
   method, and Envoy has them from the request schema it is rendered with;
5. sends a unary reply that the servicer serialized itself (``bytes``) as it is; of a
   reply the servicer offers in both kinds (``servicers.replies.Reply``), sends the
   contract's JSON to a REST caller and the message to a gRPC one; and renders a REST
   reply of a method served as JSON (``servicers.rest_json``) that the servicer left a
   message;
6. counts the call by status code and times it (``metrics.MethodMetrics``, bound once
   per method).
Servicers therefore only translate messages and call the domain.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import grpc

from yieldagent.domain.addresses import is_address
from yieldagent.domain.errors import (
    NodeUnavailable,
    NotImplementedYet,
    RateLimited,
    YieldAgentError,
)
from yieldagent.domain.partners.money_calls import MoneyCallLimit
from yieldagent.domain.partners.rate_limits import RateLimiter
from yieldagent.domain.ports.credentials import Partner
from yieldagent.observability.logs import bind_request_id, unbind_request_id
from yieldagent.observability.metrics import RATE_LIMITED, MethodMetrics
from yieldagent.servicers import errors
from yieldagent.servicers.auth import Authenticator, current_partner, presented_digest
from yieldagent.servicers.idempotency import Idempotency, key_of
from yieldagent.servicers.method_policy import Metadata, MethodPolicy
from yieldagent.servicers.replies import Reply
from yieldagent.servicers.rest_json import Renderer
from yieldagent.servicers.streams import OpenStreams, until_ended

log = logging.getLogger(__name__)

EDGE_HEADER = "x-yieldagent-edge"
"""Request metadata that Envoy adds to every call it transcodes from REST."""

REQUEST_ID_HEADER = "x-request-id"
"""The call's id: Envoy's (it makes one for every REST request), or the caller's."""
MAX_REQUEST_ID = 200
"""A longer (or empty) ``x-request-id`` is replaced by one the server makes."""


Behavior = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]
StreamBehavior = Callable[[Any, grpc.aio.ServicerContext], AsyncIterator[Any]]


_ID_PREFIX = str(uuid.uuid4())[:24]
_ids = itertools.count(1)


def _new_request_id() -> str:
    """A fresh request id shaped like Envoy's UUIDs: this process's random prefix and a
    counter (unique per process, and a tenth of uuid4's cost: no system call)."""
    return f"{_ID_PREFIX}{next(_ids):012x}"


class ApiInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Applies each method's policy around its servicer method."""

    def __init__(
        self,
        policies: Mapping[str, MethodPolicy],
        authenticator: Authenticator,
        idempotency: Idempotency | None = None,
        limiter: RateLimiter | None = None,
        streams: OpenStreams | None = None,
        money_calls: MoneyCallLimit | None = None,
    ) -> None:
        self._policies = policies
        self._authenticator = authenticator
        self._idempotency = idempotency
        self._limiter = limiter
        self._streams = streams
        self._money_calls = money_calls
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
                wrapped = handler._replace(
                    unary_unary=self._wrap(policy, handler.unary_unary),
                    response_serializer=_passing_bytes(handler.response_serializer),
                )
            else:
                wrapped = handler._replace(
                    unary_stream=self._wrap_stream(policy, handler.unary_stream)
                )
            cached = (handler, wrapped)
            self._wrapped[details.method] = cached
        return cached[1]

    async def _admit(
        self, policy: MethodPolicy, metadata: Metadata, limiter: RateLimiter | None
    ) -> tuple[Partner | None, object | None]:
        """The calling partner, authenticated and within its rate limit, bound as the current
        caller (with the token that unbinds it); none for a public method. Raises otherwise."""
        if policy.permission is None:
            return None, None
        partner = await self._authenticator.authenticate(metadata, policy.permission)
        if limiter is not None:
            limiter.check(partner.id)
        return partner, self._authenticator.bind(partner)

    def _wrap(self, policy: MethodPolicy, behavior: Behavior) -> Behavior:
        authenticator = self._authenticator
        idempotency = self._idempotency if policy.idempotent else None
        limiter = self._limiter if policy.permission is not None else None
        measured = MethodMetrics(policy.full_name)
        clock = time.perf_counter
        ok = grpc.StatusCode.OK
        render = Renderer(policy) if policy.served_as_json else None
        if policy.money_call and self._money_calls is not None:
            behavior = _counted(self._money_calls, behavior)

        async def guarded(request: Any, context: grpc.aio.ServicerContext) -> Any:
            started = clock()
            metadata = context.invocation_metadata() or ()
            rest = False
            request_id = None
            for key, value in metadata:
                if key == EDGE_HEADER:
                    rest = True
                elif key == REQUEST_ID_HEADER:
                    request_id = value
            request_id, echo = _resolve_request_id(request_id, rest)
            request_token = bind_request_id(request_id)
            code = ok
            token = None
            replayed: Metadata = ()
            try:
                try:
                    partner, token = await self._admit(policy, metadata, limiter)
                    key = key_of(metadata) if idempotency is not None else None
                    if idempotency is not None and key is not None and partner is not None:
                        response, replayed = await idempotency.call(
                            policy, partner.id, key, request, behavior, context, rest
                        )
                    else:
                        response = await behavior(request, context)
                    if type(response) is Reply:
                        response = response.rest_json() if rest else response.message()
                    elif rest and render is not None and type(response) is not bytes:
                        response = render(response)
                except grpc.aio.AbortError:
                    code = context.code() or grpc.StatusCode.UNKNOWN
                    raise
                except NotImplementedError:  # a generated servicer base: not built yet
                    missing = NotImplementedYet(f"{policy.full_name} is not implemented yet")
                    code = _code_of(missing)
                    await _refuse(context, missing, policy, rest, echo)
                except Exception as error:
                    code = _code_of(error)
                    await _refuse(context, error, policy, rest, echo)
                finally:
                    if token is not None:
                        authenticator.unbind(token)
                if replayed:
                    await context.send_initial_metadata(replayed)
                if echo:
                    context.set_trailing_metadata(echo)
                return response
            finally:
                measured.observe(code, clock() - started)
                unbind_request_id(request_token)

        return guarded

    def _wrap_stream(self, policy: MethodPolicy, behavior: StreamBehavior) -> StreamBehavior:
        """A server-streaming method (gRPC only: the edge transcodes no stream). The same
        request id, authentication, rate limit (one token per stream) and error mapping
        as a unary call, around the whole stream; the call is counted by its final code
        and timed from its start to its end. With ``streams``, a partner's open streams
        are capped, and a stream whose credentials stop holding ends with that refusal
        (``servicers.streams``)."""
        authenticator = self._authenticator
        limiter = self._limiter if policy.permission is not None else None
        streams = self._streams
        measured = MethodMetrics(policy.full_name)
        clock = time.perf_counter

        async def guarded(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            started = clock()
            metadata = context.invocation_metadata() or ()
            request_id = next((v for k, v in metadata if k == REQUEST_ID_HEADER), None)
            request_id, echo = _resolve_request_id(request_id, False)
            request_token = bind_request_id(request_id)
            code = grpc.StatusCode.OK
            token = None
            lease = None
            try:
                partner, token = await self._admit(policy, metadata, limiter)
                if streams is not None and partner is not None and policy.permission:
                    lease = streams.open(partner, presented_digest(metadata), policy.permission)
                if echo:
                    context.set_trailing_metadata(echo)
                if lease is None:
                    async for response in behavior(request, context):
                        yield response
                else:
                    async for response in until_ended(behavior(request, context), lease.ended):
                        yield response
                    if lease.refusal is not None:
                        raise lease.refusal
            except grpc.aio.AbortError:
                code = context.code() or grpc.StatusCode.UNKNOWN
                raise
            except (asyncio.CancelledError, GeneratorExit):  # the client went away
                code = grpc.StatusCode.CANCELLED
                raise
            except Exception as error:
                code = _code_of(error)
                await _refuse(context, error, policy, False, echo)
            finally:
                if lease is not None and streams is not None:
                    streams.close(lease)
                if token is not None:
                    authenticator.unbind(token)
                measured.observe(code, clock() - started)
                unbind_request_id(request_token)

        return guarded


def _counted(limit: MoneyCallLimit, behavior: Behavior) -> Behavior:
    """``behavior`` counted against the money call limit of the wallet its request names,
    before it runs (the count is a query: off the event loop). A request whose wallet is
    not an address is left to the servicer, which refuses it."""

    async def counted(request: Any, context: grpc.aio.ServicerContext) -> Any:
        if is_address(request.wallet):
            partner = current_partner()
            await asyncio.to_thread(limit.check, partner.id, request.chain_id, request.wallet)
        return await behavior(request, context)

    return counted


def _passing_bytes(serialize: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    """The method's reply serializer, which also passes a reply the servicer serialized
    itself (``bytes``: one kept per record version, ``servicers.replies``) as it is."""

    def serialized(reply: Any) -> bytes:
        return reply if type(reply) is bytes else serialize(reply)

    return serialized


def _resolve_request_id(sent: str | bytes | None, rest: bool) -> tuple[str, Metadata]:
    """The call's request id: the one sent, unless it is missing, not text or too long;
    then one made here, returned to a direct gRPC caller in trailing metadata (Envoy
    answers REST clients with the id it forwarded)."""
    if isinstance(sent, str) and sent and len(sent) <= MAX_REQUEST_ID:
        return sent, ()
    made = _new_request_id()
    return made, () if rest else ((REQUEST_ID_HEADER, made),)


def _code_of(error: Exception) -> grpc.StatusCode:
    """The canonical code a call ends with on ``error``: a domain error's own, INTERNAL for
    anything unexpected."""
    if isinstance(error, YieldAgentError):
        return errors.status_of(error)[0]
    return grpc.StatusCode.INTERNAL


async def _refuse(
    context: grpc.aio.ServicerContext,
    error: Exception,
    policy: MethodPolicy,
    rest: bool,
    echo: Metadata,
) -> None:
    """Logs ``error`` (an unexpected one with its trace) and ends the call with its
    canonical status (``_code_of``). Never returns."""
    if not isinstance(error, YieldAgentError):
        log.exception("request failed", extra={"method": policy.full_name})
        await errors.abort(context, None, policy, rest, echo)
        return
    if isinstance(error, RateLimited):
        RATE_LIMITED.inc()
    extra = {"method": policy.full_name, "error": type(error).__name__, "detail": error.detail}
    if isinstance(error, NodeUnavailable):
        extra["cause"] = error.cause  # the adapter's words: the failed call, never the URL
    log.info("request refused", extra=extra)
    await errors.abort(context, error, policy, rest, echo)
