"""Webhook secrets at rest: sealed with AES-256-GCM, the partner's id as associated data.

The service must read a secret back to sign with it, so it cannot keep a digest (as it
does for API keys). The sealing key comes from ``YIELDAGENT_WEBHOOK_SECRET_KEY`` (any
string; the key is derived from it with scrypt): set it in production, the same on every
replica. Without it, a random key is generated once into ``<data dir>/webhook-secret.key``
(mode 0600), as the development operator key is: enough for one machine, and a copy of
the database alone still reveals no secret.
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
from pathlib import Path

from Crypto.Cipher import AES

from yieldagent.domain.errors import ConfigurationError

_VERSION = "v1"
_SALT = b"yieldagent webhook secrets"
KEY_FILE = "webhook-secret.key"


class SecretBox:
    """Seals and opens secrets with one 256-bit key."""

    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise ValueError("the sealing key must be 32 bytes")
        self._key = key

    def seal(self, secret: str, context: str) -> str:
        """``secret`` encrypted and authenticated, bound to ``context`` (e.g. the partner)."""
        nonce = secrets.token_bytes(12)
        cipher = AES.new(self._key, AES.MODE_GCM, nonce=nonce)
        cipher.update(context.encode())
        sealed, tag = cipher.encrypt_and_digest(secret.encode())
        return f"{_VERSION}:" + base64.b64encode(nonce + sealed + tag).decode()

    def open(self, sealed: str, context: str) -> str:
        """The secret ``seal`` sealed with this key and ``context``; ValueError otherwise."""
        version, _, payload = sealed.partition(":")
        if version != _VERSION:
            raise ValueError("unknown sealing version")
        raw = base64.b64decode(payload)
        cipher = AES.new(self._key, AES.MODE_GCM, nonce=raw[:12])
        cipher.update(context.encode())
        return cipher.decrypt_and_verify(raw[12:-16], raw[-16:]).decode()


def partner_context(partner_id: int) -> str:
    """The associated data binding a sealed secret to its partner."""
    return f"partner:{partner_id}"


def derive_key(passphrase: str) -> bytes:
    """The 256-bit sealing key of a configured passphrase."""
    return hashlib.scrypt(passphrase.encode(), salt=_SALT, n=2**14, r=8, p=1, dklen=32)


def load_box(configured: str | None, data_dir: Path) -> SecretBox:
    """The box of the configured key, else of the data directory's generated key."""
    if configured:
        return SecretBox(derive_key(configured))
    path = data_dir / KEY_FILE
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        draft = data_dir / f".{KEY_FILE}.{os.getpid()}"
        descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(secrets.token_hex(32))
        try:
            os.link(draft, path)  # whole or not at all; the first process to write wins
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    try:
        return SecretBox(bytes.fromhex(path.read_text().strip()))
    except ValueError:
        raise ConfigurationError(f"{path} does not hold a 64-digit hex key") from None
