"""The operator's backend wallet, which holds the session keys for agent operations.

In production the key comes from ``YIELDAGENT_OPERATOR_PRIVATE_KEY`` and is never
written anywhere. Otherwise a key is generated once and kept under the data
directory as an encrypted Web3 Secret Storage file (scrypt + AES-128-CTR), readable
only by its owner. The address is read without decrypting; the key is decrypted
only when something must be signed. Neither is ever logged or printed.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from eth_account import Account
from eth_utils.address import to_checksum_address

from yieldagent.config import Settings
from yieldagent.domain.errors import ConfigurationError


@dataclass(frozen=True, slots=True)
class OperatorWallet:
    """The backend wallet: its address, and how to get its key when signing."""

    address: str
    _key: str | None
    _keystore: Path | None
    _password: str

    def __repr__(self) -> str:
        return f"OperatorWallet(address={self.address!r})"

    def private_key(self) -> bytes:
        """Decrypts the key; call only to sign, and do not keep the result."""
        if self._key is not None:
            return bytes(Account.from_key(self._key).key)
        assert self._keystore is not None
        keystore = json.loads(self._keystore.read_text())
        return bytes(Account.decrypt(keystore, self._password))


def _create_keystore(path: Path, password: str) -> None:
    account = Account.create()
    keystore = Account.encrypt(account.key, password)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(keystore, handle)
    os.replace(temporary, path)  # atomic: concurrent starts keep one key


def load_operator_wallet(settings: Settings) -> OperatorWallet:
    """The configured operator wallet, generating the development one if needed."""
    if settings.operator_private_key:
        try:
            address = Account.from_key(settings.operator_private_key).address
        except (ValueError, TypeError):
            raise ConfigurationError("YIELDAGENT_OPERATOR_PRIVATE_KEY is not a valid key") from None
        return OperatorWallet(address, settings.operator_private_key, None, "")
    path = settings.operator_keystore
    if not path.exists():
        _create_keystore(path, settings.operator_key_password)
    address = json.loads(path.read_text())["address"]
    return OperatorWallet(
        str(to_checksum_address("0x" + address.removeprefix("0x"))),
        None,
        path,
        settings.operator_key_password,
    )
