"""The wallet schedule (``wallet_schedule``): each wallet's lease, its next agent run,
whether it is activated, and how its last run ended (written by ``storage.runs``), one
narrow row per wallet.

It is apart from the wide wallets row because the agent writes leases and next runs
several times an hour, while a wallet's state changes rarely: a claim, a renewal or a batch
end writes this row and its two indexes, not the wallet's six (see migration 0012).

Every function here works in the caller's transaction:

- ``enroll``: a new wallet's row, in the transaction that creates the wallet;
  ``reschedule``: its next run.
- ``follow_statuses``: ``active`` follows the wallet's status, in the transaction of the
  wallet commit that changed it.
- ``hold``: a wallet commit first holds its wallets' rows: it locks them and learns which
  leases are still its own, so a lease taken over meanwhile cannot be written over (the
  takeover waits for the commit, or the commit sees it).
- ``acquire``, ``renew`` and ``release``: the lease itself (``domain.books.leases``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from sqlalchemy import Connection, bindparam, insert, or_, update

from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.storage.db import chunks, one_of
from yieldagent.storage.tables import WalletScheduleRow

_schedule = WalletScheduleRow.__table__  # type: ignore[attr-defined]
_c = _schedule.c
_listed = one_of(_c.wallet_id, "wallet_ids")
_owned = _c.lease_owner == bindparam("owner")

_ENROLL = insert(_schedule)
_RESCHEDULE = update(_schedule).where(_listed).values(next_run_at=bindparam("at"))
_FOLLOW = update(_schedule).where(_listed).values(active=bindparam("on"))
# No-op writes: they take the rows' locks (SQLite: the write lock, before any read), and on
# PostgreSQL check the owner on each row as it is once a concurrent writer has committed.
_LOCK = update(_schedule).where(_listed).values(wallet_id=_c.wallet_id).returning(_c.wallet_id)
_HOLD = _LOCK.where(_owned)
_ACQUIRE = (
    update(_schedule)
    .where(
        _c.wallet_id == bindparam("one"),
        or_(_c.lease_owner.is_(None), _c.lease_until < bindparam("now"), _owned),
    )
    .values(lease_owner=bindparam("owner"), lease_until=bindparam("until"))
)
_RENEW = update(_schedule).where(_listed, _owned).values(lease_until=bindparam("until"))
_RELEASE = (
    update(_schedule)
    .where(_c.wallet_id == bindparam("one"), _owned)
    .values(lease_owner=None, lease_until=None)
)


def enroll(
    connection: Connection,
    wallet_id: int,
    status: WalletStatus,
    owner: str | None = None,
    until: float | None = None,
) -> None:
    """Adds a new wallet to the schedule, due at once once activated, with ``owner``'s
    lease until ``until`` if given."""
    values = {
        "wallet_id": wallet_id,
        "active": status == WalletStatus.ACTIVATED,
        "next_run_at": 0.0,
        "lease_owner": owner,
        "lease_until": until if owner else None,
    }
    connection.execute(_ENROLL, values)


def reschedule(connection: Connection, wallet_id: int, next_run_at: float) -> None:
    """Sets when the agent runs the wallet next."""
    connection.execute(_RESCHEDULE, {"wallet_ids": [wallet_id], "at": next_run_at})


def follow_statuses(connection: Connection, activated: Mapping[int, bool]) -> None:
    """Sets whether each of ``activated``'s wallets is activated."""
    for on in (True, False):
        for chunk in chunks(sorted(w for w, is_on in activated.items() if is_on is on)):
            connection.execute(_FOLLOW, {"wallet_ids": chunk, "on": on})


def hold(
    connection: Connection, leases: Iterable[tuple[int, str | None]]
) -> set[tuple[int, str | None]]:
    """Locks the schedule rows of the wallets of ``leases`` ((wallet id, owner) pairs: a
    wallet commit's journals) and returns the pairs still valid: the owner still holds the
    wallet's lease, or no owner was named. One statement per owner and ``chunks`` of
    wallets (an agent's batch has one owner).

    Every wallet commit takes these locks first and then the wallets' rows, so a commit
    never holds a wallet's row while it waits for its schedule row; claims and batch ends
    lock schedule rows only."""
    by_owner: dict[str | None, list[int]] = {}
    for wallet_id, owner in leases:
        by_owner.setdefault(owner, []).append(wallet_id)
    held: set[tuple[int, str | None]] = set()
    for owner, wallet_ids in by_owner.items():
        statement = _LOCK if owner is None else _HOLD
        for chunk in chunks(sorted(set(wallet_ids))):
            found = connection.execute(statement, {"wallet_ids": chunk, "owner": owner})
            held.update((wallet_id, owner) for wallet_id in found.scalars())
    return held


def acquire(connection: Connection, wallet_id: int, owner: str, until: float, now: float) -> bool:
    """Takes the wallet's lease for ``owner`` until ``until`` unless someone else holds a
    live one; whether it did."""
    params = {"one": wallet_id, "owner": owner, "until": until, "now": now}
    return bool(connection.execute(_ACQUIRE, params).rowcount)


def renew(connection: Connection, wallet_ids: Sequence[int], owner: str, until: float) -> None:
    """Extends to ``until`` the leases ``owner`` still holds among ``wallet_ids``."""
    for chunk in chunks(sorted(wallet_ids)):
        connection.execute(_RENEW, {"wallet_ids": chunk, "owner": owner, "until": until})


def release(connection: Connection, wallet_id: int, owner: str) -> None:
    """Gives ``owner``'s lease of the wallet back (nothing if another holds it)."""
    connection.execute(_RELEASE, {"one": wallet_id, "owner": owner})
