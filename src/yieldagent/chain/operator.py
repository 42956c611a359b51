"""The operator's key, which signs for every account: where it comes from, and its signer.

The key comes from ``YIELDAGENT_OPERATOR_PRIVATE_KEY``, and is then never written
anywhere, or from a Web3 Secret Storage keystore under the data directory (scrypt +
AES-128-CTR, mode 0600) opened with ``YIELDAGENT_OPERATOR_KEY_PASSWORD``. It is decrypted
once, when the signer is loaded at start (scrypt is slow on purpose), and lives on in the
signer alone (``chain.signers.local``).

On the simulated chain a missing keystore is created, with the configured password (the
development one by default), so that ``make run`` needs no configuration. Where money is
real (any RPC URL set) the service refuses the development password and a missing key
(``config.require_operator_key``); ``yieldagent operator create-key`` creates the keystore.
Creation is exclusive: processes that start together all end up with the first one's key,
never one each.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from eth_account import Account

from yieldagent.chain.signers.local import LocalKeySigner
from yieldagent.config import DEV_KEY_PASSWORD, Settings, require_operator_key
from yieldagent.domain.errors import ConfigurationError

WELL_KNOWN_ADDRESSES = frozenset(
    {
        "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
        "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
        "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
        "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
        "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65",
        "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc",
        "0x976EA74026E726554dB657fA54763abd0C3a0aa9",
        "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955",
        "0x23618e81E3f5cdF7f54C3d65f7FBc0aBf5B21E8f",
        "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720",
    }
)
"""The accounts of anvil's and Hardhat's default mnemonic ("test test … junk"): their
private keys are published, and bots sweep whatever reaches them on every chain."""

DEVELOPMENT_SCRYPT_N = 2**12
"""scrypt's cost for a keystore under the development password, which is public: a slow
key derivation would protect nothing there, and would cost each start and each operator
command a second. Any other password gets eth_account's default (2**18)."""


def create_keystore(path: Path, password: str) -> bool:
    """Writes a new key, encrypted with ``password``, to ``path`` unless a key is there;
    whether this call's key is the one kept.

    The keystore is written whole to a file of its own, then linked to ``path``: the link
    fails if ``path`` exists, so of processes racing here one wins, and the others, finding
    a complete keystore, read the winner's key.
    """
    cost = DEVELOPMENT_SCRYPT_N if password == DEV_KEY_PASSWORD else None
    keystore = Account.encrypt(Account.create().key, password, iterations=cost)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(keystore, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.link(temporary, path)
    except FileExistsError:
        return False
    finally:
        temporary.unlink(missing_ok=True)
    return True


def _decrypt(path: Path, password: str) -> bytes:
    try:
        keystore = json.loads(path.read_text())
        return bytes(Account.decrypt(keystore, password))
    except ValueError:
        raise ConfigurationError(
            f"the operator keystore {path} does not open with YIELDAGENT_OPERATOR_KEY_PASSWORD: "
            "set the password it was created with (or it is not a keystore)"
        ) from None


def load_operator_wallet(settings: Settings) -> LocalKeySigner:
    """The operator's signer, its key decrypted now (about half a second of scrypt: call
    it off the event loop). Creates the development keystore on the simulated chain;
    raises ConfigurationError where the key is not fit for real money, or is malformed."""
    signer = _operator_wallet(settings)
    if settings.rpc_urls and not settings.devnet and signer.address in WELL_KNOWN_ADDRESSES:
        raise ConfigurationError(
            f"the operator key is {signer.address}, one of anvil's published development "
            "keys, which anyone can sign with: a real chain needs a key of its own "
            "(`yieldagent operator create-key`)"
        )
    return signer


def _operator_wallet(settings: Settings) -> LocalKeySigner:
    require_operator_key(settings)
    if settings.operator_private_key is not None:
        try:
            return LocalKeySigner(settings.operator_private_key.reveal())
        except (ValueError, TypeError):
            raise ConfigurationError("YIELDAGENT_OPERATOR_PRIVATE_KEY is not a valid key") from None
    path = settings.operator_keystore
    password = settings.operator_key_password.reveal()
    if not path.exists():
        create_keystore(path, password)
    return LocalKeySigner(_decrypt(path, password))
