"""Serialized replies kept per record version: what a read answers when the record it
would build from is at the version a reply was built at.

A caller checks the version first (one indexed read), so a kept reply is never older than
the stored record: correct on any replica, with no window. The store is an LRU bounded by
entries and by bytes, keyed by the record's id, so neither a large fleet nor long histories
grow it without end.

A read served in two kinds (the method's message to gRPC callers, the contract's JSON to
REST ones: ``servicers.rest_json``) answers a ``Reply``, which builds either on demand;
the interceptor asks for the kind its caller takes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

MAX_ENTRIES = 10_000
"""Replies kept at most: a fleet poll of this many wallets is answered without building."""
MAX_BYTES = 64 * 2**20
"""Bytes of replies kept at most (a wallet with 500 withdrawals serializes to about 70 KB)."""


class VersionedReplies:
    """Serialized replies by record id, each valid for one version of its record."""

    __slots__ = ("_bytes", "_entries", "_max_bytes", "_max_entries")

    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self._entries: OrderedDict[int, tuple[int, bytes]] = OrderedDict()
        self._bytes = 0
        self._max_entries = max_entries
        self._max_bytes = max_bytes

    def get(self, key: int, version: int) -> bytes | None:
        """The reply built at ``version`` of record ``key``, if kept."""
        found = self._entries.get(key)
        if found is None or found[0] != version:
            return None
        self._entries.move_to_end(key)
        return found[1]

    def put(self, key: int, version: int, reply: bytes) -> None:
        """Keeps ``reply`` as record ``key``'s at ``version`` (replacing any other version),
        then drops the least recently used replies beyond the bounds. A reply larger than
        the byte bound alone is not kept."""
        previous = self._entries.pop(key, None)
        if previous is not None:
            self._bytes -= len(previous[1])
        if len(reply) > self._max_bytes:
            return
        self._entries[key] = (version, reply)
        self._bytes += len(reply)
        while len(self._entries) > self._max_entries or self._bytes > self._max_bytes:
            _, (_, dropped) = self._entries.popitem(last=False)
            self._bytes -= len(dropped)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size_bytes(self) -> int:
        """Bytes of replies kept now."""
        return self._bytes


@dataclass(frozen=True, slots=True)
class Reply:
    """A read's reply in both of its kinds, each serialized when asked for: the method's
    message (gRPC callers) and the contract's JSON in a ``google.api.HttpBody`` (REST
    callers of a method served as JSON)."""

    message: Callable[[], bytes]
    rest_json: Callable[[], bytes]
