"""The signer port: the operator's address, and its signatures.

Whatever holds the operator's key answers it, and nothing else in the service sees the
key. The local key, decrypted once at start (``chain.signers.local``), is the first
adapter; a KMS or a remote signer replaces it by answering the same calls
(``docs/keys.md``). The calls are async because a remote signer is a network round trip.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class SignedTransaction:
    """A signed transaction, ready to broadcast."""

    raw: bytes
    """The transaction's signed encoding (``eth_sendRawTransaction``'s argument)."""
    tx_hash: str
    """Its hash, ``0x``-prefixed hex: what the chain will know it by."""


class Signer(Protocol):
    """Signs for the operator, whose key it never hands out."""

    @property
    def address(self) -> str:
        """The operator's checksummed address: the sender of everything it signs."""

    async def sign_transaction(self, tx: Mapping[str, int | str]) -> SignedTransaction:
        """Signs an EIP-1559 transaction given by its JSON-RPC fields (``type``,
        ``chainId``, ``nonce``, ``to``, ``value``, ``data``, ``gas``, ``maxFeePerGas``,
        ``maxPriorityFeePerGas``)."""

    async def sign_message(self, message: bytes) -> bytes:
        """Signs ``message`` as EIP-191 ``personal_sign`` does: the 65-byte signature
        (r, s, v)."""
