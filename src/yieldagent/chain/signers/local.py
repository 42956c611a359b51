"""The local key: the signer port answered by a key held in this process's memory.

The key arrives decrypted, once, at start (``chain.operator``), and stays in this object
alone: it is not in ``repr``, not logged, and never handed out, so nothing else in the
service can copy it. A signature is a local secp256k1 operation, made in a worker thread:
eth-keys makes it with libsecp256k1 (``coincurve``, a dependency), in well under a
millisecond; its pure-Python fallback takes milliseconds, which the event loop does not
wait for either.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from eth_account import Account
from eth_account.messages import encode_defunct
from eth_utils.address import to_checksum_address
from hexbytes import HexBytes

from yieldagent.domain.ports.signer import SignedTransaction


class LocalKeySigner:
    """Signs with a private key it keeps to itself."""

    __slots__ = ("_account", "_address")

    def __init__(self, key: bytes | str) -> None:
        """``key``: 32 bytes, or their hex; ValueError if it is not a key."""
        account = Account.from_key(key)
        self._account = account
        self._address = str(to_checksum_address(account.address))

    def __repr__(self) -> str:
        return f"LocalKeySigner(address={self._address!r})"

    def __reduce__(self) -> str:
        raise TypeError("a signer's key is not pickled")

    @property
    def address(self) -> str:
        """The key's checksummed address."""
        return self._address

    async def sign_transaction(self, tx: Mapping[str, int | str]) -> SignedTransaction:
        """Signs the EIP-1559 transaction ``tx``."""
        signed = await asyncio.to_thread(self._account.sign_transaction, dict(tx))
        return SignedTransaction(bytes(signed.raw_transaction), HexBytes(signed.hash).to_0x_hex())

    async def sign_message(self, message: bytes) -> bytes:
        """The EIP-191 (``personal_sign``) signature of ``message``."""
        signed = await asyncio.to_thread(
            self._account.sign_message, encode_defunct(primitive=message)
        )
        return bytes(signed.signature)
