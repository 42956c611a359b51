"""The storage ports: every repository the domain and the servicers keep things in.

``yieldagent.storage`` implements each of them over SQLModel (SQLite or PostgreSQL). The
value types a port speaks in are defined with the domain concept they belong to (a
``Wallet`` in ``domain.books.wallets``, an ``Operation`` in ``domain.books.operations``);
the few that exist only for a port (an idempotency key's record) are defined here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from yieldagent.domain.books.aggregates import FirstDeposit, StoredWallet, Totals, WalletFacts
    from yieldagent.domain.books.apr import PerformancePoint
    from yieldagent.domain.books.events import WalletEvent
    from yieldagent.domain.books.operations import Operation, OperationStatus
    from yieldagent.domain.books.wallet_states import WalletStatus
    from yieldagent.domain.books.wallets import (
        DepositRecord,
        Journal,
        RewardRecord,
        TransactionRecord,
        Wallet,
        WithdrawalRecord,
    )
    from yieldagent.domain.market.history import Snapshot
    from yieldagent.domain.pagination import PageRequest
    from yieldagent.domain.partners.partners import StoredCredentials
    from yieldagent.domain.partners.smart_accounts import Provider, SmartAccount


# -- wallets, their books and their leases ------------------------------------------------


class WalletRepository(Protocol):
    """Where wallets and their history are kept."""

    def get(self, chain_id: int, address: str) -> Wallet | None:
        """The wallet at ``address`` on ``chain_id``."""

    def get_by_id(self, wallet_id: int) -> Wallet | None:
        """The wallet with this id."""

    def get_many(self, wallet_ids: Sequence[int]) -> list[Wallet]:
        """The stored wallets among ``wallet_ids``, in id order."""

    def get_by_eoa(self, chain_id: int, eoa: str) -> Wallet | None:
        """The most recently activated wallet of ``eoa`` on ``chain_id``."""

    def stamp(self, chain_id: int, key: str, by_eoa: bool) -> tuple[int, int] | None:
        """The id and ``version`` of the wallet ``view`` would read, in one indexed read of
        those two columns: every change to the wallet or its history bumps the version."""

    def view(
        self, chain_id: int, key: str, by_eoa: bool
    ) -> tuple[Wallet, list[DepositRecord], list[WithdrawalRecord]] | None:
        """A wallet (by address, or by EOA: the latest) with its deposits and withdrawals,
        in one read."""

    def smart_account(self, chain_id: int, address: str) -> SmartAccount | None:
        """The smart account recorded at ``address`` on ``chain_id``."""

    def deposit_known(self, chain_id: int, tx_hash: str) -> bool:
        """Whether the transfer ``tx_hash`` was already credited to some wallet."""

    def booked(self, wallet_id: int, since_block: int) -> set[tuple[str, int]]:
        """The chain events (tx hash, log index) from ``since_block`` on that the wallet's
        books and history already hold."""

    def booked_many(self, since: Mapping[int, int]) -> dict[int, set[tuple[str, int]]]:
        """``booked(wallet_id, since_block)`` of each ``wallet_id: since_block`` in
        ``since`` (each one a key), in one read."""

    def create(self, journal: Journal, lease_until: float | None = None) -> Wallet:
        """Stores a new wallet with its journal (and, with ``journal.owner``, its lease held
        by that owner until ``lease_until``); Conflict if the address is taken."""

    def commit(self, journal: Journal, expected: WalletStatus | None = None) -> None:
        """Stores the journal if the stored wallet is still at the version the journal's
        wallet was read at (and, with ``journal.owner``, its lease still held by that owner;
        with ``expected``, its status still that); Conflict otherwise, and nothing changes.
        On success the journal's wallet carries the new version."""

    def commit_many(self, journals: Sequence[Journal]) -> list[bool]:
        """Stores each journal as ``commit`` would, all in one transaction: a journal whose
        wallet changed meanwhile (or lost its lease) is skipped, nothing of it stored, and
        answers False; the others answer True and their wallets carry the new version."""

    def acquire_lease(self, wallet_id: int, owner: str, until: float, now: float) -> bool:
        """Takes the wallet's lease for ``owner`` unless someone else holds a live one."""

    def renew_leases(self, wallet_ids: Sequence[int], owner: str, until: float) -> None:
        """Extends to ``until`` the leases ``owner`` still holds among ``wallet_ids``."""

    def release_lease(self, wallet_id: int, owner: str) -> None:
        """Gives the lease back."""

    def deposits(self, wallet_id: int) -> list[DepositRecord]:
        """The wallet's deposits, oldest first."""

    def withdrawals(self, wallet_id: int) -> list[WithdrawalRecord]:
        """The wallet's withdrawals, oldest first."""

    def transactions(
        self, wallet_id: int, page: PageRequest
    ) -> tuple[list[TransactionRecord], int]:
        """A page of the wallet's transactions, and how many there are in all."""

    def rewards(self, wallet_id: int, page: PageRequest) -> tuple[list[RewardRecord], int]:
        """A page of the wallet's reward records, and how many there are in all."""

    def points(self, wallet_id: int) -> list[PerformancePoint]:
        """The wallet's performance points, oldest first."""

    def wallets(self, chain_id: int) -> Sequence[Wallet]:
        """Every wallet of a chain."""

    def all_deposits(self, chain_id: int) -> list[tuple[int, DepositRecord]]:
        """Every deposit on a chain with its wallet id, oldest first."""

    def count_transactions(self, chain_id: int) -> int:
        """How many transactions the wallets of a chain have."""

    def totals(self, chain_id: int) -> Totals:
        """The chain's totals (``domain.books.aggregates``), kept with every commit."""

    def stored(self, wallet_ids: Sequence[int]) -> dict[int, StoredWallet]:
        """Those of ``wallet_ids`` that exist, as stored now: version, standing, lease."""

    def first_deposits(self, wallet_ids: Sequence[int]) -> dict[int, FirstDeposit]:
        """The first deposits (earliest date, then first booked) of those of ``wallet_ids``
        that have one."""

    def facts(self) -> list[WalletFacts]:
        """Every stored wallet's standing and history, as its chain's totals count them."""

    def totalled_chains(self) -> list[int]:
        """The chains that have stored totals."""

    def replace_totals(self, totals: Mapping[tuple[int, int], Totals]) -> None:
        """Replaces every chain's stored totals with ``totals`` (by chain id and stripe)."""


class LeaseStore(Protocol):
    """Where leases are kept."""

    def acquire_lease(self, wallet_id: int, owner: str, until: float, now: float) -> bool:
        """Takes the wallet's lease for ``owner`` unless someone else holds a live one."""

    def renew_leases(self, wallet_ids: Sequence[int], owner: str, until: float) -> None:
        """Extends to ``until`` the leases ``owner`` still holds among ``wallet_ids``."""

    def release_lease(self, wallet_id: int, owner: str) -> None:
        """Gives the lease back."""


class OperationRepository(Protocol):
    """Where operations are kept. Closing one happens with the wallet's commit
    (``WalletRepository.commit``), so its books and its status never disagree."""

    def start(self, operation: Operation) -> None:
        """Stores a new operation (its intent), before any of its chain calls."""

    def save(self, operation: Operation) -> None:
        """Stores the operation's steps and status as they are now."""

    def save_steps(self, operations: Sequence[Operation]) -> None:
        """Stores the steps of these stored operations as they are now, in one
        transaction (the marks of a round of mined steps)."""

    def get(self, operation_id: str) -> Operation | None:
        """The operation with this id."""

    def by_key(self, key: str) -> Operation | None:
        """The operation started with this idempotency key."""

    def open_on(self, wallet_id: int) -> list[Operation]:
        """The wallet's operations still open, oldest first."""

    def open_on_many(self, wallet_ids: Sequence[int]) -> dict[int, list[Operation]]:
        """``open_on`` of each of ``wallet_ids`` (each one a key), in one read."""

    def abandoned(self, now: float) -> list[Operation]:
        """Open operations whose wallet's lease has lapsed (their process died), and
        waiting ones whose retry is due."""

    def of_wallet(self, wallet_id: int) -> list[Operation]:
        """A wallet's operations, oldest first."""

    def release_key(self, operation_id: str) -> None:
        """Frees the operation's idempotency key for a new attempt."""

    def statuses(self, operation_ids: Sequence[str]) -> dict[str, OperationStatus]:
        """The stored statuses of those of ``operation_ids`` that are stored."""

    def stuck(self, now: float) -> list[int]:
        """Wallets left ``activating``, ``running`` or ``deactivating`` without a live
        lease and without an open operation: the process died between two writes."""


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


# -- risk guards ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RiskRecord:
    """What is kept of one pool's guards: whether a loss excludes it (until an operator
    clears it, and when that was), the state and reasons it last showed, and its recent
    snapshots."""

    protocol: str
    token: str
    loss_excluded: bool = False
    cleared_at: int | None = None
    """Chain time (unix seconds) of the operator's last clearing."""
    state: str = "ok"
    reasons: tuple[str, ...] = ()
    peak_share_price: int = 0
    """The highest share price seen since the last clearing (0: none yet)."""
    history: tuple[Snapshot, ...] = ()
    """The pool's recent snapshots, oldest first, as the survey recorded them for a chain
    whose readings carry no history (``domain.market.history.remembered``)."""


class RiskRepository(Protocol):
    """Where the guards' state of each pool is kept, and what the service holds there."""

    def records(self, chain_id: int) -> list[RiskRecord]:
        """Every pool's record on ``chain_id``."""

    def save(self, chain_id: int, records: Sequence[RiskRecord]) -> None:
        """Stores ``records`` (each replacing its pool's)."""

    def exposure(self, chain_id: int, token: str) -> Mapping[str, int]:
        """What every wallet together holds of ``token`` in each protocol, by protocol."""

    def last_moves(self, wallet_ids: Sequence[int]) -> Mapping[int, float]:
        """When each of ``wallet_ids`` last moved funds in a run (wall-clock unix
        seconds); wallets that never did are missing."""


# -- events ---------------------------------------------------------------------------------


class EventRepository(Protocol):
    """Where stored events are read."""

    def after(self, wallet_id: int, cursor: int, limit: int) -> list[WalletEvent]:
        """The wallet's events with an id above ``cursor``, oldest first, at most ``limit``."""


class EventFeed(Protocol):
    """A wallet's events as they are stored, for a stream that follows it (WatchWallet)."""

    def watch(self, wallet_id: int, cursor: int) -> AsyncIterator[WalletEvent]:
        """The wallet's events after ``cursor``, then new ones as they are stored, until
        ``close``."""

    def close(self) -> None:
        """Ends every stream (the service is stopping)."""


# -- partners -------------------------------------------------------------------------------


class SmartAccountRepository(Protocol):
    """Where smart accounts are recorded."""

    def get(
        self, chain_id: int, eoa: str, agent_id: str, provider: Provider
    ) -> SmartAccount | None:
        """The recorded ``provider`` account for the key, if any."""

    def record(self, account: SmartAccount) -> SmartAccount:
        """Records ``account`` unless its key exists; returns the stored record."""


class PartnerCredentials(Protocol):
    """Where a partner's credentials are looked up on every keyed call."""

    def credentials(self, name: str) -> StoredCredentials | None:
        """The credentials stored for the partner named ``name``, if it exists."""


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
