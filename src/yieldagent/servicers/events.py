"""Wallet events as ``yieldagent.v1.WalletEvent`` messages (WatchWallet).

An event's ``data`` carries the same names as its proto message, so the message is read
from it directly; a name that does not match fails loudly (and in the tests). The member
of the ``data`` oneof is the event's kind with ``_`` for ``.``.
"""

from __future__ import annotations

from google.protobuf import json_format

from yieldagent.domain.books.events import WalletEvent
from yieldagent.domain.dates import iso
from yieldagent.v1 import wallets_pb2


def wallet_event(event: WalletEvent) -> wallets_pb2.WalletEvent:
    """The proto of a stored event."""
    message = wallets_pb2.WalletEvent(
        id=event.id,
        type=event.kind,
        created_at=iso(event.created_at),
        chain_id=event.chain_id,
        wallet=event.wallet,
    )
    json_format.ParseDict(dict(event.data), getattr(message, event.kind.replace(".", "_")))
    return message
