"""Webhook signatures: HMAC-SHA256 over ``"{timestamp}.{body}"`` with the partner's secret,
sent as ``X-Yieldagent-Signature: t=<unix seconds>,v1=<hex digest>``.

The timestamp is part of what is signed, so a receiver that refuses old timestamps also
refuses replays of an old delivery.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

SIGNATURE_HEADER = "X-Yieldagent-Signature"
SECRET_PREFIX = "whsec_"  # noqa: S105  (a prefix, not a secret)


def new_secret() -> str:
    """A fresh signing secret: ``whsec_`` and 256 random bits, hex."""
    return SECRET_PREFIX + secrets.token_hex(32)


def digest(secret: str, timestamp: int, body: bytes) -> str:
    """The hex HMAC-SHA256 of ``"{timestamp}.{body}"`` keyed with ``secret`` (its UTF-8)."""
    signed = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The value of the signature header."""
    return f"t={timestamp},v1={digest(secret, timestamp, body)}"
