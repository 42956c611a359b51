"""Partners and their credentials: key generation, hashing and checks.

An API key is 256 random bits, shown once and stored only as its SHA-256 digest.
A key of that entropy needs no slow hash: the digest cannot be reversed or
guessed, and comparing digests takes constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from yieldagent.domain.errors import AccessDenied, AuthenticationFailed, InvalidRequest

PERMISSIONS = frozenset({"accounts", "wallets", "rewards", "optimizer"})
"""What a partner may be allowed to do; each API method names the one it needs."""

_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{1,62}")
_KEY_PREFIX = "ya_"
# Digest compared against when the partner name is unknown, so that an unknown
# name and a wrong key take the same time.
_UNKNOWN_PARTNER_DIGEST = hashlib.sha256(b"no such partner").hexdigest()

INVALID_KEY = "Invalid or missing API key"


@dataclass(frozen=True, slots=True)
class Partner:
    """A registered partner, as the service sees it after authentication."""

    id: int
    name: str
    active: bool
    permissions: frozenset[str]


@dataclass(frozen=True, slots=True)
class StoredCredentials:
    """What storage keeps about a partner's key: the partner and the key's digest."""

    partner: Partner
    key_digest: str


def check_partner_name(name: str) -> str:
    """Returns ``name`` if it is a valid partner name (lower case, 2-63 characters)."""
    if _NAME.fullmatch(name) is None:
        raise InvalidRequest(
            "A partner name is 2 to 63 characters: lower-case letters, digits, '_', '.', '-'"
        )
    return name


def check_permissions(permissions: frozenset[str]) -> frozenset[str]:
    """Returns ``permissions`` if every one is known."""
    unknown = sorted(permissions - PERMISSIONS)
    if unknown:
        raise InvalidRequest(f"Unknown permissions: {', '.join(unknown)}")
    return permissions


def new_api_key() -> str:
    """A fresh API key: a recognizable prefix and 256 random bits."""
    return _KEY_PREFIX + secrets.token_urlsafe(32)


def key_digest(api_key: str) -> str:
    """The digest under which an API key is stored."""
    return hashlib.sha256(api_key.encode()).hexdigest()


def authenticate(
    stored: StoredCredentials | None, presented_key: str | None, permission: str
) -> Partner:
    """Checks presented credentials against what storage holds for that partner name.

    Raises AuthenticationFailed (unknown partner, missing or wrong key) or
    AccessDenied (disabled partner, or one without ``permission``).
    """
    expected = stored.key_digest if stored is not None else _UNKNOWN_PARTNER_DIGEST
    presented = key_digest(presented_key or "")
    if not hmac.compare_digest(expected, presented) or stored is None or not presented_key:
        raise AuthenticationFailed(INVALID_KEY)
    partner = stored.partner
    if not partner.active:
        raise AccessDenied("Access denied: the API key is inactive")
    if permission not in partner.permissions:
        raise AccessDenied(f"Access denied: the partner may not use {permission}")
    return partner
