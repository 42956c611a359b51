"""The storage ports of the shared kernel: wallet leases, the agent's schedule and
idempotency keys. ``yieldagent.storage`` implements them over SQLModel (SQLite or
PostgreSQL).

A port is declared beside the values it carries: the books' repositories are
``domain.books.ports``, the guards' records ``domain.market.ports``, smart accounts
``domain.ports.accounts`` and partners' credentials ``domain.ports.credentials``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

# -- leases -------------------------------------------------------------------------------


class LeaseStore(Protocol):
    """Where leases are kept."""

    def acquire_lease(self, wallet_id: int, owner: str, until: float, now: float) -> bool:
        """Takes the wallet's lease for ``owner`` unless someone else holds a live one."""

    def renew_leases(self, wallet_ids: Sequence[int], owner: str, until: float) -> None:
        """Extends to ``until`` the leases ``owner`` still holds among ``wallet_ids``."""

    def release_lease(self, wallet_id: int, owner: str) -> None:
        """Gives the lease back."""


# -- the agent's schedule ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunEnd:
    """How a wallet's turn ended: its run's outcome (``no_action``, ``failed`` or a moving
    run's operation status) and why, or ``status`` None when the wallet was not run (no
    longer activated, or the chain did not answer before its run began)."""

    wallet_id: int
    status: str | None = None
    reason: str = ""


class RunRepository(Protocol):
    """Where the schedule and protocol pauses are kept."""

    def claim_due(
        self, now: float, owner: str, lease_until: float, limit: int
    ) -> dict[int, float | None]:
        """Leases up to ``limit`` due wallets for ``owner``; returns their ids, each with
        when it last moved funds in a run (wall-clock unix seconds; None: never)."""

    def schedule(self, wallet_id: int, next_run_at: float) -> None:
        """Sets when the wallet runs next."""

    def hasten(
        self,
        chain_id: int,
        token: str,
        protocols: Sequence[str],
        now: float,
        failed_only: bool = False,
    ) -> int:
        """Makes every activated wallet of ``chain_id`` that held ``token`` in any of
        ``protocols`` at its last valuation due at ``now``, unless it is due already
        (``failed_only``: only those whose last run failed); returns how many it moved
        forward."""

    def finish(self, ends: Sequence[RunEnd], owner: str, next_run_at: float, at: float) -> None:
        """In one transaction, for each of ``ends``: notes the run's outcome (at ``at``) if
        the wallet ran, sets its next run, and releases the lease ``owner`` still holds."""

    def note(self, end: RunEnd, at: float) -> None:
        """Notes the outcome of a run made on request (``Agent.run``)."""

    def paused(self, chain_id: int) -> frozenset[str]:
        """Protocols the operator paused on ``chain_id``."""

    @property
    def parallel_writes(self) -> bool:
        """Whether a ``finish`` from another thread can proceed while this one writes
        (False where the database has one writer: the second would only wait)."""


# -- fleet-wide log watches -------------------------------------------------------------------


class WatchCursors(Protocol):
    """How far each chain's fleet-wide log watches have read."""

    def cursor(self, chain_id: int, watch: str) -> int | None:
        """The first block of ``chain_id`` that ``watch`` has not read yet (None: never
        read)."""

    def advance(self, chain_id: int, watch: str, next_block: int) -> None:
        """Moves the cursor to ``next_block``, never back."""


# -- idempotency keys -------------------------------------------------------------------------

IN_PROGRESS = "in_progress"
"""A key's call is being executed (by the attempt that owns its lease)."""
COMPLETED = "completed"
"""A key's call answered; its response is replayed."""


@dataclass(frozen=True, slots=True)
class StoredError:
    """A refusal as it was answered: gRPC code and message, the ``google.rpc.Status``
    (with its details) and the REST status and JSON body."""

    code: int
    message: str
    details: bytes
    rest_status: int
    rest_body: str


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """An idempotency key as stored."""

    partner_id: int
    key: str
    method: str
    fingerprint: str
    state: str
    owner: str
    lease_until: float
    response: bytes | None
    error: StoredError | None
    created_at: datetime

    def lapsed(self, now: float) -> bool:
        """Whether it is in progress under a lease nobody renewed in time."""
        return self.state == IN_PROGRESS and self.lease_until < now


class IdempotencyStore(Protocol):
    """Who executes a keyed call, and what it answered. Every write names the attempt
    (``owner``) that holds the key and changes nothing once another attempt took it over."""

    def claim(
        self,
        partner_id: int,
        key: str,
        method: str,
        fingerprint: str,
        owner: str,
        lease_seconds: float,
    ) -> KeyRecord | None:
        """Makes ``owner`` the attempt that executes the call, if the key is free: None
        when ``owner`` now holds it (new, past its time to live, or in progress under a
        lapsed lease with this same method and fingerprint); otherwise the key as it stands,
        for the caller to replay, wait or refuse."""

    def get(self, partner_id: int, key: str) -> KeyRecord | None:
        """The key as stored, or None."""

    def renew(self, partner_id: int, key: str, owner: str, lease_seconds: float) -> bool:
        """Extends ``owner``'s lease on the key; False once another attempt has it."""

    def complete(self, partner_id: int, key: str, owner: str, response: bytes) -> bool:
        """Stores the call's response; False once another attempt has the key."""

    def fail(self, partner_id: int, key: str, owner: str, error: StoredError) -> bool:
        """Stores the call's refusal; False once another attempt has the key."""

    def release(self, partner_id: int, key: str, owner: str) -> bool:
        """Frees the key for a new attempt; False once another attempt has it."""
