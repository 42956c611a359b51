"""The domain's errors: one tree, each class one kind of refusal.

    YieldAgentError
    ├── InvalidInput          a field is malformed (REST 422, with the field's location)
    ├── InvalidRequest        well-formed input the service cannot act on (REST 400)
    ├── AuthenticationFailed  missing or wrong partner credentials (REST 401)
    ├── AccessDenied          credentials are fine but not for this (REST 403)
    ├── NotFound              the thing asked for does not exist (REST 404)
    ├── Conflict              the resource's state forbids the call now (REST 409),
    │   │                     possibly with a retry hint (Retry-After)
    │   └── ChainRejected     the chain refused the transaction: it reverted (reason attached)
    ├── RateLimited           the partner called faster than its rate limit (REST 429,
    │                         Retry-After)
    ├── ChainUnavailable      the chain refused or did not answer a call (REST 503)
    │   └── NodeUnavailable   the node failed: the same sentence always, its cause logged
    ├── NotImplementedYet     a documented call the service does not offer yet (REST 501)
    └── ConfigurationError    the service was started with unusable settings

The gRPC status code and REST status of each class are set in exactly one place,
``yieldagent.servicers.errors``. Domain code raises; it never picks a status.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Location = tuple[str | int, ...]


class YieldAgentError(Exception):
    """Base of every error the service reports to a caller."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


@dataclass(frozen=True, slots=True)
class FieldViolation:
    """One malformed field: where it is, what is wrong, and a machine-readable kind.

    ``loc`` starts with where the field came from (``body``, ``query`` or ``path``)
    followed by its name and, for nested values, the keys and indexes down to it.
    """

    loc: Location
    msg: str
    type: str


class InvalidInput(YieldAgentError):
    """One or more fields are malformed; nothing was changed."""

    def __init__(self, violations: Sequence[FieldViolation]) -> None:
        if not violations:
            raise ValueError("InvalidInput needs at least one violation")
        super().__init__("; ".join(f"{'.'.join(map(str, v.loc))}: {v.msg}" for v in violations))
        self.violations = tuple(violations)

    @classmethod
    def field(cls, loc: Location, msg: str, type: str = "value_error") -> InvalidInput:
        """An error about a single field."""
        return cls([FieldViolation(loc, msg, type)])


class InvalidRequest(YieldAgentError):
    """The input is well formed, but the service cannot act on it."""


class AuthenticationFailed(YieldAgentError):
    """The partner credentials are missing or wrong."""


class AccessDenied(YieldAgentError):
    """The partner is known, but may not do this."""


class NotFound(YieldAgentError):
    """The resource asked for does not exist."""


class Conflict(YieldAgentError):
    """The resource's current state forbids the call.

    ``retry_after_seconds``, when given, says the conflict is passing (another call
    holds the resource) and when a retry may succeed. Callers then get it as a
    ``Retry-After`` header (REST) or a ``google.rpc.RetryInfo`` detail (gRPC).
    """

    def __init__(self, detail: str, retry_after_seconds: int | None = None) -> None:
        if retry_after_seconds is not None and retry_after_seconds < 0:
            raise ValueError("retry_after_seconds cannot be negative")
        super().__init__(detail)
        self.retry_after_seconds = retry_after_seconds


class ChainRejected(Conflict):
    """The chain refused the transaction: it reverted; the reason is attached.

    ``reason`` is the decoded revert reason: the message of ``Error(string)``, a
    ``Panic(uint256)`` with its code, or a custom error's selector (hex). Sending again
    would revert again until the chain's state changes, so this is not a passing conflict.
    """

    def __init__(self, detail: str, reason: str = "") -> None:
        super().__init__(detail)
        self.reason = reason or detail


class RateLimited(YieldAgentError):
    """The partner exceeded its rate limit; a retry after ``retry_after_seconds`` (whole
    seconds, at least 1) is allowed again. Callers get a ``Retry-After`` header (REST) or
    a ``google.rpc.RetryInfo`` detail (gRPC)."""

    def __init__(self, detail: str, retry_after_seconds: int = 1) -> None:
        super().__init__(detail)
        self.retry_after_seconds = max(retry_after_seconds, 1)


class ChainUnavailable(YieldAgentError):
    """The chain refused or did not answer a call the operation needed; what was done is
    recorded, and nothing was lost."""


NODE_DID_NOT_ANSWER = "the chain's node did not answer"
"""What a caller is told of any failure of the chain's node."""


class NodeUnavailable(ChainUnavailable):
    """The chain's node failed a call, or answered it with an error.

    ``detail`` is always ``NODE_DID_NOT_ANSWER``: the node's words and its HTTP client's
    carry the node's URL, which often holds the provider's API key, so none of them
    reaches a caller, an event or a wallet's status. ``cause`` says, for the logs only,
    which call failed, the error's class and HTTP status, never the URL.
    """

    def __init__(self, cause: str = "") -> None:
        super().__init__(NODE_DID_NOT_ANSWER)
        self.cause = cause


class NotImplementedYet(YieldAgentError):
    """The call is part of the contract but not offered by this version."""


class ConfigurationError(YieldAgentError):
    """A setting is unusable; raised at start-up."""


def error_named(name: str, detail: str) -> YieldAgentError:
    """The error of class ``name`` (a stored failure, replayed); a Conflict if unknown."""
    kinds = {kind.__name__: kind for kind in _subclasses(YieldAgentError)}
    kind = kinds.get(name, Conflict)
    if kind is InvalidInput:
        return Conflict(detail)
    return kind(detail)


def _subclasses(base: type[YieldAgentError]) -> list[type[YieldAgentError]]:
    found = []
    for kind in base.__subclasses__():
        found += [kind, *_subclasses(kind)]
    return found
