"""The operator's nonces, leased from the database so that replicas never collide.

Decision: every replica sends from ONE operator key (one address: one session key for
partners to authorize, one balance of gas to keep funded), and each transaction's nonce
is leased from the database instead of being read from the chain by each process. Two
processes that both read the chain's pending nonce would sign two transactions with the
same nonce, and one would silently replace or refuse the other; keys per replica would
multiply the session keys and the balances to watch.

Two tables hold the leases (migration 0007):

- ``chain_nonces``: per (chain, address), ``next_nonce``, the lowest nonce never handed
  out, and who made the latest reservation (``holder``) until when (``held_until``).
- ``chain_nonce_leases``: each nonce handed out that the chain does not show used yet,
  with its holder and the end of its lease; no holder means given back unsent.

``reserve(chain_id, address, chain_pending_nonce)`` runs one transaction, and so does
``reserve_many(..., count)``, which hands out ``count`` nonces at once for transactions
sent together (``TransactionSender.send_many``). Its first
statement updates the address's counter row, which locks it (a row lock on PostgreSQL;
SQLite's single writer lock), so reservations of one address are serialized across
processes. Inside it:

1. Leases below the chain's pending nonce are deleted: the chain has those nonces.
2. The lowest nonce at or above the chain's pending nonce that was given back, or whose
   lease lapsed, is handed out again (gaps are filled first).
3. Otherwise (or for the rest of a run) ``max(next_nonce, chain_pending_nonce)`` and the
   nonces after it are handed out, and ``next_nonce`` moves past them.

How a nonce ends, so that none is burnt and none used twice:

- ``consume``: the chain has it (mined, whatever the outcome, or used by another
  transaction). The lease goes.
- ``release``: it was never broadcast (signing failed, the node refused the transaction
  outright). It is handed out again at the next reservation, so the transactions queued
  behind it are not stuck.
- Neither (the process died, or the node's answer was lost): the lease lapses at
  ``held_until``. If the chain still does not have the nonce by then (its pending nonce
  is not past it), the next reservation hands it out again; if the transaction did
  arrive, the pending nonce is past it and the lease is deleted. A lease therefore has to
  outlast the sender's whole wait for its receipt (``TransactionSender`` asks for that).

This relies on the pending nonce of one node that sees the sender's own transactions (the
configured RPC). A transaction dropped from that node's pool after it was consumed leaves
a gap nobody refills; the sender re-broadcasts while it waits, which makes that rare.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, Engine, and_, delete, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from yieldagent.storage.tables import ChainNonceLeaseRow, ChainNonceRow

DEFAULT_LEASE_SECONDS = 900.0

_counters = ChainNonceRow.__table__  # type: ignore[attr-defined]
_leases = ChainNonceLeaseRow.__table__  # type: ignore[attr-defined]


def _counter_of(chain_id: int, address: str) -> Any:
    return and_(_counters.c.chain_id == chain_id, _counters.c.address == address)


def _leases_of(chain_id: int, address: str) -> Any:
    return and_(_leases.c.chain_id == chain_id, _leases.c.address == address)


class NonceStore:
    """Nonce leases of sending addresses, shared by every process on one database.

    ``holder`` names this process's leases (a fresh id by default); ``lease_seconds`` is
    how long a reservation is held unless the caller asks for another duration.
    """

    def __init__(
        self,
        engine: Engine,
        holder: str | None = None,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._engine = engine
        self.holder = holder or uuid.uuid4().hex
        self._lease_seconds = lease_seconds
        self._wall = wall
        dialect = postgresql if engine.dialect.name == "postgresql" else sqlite
        self._insert = dialect.insert

    def reserve(
        self,
        chain_id: int,
        address: str,
        chain_pending_nonce: int,
        hold_seconds: float | None = None,
    ) -> int:
        """A nonce for the next transaction of ``address``, leased to this holder for
        ``hold_seconds`` (the store's default if None). ``chain_pending_nonce`` is the
        chain's count of the address's transactions, pending ones included."""
        [nonce] = self.reserve_many(chain_id, address, chain_pending_nonce, 1, hold_seconds)
        return nonce

    def reserve_many(
        self,
        chain_id: int,
        address: str,
        chain_pending_nonce: int,
        count: int,
        hold_seconds: float | None = None,
    ) -> list[int]:
        """``count`` nonces for the next transactions of ``address``, in increasing order,
        leased to this holder in one database transaction: gaps first (nonces given back
        or whose lease lapsed), then a run of consecutive fresh ones. Several processes
        reserving at once get disjoint sets."""
        if chain_pending_nonce < 0:
            raise ValueError("the chain's pending nonce cannot be negative")
        if count < 1:
            raise ValueError("a reservation takes at least one nonce")
        now = self._wall()
        held = {"holder": self.holder, "held_until": now + (hold_seconds or self._lease_seconds)}
        address = address.lower()
        taken: list[int] = []
        with self._engine.begin() as connection:
            next_nonce = self._lock_counter(connection, chain_id, address, held)
            mine = _leases_of(chain_id, address)
            connection.execute(delete(_leases).where(mine, _leases.c.nonce < chain_pending_nonce))
            free = or_(_leases.c.holder.is_(None), _leases.c.held_until < now)
            gaps = connection.execute(
                select(_leases.c.nonce)
                .where(mine, _leases.c.nonce >= chain_pending_nonce, free)
                .order_by(_leases.c.nonce)
                .limit(count)
            ).all()
            for (nonce,) in gaps:
                refilled = connection.execute(
                    update(_leases).where(mine, _leases.c.nonce == nonce, free).values(**held)
                )
                if refilled.rowcount == 1:
                    taken.append(int(nonce))
            fresh = count - len(taken)
            if fresh:
                first = max(next_nonce, chain_pending_nonce)
                connection.execute(
                    update(_counters)
                    .where(_counter_of(chain_id, address))
                    .values(next_nonce=first + fresh)
                )
                run = range(first, first + fresh)
                connection.execute(
                    self._insert(_leases)
                    .values(
                        [
                            {"chain_id": chain_id, "address": address, "nonce": n, **held}
                            for n in run
                        ]
                    )
                    .on_conflict_do_update(
                        index_elements=[_leases.c.chain_id, _leases.c.address, _leases.c.nonce],
                        set_=held,
                    )
                )
                taken.extend(run)
        return sorted(taken)

    def _lock_counter(
        self, connection: Connection, chain_id: int, address: str, held: dict[str, Any]
    ) -> int:
        """Locks the address's counter row (creating it at 0) and returns ``next_nonce``."""
        lock = (
            update(_counters)
            .where(_counter_of(chain_id, address))
            .values(**held)
            .returning(_counters.c.next_nonce)
        )
        found = connection.execute(lock).scalar()
        if found is None:
            connection.execute(
                self._insert(_counters)
                .values(chain_id=chain_id, address=address, next_nonce=0, **held)
                .on_conflict_do_nothing(index_elements=[_counters.c.chain_id, _counters.c.address])
            )
            found = connection.execute(lock).scalar_one()
        return int(found)

    def consume(self, chain_id: int, address: str, nonce: int) -> None:
        """The chain has ``nonce`` (a transaction with it was mined, or it was used by
        another one): this holder's lease on it ends."""
        self._end(chain_id, address, nonce, None)

    def consume_many(self, chain_id: int, address: str, nonces: Sequence[int]) -> None:
        """``consume`` of each of ``nonces``, in one database transaction."""
        if not nonces:
            return
        held_by_me = and_(
            _leases_of(chain_id, address.lower()),
            _leases.c.nonce.in_(list(nonces)),
            _leases.c.holder == self.holder,
        )
        with self._engine.begin() as connection:
            connection.execute(delete(_leases).where(held_by_me))

    def release(self, chain_id: int, address: str, nonce: int) -> None:
        """Gives back ``nonce``, which this holder never broadcast: the next reservation
        of the address hands it out again."""
        self._end(chain_id, address, nonce, {"holder": None, "held_until": 0.0})

    def _end(self, chain_id: int, address: str, nonce: int, values: dict[str, Any] | None) -> None:
        held_by_me = and_(
            _leases_of(chain_id, address.lower()),
            _leases.c.nonce == nonce,
            _leases.c.holder == self.holder,
        )
        statement = (
            delete(_leases).where(held_by_me)
            if values is None
            else update(_leases).where(held_by_me).values(**values)
        )
        with self._engine.begin() as connection:
            connection.execute(statement)

    def leased(self, chain_id: int, address: str) -> dict[int, str | None]:
        """The nonces of ``address`` handed out and not seen used, with their holders
        (None: given back). For operators and tests."""
        with self._engine.connect() as connection:
            rows = connection.execute(
                select(_leases.c.nonce, _leases.c.holder)
                .where(_leases_of(chain_id, address.lower()))
                .order_by(_leases.c.nonce)
            ).all()
        return {int(nonce): holder for nonce, holder in rows}
