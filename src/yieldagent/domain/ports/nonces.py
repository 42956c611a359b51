"""The nonce port: where the operator's transaction nonces are leased, so that replicas
sending from one key never use one twice.

The web3 adapter (``chain.web3.transactions.TransactionSender``) leases through it;
``storage.nonces.NonceStore`` implements it in the database, and the composition root
hands one to each web3 chain.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class NonceSource(Protocol):
    """Where nonces come from."""

    def reserve(
        self,
        chain_id: int,
        address: str,
        chain_pending_nonce: int,
        hold_seconds: float | None = None,
    ) -> int:
        """A nonce for ``address``'s next transaction, held for ``hold_seconds``."""

    def reserve_many(
        self,
        chain_id: int,
        address: str,
        chain_pending_nonce: int,
        count: int,
        hold_seconds: float | None = None,
    ) -> list[int]:
        """``count`` nonces for transactions of ``address`` sent together, in increasing
        order, reserved at once: no other reservation shares any of them."""

    def consume(self, chain_id: int, address: str, nonce: int) -> None:
        """The chain has ``nonce``."""

    def consume_many(self, chain_id: int, address: str, nonces: Sequence[int]) -> None:
        """The chain has each of ``nonces`` (a batch's transactions, mined)."""

    def release(self, chain_id: int, address: str, nonce: int) -> None:
        """``nonce`` was never broadcast: hand it out again."""
