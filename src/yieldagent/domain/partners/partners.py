"""Partners and their credentials: key generation, hashing and checks.

An API key is 256 random bits, shown once and stored only as its SHA-256 digest.
A key of that entropy needs no slow hash: the digest cannot be reversed or
guessed, and comparing digests takes constant time.

A rotation may keep the previous key valid for a grace period, so that a partner can
switch keys without downtime: authentication then accepts either key until the
previous one expires, comparing the presented key with both digests every time.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from yieldagent.domain.errors import AccessDenied, AuthenticationFailed, InvalidRequest
from yieldagent.domain.ports.credentials import Partner, StoredCredentials

PERMISSIONS = frozenset({"accounts", "wallets", "rewards", "optimizer"})
"""What a partner may be allowed to do; each API method names the one it needs."""

_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{1,62}")
_KEY_PREFIX = "ya_"
# Digest compared against when the partner name is unknown, so that an unknown
# name and a wrong key take the same time.
_UNKNOWN_PARTNER_DIGEST = hashlib.sha256(b"no such partner").hexdigest()

_NO_KEY_DIGEST = hashlib.sha256(b"").hexdigest()

INVALID_KEY = "Invalid or missing API key"


@dataclass(frozen=True, slots=True)
class Rotation:
    """The digests a rotation stores: the new key's, and the old one's with its expiry
    (None for both when the old key stops working at once)."""

    key_digest: str
    previous_digest: str | None
    previous_expires_at: float | None


def rotation(current_digest: str, new_key: str, grace_seconds: float, now: float) -> Rotation:
    """What to store when ``new_key`` replaces the key whose digest is ``current_digest``.

    With ``grace_seconds`` > 0 the current key stays valid until ``now`` + grace; any key
    an earlier rotation kept is dropped (only the latest previous key is kept). 0 ends the
    current key at once.
    """
    if grace_seconds < 0:
        raise InvalidRequest("The grace period cannot be negative")
    if grace_seconds == 0:
        return Rotation(key_digest(new_key), None, None)
    return Rotation(key_digest(new_key), current_digest, now + grace_seconds)


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
    stored: StoredCredentials | None,
    presented_key: str | None,
    permission: str,
    now: Callable[[], float],
) -> Partner:
    """Checks presented credentials against what storage holds for that partner name.

    The key may be the current one or, until it expires (``now()``, unix seconds, is read
    only when there is a previous key), the previous one. Both digests are compared
    every time, whichever matches.

    Raises AuthenticationFailed (unknown partner, missing, wrong or expired key) or
    AccessDenied (disabled partner, or one without ``permission``).
    """
    digest = key_digest(presented_key) if presented_key else None
    return check_credentials(stored, digest, permission, now)


def check_credentials(
    stored: StoredCredentials | None,
    presented_digest: str | None,
    permission: str,
    now: Callable[[], float],
) -> Partner:
    """``authenticate`` on the digest of the presented key (None: no key), so that a
    check repeated later (an open stream's) needs no copy of the key itself."""
    expected = stored.key_digest if stored is not None else _UNKNOWN_PARTNER_DIGEST
    previous = stored.previous_digest if stored is not None else None
    presented = presented_digest or _NO_KEY_DIGEST
    current_ok = hmac.compare_digest(expected, presented)
    previous_ok = hmac.compare_digest(previous or _UNKNOWN_PARTNER_DIGEST, presented)
    if previous_ok and previous is not None:
        expires = stored.previous_expires_at if stored is not None else None
        previous_ok = expires is not None and now() < expires
    else:
        previous_ok = False
    if not (current_ok or previous_ok) or stored is None or presented_digest is None:
        raise AuthenticationFailed(INVALID_KEY)
    partner = stored.partner
    if not partner.active:
        raise AccessDenied("Access denied: the API key is inactive")
    if permission not in partner.permissions:
        raise AccessDenied(f"Access denied: the partner may not use {permission}")
    return partner
