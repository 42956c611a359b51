"""The wallet (agent) entity, its history records, and the repository port it lives behind.

A use case gathers everything it changes in a ``Journal``; the repository commits a
journal in one database transaction, so a wallet's state and its history never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from yieldagent.domain.books.apr import PerformancePoint
from yieldagent.domain.books.operations import Operation
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.errors import AccessDenied, NotFound
from yieldagent.domain.pagination import PageRequest
from yieldagent.domain.partners.smart_accounts import SmartAccount

if TYPE_CHECKING:
    from yieldagent.domain.books.aggregates import Totals


@dataclass(slots=True)
class Wallet:
    """A wallet and what the service knows of it."""

    id: int
    chain_id: int
    address: str
    eoa: str
    partner_id: int
    status: WalletStatus
    token: str
    selected_protocols: tuple[str, ...]
    constraints: Constraints
    principal: int
    allocation: dict[str, int]
    idle: int
    current_apr: float
    valued_at: datetime
    is_staked: bool
    activation_date: datetime
    last_deactivation_date: datetime | None
    last_reactivation_date: datetime | None
    version: int = 0
    """The stored version this copy was read at; a commit checks it is still current."""
    synced_block: int = 0
    """The ledger has booked the chain's events up to this block (re-read from it)."""
    status_reason: str = ""
    """Why the wallet waits in its state, when it does (funds stuck in a pool, say)."""

    def owned_by(self, partner_id: int) -> Wallet:
        """This wallet, if ``partner_id`` owns it; AccessDenied otherwise."""
        if self.partner_id != partner_id:
            raise AccessDenied("Access denied: the wallet belongs to another partner")
        return self


@dataclass(frozen=True, slots=True)
class DepositRecord:
    """A verified deposit."""

    amount: int
    token: str
    tx_hash: str | None
    block_number: int | None
    date: datetime
    log_index: int = 0


@dataclass(frozen=True, slots=True)
class WithdrawalRecord:
    """A withdrawal and its split: the service's (``kind`` "withdrawal") or one the owner
    made from the account directly ("external", no fee). ``amount`` = principal + yield;
    the receiver got ``amount − fee``."""

    token: str
    amount: int
    principal: int
    yield_: int
    fee: int
    value: float
    value_in_usd: float
    tx_hash: str | None
    block_number: int | None
    date: datetime
    log_index: int = 0
    kind: str = "withdrawal"


@dataclass(frozen=True, slots=True)
class TransactionRecord:
    """An on-chain transaction in the wallet's history."""

    action: str
    token: str
    amount: int
    tx_hash: str
    date: datetime
    status: str = "approved"
    protocol: str = ""
    new_token: str | None = None
    amount_out: int | None = None
    apr: float | None = None
    block_number: int | None = None
    correlation_id: str | None = None
    log_index: int = 0


@dataclass(frozen=True, slots=True)
class RewardRecord:
    """A reward claim."""

    token: str
    token_symbol: str
    amount: int
    decimals: int
    dollar_value: float
    tx_hash: str
    is_staked: bool
    date: datetime


@dataclass(slots=True)
class Journal:
    """What one use case changes: the wallet's new state, the records it adds, and the
    operation it starts or moves on; all committed together."""

    wallet: Wallet
    deposits: list[DepositRecord] = field(default_factory=list)
    withdrawals: list[WithdrawalRecord] = field(default_factory=list)
    transactions: list[TransactionRecord] = field(default_factory=list)
    rewards: list[RewardRecord] = field(default_factory=list)
    points: list[PerformancePoint] = field(default_factory=list)
    operation: Operation | None = None
    owner: str | None = None
    """The lease the commit must still hold, if the writer holds one."""


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


def wallet_not_found(chain_id: int, address: str) -> NotFound:
    """The error for a wallet that does not exist."""
    return NotFound(f"Wallet {address} not found on chain {chain_id}")


def require(wallet: Wallet | None, chain_id: int, address: str) -> Wallet:
    """``wallet``, or NotFound naming what was looked for."""
    if wallet is None:
        raise wallet_not_found(chain_id, address)
    return wallet
