"""The wallet (agent) entity and its history records.

A use case gathers everything it changes in a ``Journal``; the repository
(``domain.ports.storage.WalletRepository``) commits a journal in one database transaction,
so a wallet's state and its history never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any

from yieldagent.domain.books.accounting import WithdrawalSplit
from yieldagent.domain.books.aggregates import Totals
from yieldagent.domain.books.apr import PerformancePoint
from yieldagent.domain.books.events import EventDraft
from yieldagent.domain.books.operations import Operation
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.catalog import TokenInfo
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.dates import iso
from yieldagent.domain.errors import AccessDenied, NotFound


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
    positions: dict[str, int]
    """What the wallet holds in each protocol, by protocol, as of its last valuation."""
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
    withdrawable: int | None = None
    """What a withdrawal could pay at once as of the last valuation: the idle balance and
    each position within its pool's cash (``accounting.withdrawable``); None until valued."""

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


class WithdrawalKind(StrEnum):
    """Who made a withdrawal."""

    SERVICE = "withdrawal"
    """The service, on a partner's call or a deactivation: its fee taken."""
    EXTERNAL = "external"
    """The owner, from the account directly: no fee."""


@dataclass(frozen=True, slots=True)
class WithdrawalRecord:
    """A withdrawal and its split: the one withdrawal type. What a withdrawal call
    answers, what the wallet record lists, the event it makes and what the books store
    are this record; its split (principal, yield, fee) is decided before the chain call
    and travels with the payout step. ``value`` is what the receiver got
    (``split.to_user``) in whole tokens."""

    token: str
    split: WithdrawalSplit
    value: float
    value_in_usd: float
    tx_hash: str | None
    block_number: int | None
    date: datetime
    log_index: int = 0
    kind: WithdrawalKind = WithdrawalKind.SERVICE

    @classmethod
    def priced(
        cls,
        token: str,
        split: WithdrawalSplit,
        info: TokenInfo,
        tx_hash: str | None,
        block_number: int | None,
        date: datetime,
        log_index: int = 0,
        kind: WithdrawalKind = WithdrawalKind.SERVICE,
    ) -> WithdrawalRecord:
        """A withdrawal of ``token`` divided as ``split``, what the receiver got valued in
        whole tokens and in US dollars at ``info``'s price."""
        received = float(Decimal(split.to_user) / 10**info.decimals)
        return cls(
            token,
            split,
            received,
            received * info.price_usd,
            tx_hash,
            block_number,
            date,
            log_index,
            kind,
        )

    @property
    def amount(self) -> int:
        """What left the wallet: principal plus yield."""
        return self.split.amount

    @property
    def principal(self) -> int:
        return self.split.principal

    @property
    def yield_(self) -> int:
        return self.split.yield_

    @property
    def fee(self) -> int:
        return self.split.fee

    @property
    def received(self) -> int:
        """What the receiver got: the amount less the fee."""
        return self.split.to_user

    def as_json(self) -> dict[str, Any]:
        """The answer a withdrawal operation stores, for a retry of its idempotency key to
        be answered the same (amounts as decimal strings)."""
        return {
            "date": iso(self.date),
            "token": self.token,
            "split": self.split.as_json(),
            "value": self.value,
            "value_in_usd": self.value_in_usd,
            "tx_hash": self.tx_hash,
            "block_number": self.block_number,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WithdrawalRecord:
        """The answer a withdrawal operation stored (``as_json``)."""
        return cls(
            data["token"],
            WithdrawalSplit.from_json(data["split"]),
            data["value"],
            data["value_in_usd"],
            data["tx_hash"],
            data["block_number"],
            datetime.fromisoformat(data["date"]),
        )


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
    events: list[EventDraft] = field(default_factory=list)
    """What the commit makes true for partners (``domain.books.effects``, by the books)."""
    totals: Totals = field(default_factory=Totals)
    """How the commit changes its chain's totals (``domain.books.effects``, by the books)."""
    schedule: bool | None = None
    """Whether the commit turns the wallet's agent schedule on (it becomes ``activated``)
    or off (it leaves that state); None when neither (``domain.books.effects``)."""


def wallet_not_found(chain_id: int, address: str) -> NotFound:
    """The error for a wallet that does not exist."""
    return NotFound(f"Wallet {address} not found on chain {chain_id}")


def require(wallet: Wallet | None, chain_id: int, address: str) -> Wallet:
    """``wallet``, or NotFound naming what was looked for."""
    if wallet is None:
        raise wallet_not_found(chain_id, address)
    return wallet
