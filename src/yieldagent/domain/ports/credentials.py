"""A partner as the service sees it after authentication, what storage keeps of its key,
and where that is looked up on every keyed call. How keys are made, hashed, rotated and
checked is ``domain.partners.partners``'."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Partner:
    """A registered partner, as the service sees it after authentication."""

    id: int
    name: str
    active: bool
    permissions: frozenset[str]


@dataclass(frozen=True, slots=True)
class StoredCredentials:
    """What storage keeps about a partner's key: the partner and the key's digest, and
    the previous key's digest with when it expires (unix seconds) during a grace period."""

    partner: Partner
    key_digest: str
    previous_digest: str | None = None
    previous_expires_at: float | None = None


class PartnerCredentials(Protocol):
    """Where a partner's credentials are looked up on every keyed call."""

    def credentials(self, name: str) -> StoredCredentials | None:
        """The credentials stored for the partner named ``name``, if it exists."""
