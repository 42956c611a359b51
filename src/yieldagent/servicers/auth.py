"""Partner authentication from request metadata, and who the current caller is.

Refused credentials are remembered (``RefusedCredentials``), so that a client repeating
them costs no database query. A refusal can never turn into a success: a key is 256
random bits made when a partner is created or rotated, so no key presented before can
become a partner's key later, and an expired previous key stays expired. Entries
therefore only age out to bound memory. A disabled partner (403) is not remembered:
enabling it works at once.

A lookup is a database query, made in a worker thread: on the event loop it would hold
every other call for as long as the database takes to answer.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextvars import ContextVar

from yieldagent.domain.errors import AuthenticationFailed
from yieldagent.domain.partners.partners import INVALID_KEY, authenticate, key_digest
from yieldagent.domain.ports.credentials import Partner, PartnerCredentials

PARTNER_NAME_HEADER = "x-partner-name"
API_KEY_HEADER = "x-partner-api-key"

_current_partner: ContextVar[Partner] = ContextVar("current_partner")


def current_partner() -> Partner:
    """The partner that made the call being served; only for keyed methods."""
    return _current_partner.get()


def presented(metadata: Sequence[tuple[str, str | bytes]]) -> tuple[str | None, str | None]:
    """The partner name and API key a call presents (None for one it lacks)."""
    name = key = None
    for header, value in metadata:
        if header == PARTNER_NAME_HEADER and isinstance(value, str):
            name = value
        elif header == API_KEY_HEADER and isinstance(value, str):
            key = value
    return name, key


def presented_digest(metadata: Sequence[tuple[str, str | bytes]]) -> str | None:
    """The digest of the API key a call presents (None without one)."""
    _, key = presented(metadata)
    return key_digest(key) if key else None


class RefusedCredentials:
    """The latest ``size`` refused (partner name, key digest) pairs, each for ``ttl``
    seconds (``clock``: monotonic seconds); the least recently refused goes first."""

    def __init__(
        self,
        size: int = 10_000,
        ttl: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._size = size
        self._ttl = ttl
        self._clock = clock
        self._until: OrderedDict[tuple[str, str], float] = OrderedDict()

    def __len__(self) -> int:
        return len(self._until)

    def holds(self, name: str, key: str) -> bool:
        """Whether these credentials were refused within ``ttl`` seconds."""
        entry = (name, key_digest(key))
        until = self._until.get(entry)
        if until is None:
            return False
        if until <= self._clock():
            del self._until[entry]
            return False
        return True

    def add(self, name: str, key: str) -> None:
        """Remembers that these credentials were refused."""
        entry = (name, key_digest(key))
        self._until[entry] = self._clock() + self._ttl
        self._until.move_to_end(entry)
        while len(self._until) > self._size:
            self._until.popitem(last=False)


REFUSED_CREDENTIALS_SIZE = 10_000
"""Refused credentials remembered at once: 10,000 entries of about 200 bytes (2 MB)."""
REFUSED_CREDENTIALS_SECONDS = 300.0
"""How long refused credentials are remembered: a client retrying the same wrong key
for five minutes costs one query."""


class Authenticator:
    """Checks the partner credentials of a call; ``now`` (unix seconds) tells whether a
    previous key's grace period is over. Credentials refused with AuthenticationFailed
    are remembered in ``refused`` and refused again without a lookup."""

    def __init__(
        self,
        partners: PartnerCredentials,
        now: Callable[[], float] = time.time,
        refused: RefusedCredentials | None = None,
    ) -> None:
        self._partners = partners
        self._now = now
        self._refused = (
            refused
            if refused is not None
            else RefusedCredentials(REFUSED_CREDENTIALS_SIZE, REFUSED_CREDENTIALS_SECONDS)
        )

    async def authenticate(
        self, metadata: Sequence[tuple[str, str | bytes]], permission: str
    ) -> Partner:
        """The calling partner, if its credentials allow ``permission``; raises otherwise."""
        name, key = presented(metadata)
        if not name or not key:
            return authenticate(None, key, permission, self._now)
        if self._refused.holds(name, key):
            raise AuthenticationFailed(INVALID_KEY)
        stored = await asyncio.to_thread(self._partners.credentials, name)
        try:
            return authenticate(stored, key, permission, self._now)
        except AuthenticationFailed:
            self._refused.add(name, key)
            raise

    @staticmethod
    def bind(partner: Partner) -> object:
        """Makes ``partner`` the current caller; returns a token for ``unbind``."""
        return _current_partner.set(partner)

    @staticmethod
    def unbind(token: object) -> None:
        """Forgets the current caller set by ``bind``."""
        _current_partner.reset(token)  # type: ignore[arg-type]
