"""The books' storage ports: where wallets, their journals and leases, operations and
events are kept, and the outbox a pool's change of standing is told through.
``yieldagent.storage`` implements them over SQLModel.

Each port speaks in the books' own values (a ``Wallet``, a ``Journal``, an ``Operation``, a
``WalletEvent``), so it is declared here beside them, not in ``domain.ports``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from yieldagent.domain.books.aggregates import FirstDeposit, StoredWallet, Totals, WalletFacts
    from yieldagent.domain.books.apr import PerformancePoint
    from yieldagent.domain.books.events import EventDraft, WalletEvent
    from yieldagent.domain.books.operations import Executed, Operation, OperationStatus
    from yieldagent.domain.books.wallet_states import WalletStatus
    from yieldagent.domain.books.wallets import (
        DepositRecord,
        Journal,
        RewardRecord,
        TransactionRecord,
        Wallet,
        WithdrawalRecord,
    )
    from yieldagent.domain.market.ports import RiskRecord
    from yieldagent.domain.pagination import PageRequest
    from yieldagent.domain.ports.accounts import SmartAccount


# -- wallets and their books ----------------------------------------------------------------


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


class OperationPages(Protocol):
    """A wallet's operations, a page at a time, with their times."""

    def page_of_wallet(self, wallet_id: int, page: PageRequest) -> tuple[list[Executed], int]:
        """A page of the wallet's operations by start (newest first when the page asks),
        and how many it has."""

    def executed(self, operation_id: str) -> Executed | None:
        """The operation with this id, with its times."""


# -- events ---------------------------------------------------------------------------------


class EventRepository(Protocol):
    """Where stored events are read."""

    def after(self, wallet_id: int, cursor: int, limit: int) -> list[WalletEvent]:
        """The wallet's events with an id above ``cursor``, oldest first, at most ``limit``."""


class EventPages(Protocol):
    """A wallet's stored events, a page at a time."""

    def page_of_wallet(self, wallet_id: int, page: PageRequest) -> tuple[list[WalletEvent], int]:
        """A page of the wallet's events by id (newest first when the page asks), and how
        many are kept."""


class EventFeed(Protocol):
    """A wallet's events as they are stored, for a stream that follows it (WatchWallet)."""

    def watch(self, wallet_id: int, cursor: int) -> AsyncIterator[WalletEvent]:
        """The wallet's events after ``cursor``, then new ones as they are stored, until
        ``close``."""

    def close(self) -> None:
        """Ends every stream (the service is stopping)."""


# -- a pool's change of standing, told to its wallets ---------------------------------------


@dataclass(frozen=True, slots=True)
class PoolWallet:
    """A wallet of a pool's token, as a change of the pool's standing reaches it: whose it
    is, its state, what it held at its last valuation and the protocols it selected."""

    wallet_id: int
    partner_id: int
    address: str
    status: WalletStatus
    positions: Mapping[str, int]
    selected: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RiskChange:
    """A pool's new record, the stored state it was judged from, and the events that tell
    its wallets of the change (``domain.risk.notices``; none when the state stays)."""

    record: RiskRecord
    previous: str
    events: tuple[EventDraft, ...] = ()


@runtime_checkable
class RiskOutbox(Protocol):
    """A store of the guards' records (``RiskRepository``) that keeps, with each pool's
    record, the events its change of state tells: in one transaction, and once however many
    processes judge the pool at once."""

    def wallets_of(self, chain_id: int, token: str) -> list[PoolWallet]:
        """The wallets of ``token`` on ``chain_id``."""

    def save_changes(self, chain_id: int, changes: Sequence[RiskChange]) -> list[RiskChange]:
        """Stores, in one transaction, each change whose pool is still stored at its
        ``previous`` state (a pool not stored yet is ``ok``): its record and its events.
        Returns the others, nothing of them stored: their pools changed meanwhile."""
