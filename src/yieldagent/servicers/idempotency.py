"""Idempotency keys, as Stripe has them, for the methods marked ``idempotent``.

A partner sends a key (``idempotency-key`` metadata; the ``Idempotency-Key`` header on
REST) with a call that moves money or creates something. The first call with a key
executes; every later call with that key and the same request answers what the first
one answered, without executing again:

- its response, or its refusal (a 4xx domain error), replayed from storage;
- while the first call still runs, the retry waits for it (``wait_seconds``), then
  answers 409 with ``Retry-After`` (gRPC ``ABORTED`` with a RetryInfo);
- if the process running the first call died, its lease lapses and the retry takes the
  key over and executes again. The domain dedupes the money effect by the same key
  (``current_idempotency_key``).

The request is identified by a fingerprint: SHA-256 of the method and the request's
deterministic serialization. The same key with another fingerprint (another body, or
another method) is refused with a 422 naming the header. Unexpected failures (5xx) are
not stored: the key is released and a retry executes again. Malformed input (422) and
passing conflicts (a 409 with a retry hint) are not stored either: nothing began, so
the client may correct the request, or retry it, under the same key.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from typing import Any

import grpc
from google.protobuf.message import Message

from yieldagent.domain.errors import Conflict, InvalidInput, YieldAgentError
from yieldagent.domain.ports.storage import COMPLETED, IdempotencyStore, KeyRecord, StoredError
from yieldagent.servicers import errors
from yieldagent.servicers.method_policy import ERROR_HEADER, STATUS_HEADER, Metadata, MethodPolicy

log = logging.getLogger(__name__)

KEY_HEADER = "idempotency-key"
"""The request metadata that carries the key (REST: the ``Idempotency-Key`` header)."""
REPLAYED = (("idempotent-replayed", "true"),)
"""Response metadata of a replayed answer (REST: the ``Idempotent-Replayed`` header)."""
MAX_KEY_LENGTH = 255
DEFAULT_WAIT_SECONDS = 30.0
DEFAULT_LEASE_SECONDS = 20.0

_LOCATION = ("header", "Idempotency-Key")
_DETAILS_HEADER = "grpc-status-details-bin"
_CODES = {code.value[0]: code for code in grpc.StatusCode}

_current_key: ContextVar[str | None] = ContextVar("current_idempotency_key", default=None)

Behavior = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]


def current_idempotency_key() -> str | None:
    """The idempotency key of the call being served, if it came with one.

    Keys are scoped per partner: pair it with ``current_partner()`` to dedupe an effect.
    """
    return _current_key.get()


def key_of(metadata: Sequence[tuple[str, str | bytes]] | None) -> str | None:
    """The idempotency key sent with a call, or None."""
    for header, value in metadata or ():
        if header == KEY_HEADER:
            return value if isinstance(value, str) else value.decode("latin-1")
    return None


def check_key(key: str) -> None:
    """Refuses a key that is not 1 to 255 printable ASCII characters (422)."""
    if not 0 < len(key) <= MAX_KEY_LENGTH or not all(" " <= c <= "~" for c in key):
        raise InvalidInput.field(
            _LOCATION,
            f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} printable ASCII characters",
            "value_error.idempotency_key",
        )


def fingerprint(method: str, request: Message) -> str:
    """SHA-256 (hex) of the method path and the request's deterministic serialization."""
    digest = hashlib.sha256(method.encode())
    digest.update(b"\0")
    digest.update(request.SerializeToString(deterministic=True))
    return digest.hexdigest()


def reused() -> InvalidInput:
    """The refusal of a key already used with another request (422)."""
    return InvalidInput.field(
        _LOCATION, "This key was already used with a different request", "idempotency_key_reused"
    )


def stored_error(error: YieldAgentError, policy: MethodPolicy) -> StoredError:
    """A refusal as ``servicers.errors`` answers it, on gRPC and on REST."""
    status = errors.grpc_status(error)
    details = dict(status.trailing_metadata).get(_DETAILS_HEADER, b"")
    return StoredError(
        code=status.code.value[0],
        message=status.details,
        details=details,
        rest_status=errors.status_of(error)[1],
        rest_body=errors.rest_body(error, policy),
    )


def kept(error: YieldAgentError) -> bool:
    """Whether a refusal is stored for replay: a 4xx, unless nothing began (malformed
    input) or the conflict is passing (it carries a retry hint)."""
    return (
        errors.status_of(error)[1] < 500
        and not isinstance(error, InvalidInput)
        and errors.retry_after(error) is None
    )


class Idempotency:
    """Executes keyed calls once per partner and key, and replays their answers."""

    def __init__(
        self,
        store: IdempotencyStore,
        wait_seconds: float = DEFAULT_WAIT_SECONDS,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        poll_seconds: tuple[float, float] = (0.02, 0.25),
    ) -> None:
        self._store = store
        self._wait = wait_seconds
        self._lease = lease_seconds
        self._poll = poll_seconds

    async def call(
        self,
        policy: MethodPolicy,
        partner_id: int,
        key: str,
        request: Message,
        behavior: Behavior,
        context: grpc.aio.ServicerContext,
        rest: bool,
    ) -> tuple[Any, Metadata]:
        """Answers a keyed call: executes it once, or replays what it answered.

        Returns the response and the metadata to add to it (``REPLAYED`` for a replay).
        Raises the call's own errors, or a stored refusal (through ``context.abort``).
        """
        check_key(key)
        method = policy.full_name
        mark = fingerprint(method, request)
        owner = uuid.uuid4().hex
        store = self._store
        deadline = time.monotonic() + self._wait
        pause = self._poll[0]
        record = store.claim(partner_id, key, method, mark, owner, self._lease)
        while record is not None:
            if record.method != method or record.fingerprint != mark:
                raise reused()
            if record.state == COMPLETED:
                return await self._replay(record, policy, context, rest), REPLAYED
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                hint = max(1, math.ceil(record.lease_until - time.time()))
                raise Conflict(
                    "A request with this Idempotency-Key is still in progress; retry later",
                    retry_after_seconds=hint,
                )
            await asyncio.sleep(min(pause, remaining))
            pause = min(pause * 2, self._poll[1])
            record = store.get(partner_id, key)
            if record is None or record.lapsed(time.time()):
                record = store.claim(partner_id, key, method, mark, owner, self._lease)
        return await self._execute(policy, partner_id, key, owner, request, behavior, context), ()

    async def _execute(
        self,
        policy: MethodPolicy,
        partner_id: int,
        key: str,
        owner: str,
        request: Message,
        behavior: Behavior,
        context: grpc.aio.ServicerContext,
    ) -> Any:
        store = self._store
        token = _current_key.set(key)
        renewal = asyncio.create_task(self._renew(partner_id, key, owner))
        try:
            response = await behavior(request, context)
        except YieldAgentError as error:
            if kept(error):
                self._settle(store.fail, partner_id, key, owner, stored_error(error, policy))
            else:
                self._settle(store.release, partner_id, key, owner)
            raise
        except BaseException:
            self._settle(store.release, partner_id, key, owner)
            raise
        finally:
            renewal.cancel()
            _current_key.reset(token)
        self._settle(
            store.complete, partner_id, key, owner, response.SerializeToString(deterministic=True)
        )
        return response

    @staticmethod
    def _settle(write: Callable[..., bool], *args: Any) -> None:
        """Records the outcome; never lets the bookkeeping change the answer."""
        try:
            if not write(*args):
                log.warning("idempotency key taken over meanwhile", extra={"key": args[1]})
        except Exception:
            log.exception("idempotency key not recorded", extra={"key": args[1]})

    async def _renew(self, partner_id: int, key: str, owner: str) -> None:
        """Keeps the lease while the call runs, so no retry takes the key over."""
        while True:
            await asyncio.sleep(self._lease / 3)
            try:
                if not self._store.renew(partner_id, key, owner, self._lease):
                    return
            except Exception:
                log.exception("idempotency lease not renewed", extra={"key": key})

    @staticmethod
    async def _replay(
        record: KeyRecord, policy: MethodPolicy, context: grpc.aio.ServicerContext, rest: bool
    ) -> Any:
        """The stored response; a stored refusal ends the call as the first one did."""
        error = record.error
        if error is None:
            assert policy.response_type is not None and record.response is not None
            return policy.response_type.FromString(record.response)
        metadata: tuple[tuple[str, str | bytes], ...] = ((_DETAILS_HEADER, error.details),)
        if rest:
            metadata += ((STATUS_HEADER, str(error.rest_status)), (ERROR_HEADER, error.rest_body))
        await context.abort(
            _CODES[error.code], error.message, trailing_metadata=metadata + REPLAYED
        )
