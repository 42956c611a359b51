"""Partner authentication from request metadata, and who the current caller is."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextvars import ContextVar

from yieldagent.domain.partners.partners import Partner, authenticate
from yieldagent.domain.ports.storage import PartnerCredentials

PARTNER_NAME_HEADER = "x-partner-name"
API_KEY_HEADER = "x-partner-api-key"

_current_partner: ContextVar[Partner] = ContextVar("current_partner")


def current_partner() -> Partner:
    """The partner that made the call being served; only for keyed methods."""
    return _current_partner.get()


class Authenticator:
    """Checks the partner credentials of a call; ``now`` (unix seconds) tells whether a
    previous key's grace period is over."""

    def __init__(self, partners: PartnerCredentials, now: Callable[[], float] = time.time) -> None:
        self._partners = partners
        self._now = now

    def authenticate(self, metadata: Sequence[tuple[str, str | bytes]], permission: str) -> Partner:
        """The calling partner, if its credentials allow ``permission``; raises otherwise."""
        name = key = None
        for header, value in metadata:
            if header == PARTNER_NAME_HEADER and isinstance(value, str):
                name = value
            elif header == API_KEY_HEADER and isinstance(value, str):
                key = value
        stored = self._partners.credentials(name) if name else None
        return authenticate(stored, key, permission, self._now)

    @staticmethod
    def bind(partner: Partner) -> object:
        """Makes ``partner`` the current caller; returns a token for ``unbind``."""
        return _current_partner.set(partner)

    @staticmethod
    def unbind(token: object) -> None:
        """Forgets the current caller set by ``bind``."""
        _current_partner.reset(token)  # type: ignore[arg-type]
