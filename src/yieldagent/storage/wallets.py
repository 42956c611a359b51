"""Wallets and their history: the repository behind ``domain.books.wallets.WalletRepository``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, bindparam, case, func, insert, or_, union_all
from sqlalchemy import select as select_core
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from yieldagent.domain.books.accounting import WithdrawalSplit
from yieldagent.domain.books.aggregates import FirstDeposit, StoredWallet, Totals, WalletFacts
from yieldagent.domain.books.apr import PerformancePoint
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.books.wallets import (
    DepositRecord,
    Journal,
    RewardRecord,
    TransactionRecord,
    Wallet,
    WithdrawalKind,
    WithdrawalRecord,
)
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.errors import Conflict
from yieldagent.domain.pagination import PageRequest
from yieldagent.domain.ports.accounts import SmartAccount
from yieldagent.storage import schedule
from yieldagent.storage.aggregates import (
    first_deposits,
    read_totals,
    replace_totals,
    stored_wallets,
    totalled_chains,
    wallet_facts,
)
from yieldagent.storage.db import FirstRow, chunks, one_of
from yieldagent.storage.events import signal_for
from yieldagent.storage.journals import book, wallet_values, write
from yieldagent.storage.smart_accounts import account_of
from yieldagent.storage.tables import (
    DepositRow,
    PerformancePointRow,
    RewardRow,
    SmartAccountRow,
    TransactionRow,
    WalletRow,
    WithdrawalRow,
)

_wallets = WalletRow.__table__  # type: ignore[attr-defined]
_deposits = DepositRow.__table__  # type: ignore[attr-defined]
_withdrawals = WithdrawalRow.__table__  # type: ignore[attr-defined]
_transactions = TransactionRow.__table__  # type: ignore[attr-defined]
_rewards = RewardRow.__table__  # type: ignore[attr-defined]

# Partner reads are the hot path: plain Core statements, compiled once and cached.
_BY_ADDRESS = select_core(_wallets).where(
    _wallets.c.chain_id == bindparam("chain_id"), _wallets.c.address == bindparam("key")
)
_BY_ID = select_core(_wallets).where(_wallets.c.id == bindparam("wallet_id"))
_BY_IDS = select_core(_wallets).where(one_of(_wallets.c.id, "wallet_ids")).order_by(_wallets.c.id)
# The later of the first activation and the last reactivation.
_LAST_ACTIVATED = case(
    (
        _wallets.c.last_reactivation_date > _wallets.c.activation_date,
        _wallets.c.last_reactivation_date,
    ),
    else_=_wallets.c.activation_date,
)
_BY_EOA = (
    select_core(_wallets)
    .where(_wallets.c.chain_id == bindparam("chain_id"), _wallets.c.eoa == bindparam("key"))
    .order_by(_LAST_ACTIVATED.desc(), _wallets.c.id.desc())
    .limit(1)
)
# The wallet read's stamp: two integer columns, read through the same indexes, on the
# DBAPI connection (every poll reads one).
_STAMP_BY_ADDRESS = FirstRow(
    select_core(_wallets.c.id, _wallets.c.version).where(
        _wallets.c.chain_id == bindparam("chain_id"), _wallets.c.address == bindparam("key")
    )
)
_STAMP_BY_EOA = FirstRow(
    select_core(_wallets.c.id, _wallets.c.version)
    .where(_wallets.c.chain_id == bindparam("chain_id"), _wallets.c.eoa == bindparam("key"))
    .order_by(_LAST_ACTIVATED.desc(), _wallets.c.id.desc())
    .limit(1)
)
_CREATE = insert(_wallets).returning(_wallets.c.id)
_BOOKED = union_all(
    *(
        select_core(t.c.wallet_id, t.c.tx_hash, t.c.log_index, t.c.block_number).where(
            one_of(t.c.wallet_id, "wallet_ids"),
            or_(t.c.block_number >= bindparam("since"), t.c.block_number.is_(None)),
            t.c.tx_hash.is_not(None),
        )
        for t in (_transactions, _deposits, _withdrawals)
    )
)
_DEPOSITS_OF = (
    select_core(_deposits)
    .where(_deposits.c.wallet_id == bindparam("wallet_id"))
    .order_by(_deposits.c.date, _deposits.c.id)
)
_WITHDRAWALS_OF = (
    select_core(_withdrawals)
    .where(_withdrawals.c.wallet_id == bindparam("wallet_id"))
    .order_by(_withdrawals.c.date, _withdrawals.c.id)
)


def _page_statements(table: Any) -> tuple[Any, Any, Any]:
    """(count, newest first, oldest first) statements of a per-wallet history table."""
    mine = table.c.wallet_id == bindparam("wallet_id")
    page = select_core(table).where(mine).limit(bindparam("limit")).offset(bindparam("offset"))
    return (
        select_core(func.count()).select_from(table).where(mine),
        page.order_by(table.c.date.desc(), table.c.id.desc()),
        page.order_by(table.c.date, table.c.id),
    )


_TRANSACTION_PAGES = _page_statements(_transactions)
_REWARD_PAGES = _page_statements(_rewards)


def _deposit(r: Any) -> DepositRecord:
    return DepositRecord(r.amount, r.token, r.tx_hash, r.block_number, _utc(r.date), r.log_index)


def _withdrawal(r: Any) -> WithdrawalRecord:
    return WithdrawalRecord(
        r.token,
        WithdrawalSplit(r.amount, r.principal, r._mapping["yield"], r.fee),
        r.value,
        r.value_in_usd,
        r.tx_hash,
        r.block_number,
        _utc(r.date),
        r.log_index,
        WithdrawalKind(r.kind),
    )


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _wallet(row: Any) -> Wallet:
    """A Wallet from a WalletRow or a Core row of the wallets table."""
    return Wallet(
        id=row.id,
        chain_id=row.chain_id,
        address=row.address,
        eoa=row.eoa,
        partner_id=row.partner_id,
        status=WalletStatus(row.status),
        token=row.token,
        selected_protocols=tuple(json.loads(row.selected_protocols)),
        constraints=Constraints.from_json(row.constraints),
        principal=row.principal,
        positions={k: int(v) for k, v in json.loads(row.allocation).items()},
        idle=row.idle,
        current_apr=row.current_apr,
        valued_at=_utc(row.valued_at),
        is_staked=row.is_staked,
        activation_date=_utc(row.activation_date),
        last_deactivation_date=row.last_deactivation_date and _utc(row.last_deactivation_date),
        last_reactivation_date=row.last_reactivation_date and _utc(row.last_reactivation_date),
        version=row.version,
        synced_block=row.synced_block,
        status_reason=row.status_reason,
        withdrawable=None if row.withdrawable is None else int(row.withdrawable),
    )


def _transaction(row: Any) -> TransactionRecord:
    return TransactionRecord(
        action=row.action,
        token=row.token,
        amount=row.amount,
        tx_hash=row.tx_hash,
        date=_utc(row.date),
        status=row.status,
        protocol=row.protocol,
        new_token=row.new_token,
        amount_out=row.amount_out,
        apr=row.apr,
        block_number=row.block_number,
        correlation_id=row.correlation_id,
        log_index=row.log_index,
    )


def _reward(row: Any) -> RewardRecord:
    return RewardRecord(
        row.token,
        row.token_symbol,
        row.amount,
        row.decimals,
        row.dollar_value,
        row.tx_hash,
        row.is_staked,
        _utc(row.date),
    )


class WalletStore:
    """Reads and writes wallets and their history.

    ``view`` reads a wallet's deposits and withdrawals each time: the wallet read keeps its
    serialized reply per (wallet, version) (``servicers.replies``, bounded in bytes) and
    comes here only when the version changed, when a copy of the history kept here would
    be stale too.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def get(self, chain_id: int, address: str) -> Wallet | None:
        with self._engine.connect() as connection:
            row = connection.execute(_BY_ADDRESS, {"chain_id": chain_id, "key": address}).first()
        return _wallet(row) if row else None

    def get_by_id(self, wallet_id: int) -> Wallet | None:
        with self._engine.connect() as connection:
            row = connection.execute(_BY_ID, {"wallet_id": wallet_id}).first()
        return _wallet(row) if row else None

    def get_many(self, wallet_ids: Sequence[int]) -> list[Wallet]:
        """The stored wallets among ``wallet_ids``, in id order; one query."""
        if not wallet_ids:
            return []
        with self._engine.connect() as connection:
            rows = connection.execute(_BY_IDS, {"wallet_ids": list(wallet_ids)}).all()
        return [_wallet(row) for row in rows]

    def get_by_eoa(self, chain_id: int, eoa: str) -> Wallet | None:
        with self._engine.connect() as connection:
            row = connection.execute(_BY_EOA, {"chain_id": chain_id, "key": eoa}).first()
        return _wallet(row) if row else None

    def stamp(self, chain_id: int, key: str, by_eoa: bool) -> tuple[int, int] | None:
        read = _STAMP_BY_EOA if by_eoa else _STAMP_BY_ADDRESS
        row = read(self._engine, {"chain_id": chain_id, "key": key})
        return None if row is None else (int(row[0]), int(row[1]))

    def view(
        self, chain_id: int, key: str, by_eoa: bool
    ) -> tuple[Wallet, list[DepositRecord], list[WithdrawalRecord]] | None:
        with self._engine.connect() as connection:
            row = connection.execute(
                _BY_EOA if by_eoa else _BY_ADDRESS, {"chain_id": chain_id, "key": key}
            ).first()
            if row is None:
                return None
            ids = {"wallet_id": row.id}
            deposits = [_deposit(r) for r in connection.execute(_DEPOSITS_OF, ids)]
            withdrawals = [_withdrawal(r) for r in connection.execute(_WITHDRAWALS_OF, ids)]
        return _wallet(row), deposits, withdrawals

    def smart_account(self, chain_id: int, address: str) -> SmartAccount | None:
        with Session(self._engine) as session:
            row = session.exec(
                select(SmartAccountRow).where(
                    SmartAccountRow.chain_id == chain_id, SmartAccountRow.address == address
                )
            ).first()
            return None if row is None else account_of(row)

    def deposit_known(self, chain_id: int, tx_hash: str) -> bool:
        with Session(self._engine) as session:
            return (
                session.exec(
                    select(DepositRow.id).where(
                        DepositRow.chain_id == chain_id, DepositRow.tx_hash == tx_hash
                    )
                ).first()
                is not None
            )

    def booked(self, wallet_id: int, since_block: int) -> set[tuple[str, int]]:
        return self.booked_many({wallet_id: since_block})[wallet_id]

    def booked_many(self, since: Mapping[int, int]) -> dict[int, set[tuple[str, int]]]:
        keys: dict[int, set[tuple[str, int]]] = {wallet_id: set() for wallet_id in since}
        with self._engine.connect() as connection:
            for ids in chunks(sorted(since)):
                params = {"wallet_ids": ids, "since": min(since[i] for i in ids)}
                for row in connection.execute(_BOOKED, params):
                    if row.block_number is None or row.block_number >= since[row.wallet_id]:
                        keys[row.wallet_id].add((row.tx_hash, row.log_index))
        return keys

    def create(self, journal: Journal, lease_until: float | None = None) -> Wallet:
        wallet = journal.wallet
        now = datetime.now(UTC)
        values = {
            "chain_id": wallet.chain_id,
            "address": wallet.address,
            "eoa": wallet.eoa,
            "partner_id": wallet.partner_id,
            "created_at": now,
            **wallet_values(wallet),
        }
        try:
            with self._engine.begin() as connection:
                wallet.id = connection.execute(_CREATE, values).scalar_one()
                schedule.enroll(connection, wallet.id, wallet.status, journal.owner, lease_until)
                if journal.operation is not None:
                    journal.operation = replace(journal.operation, wallet_id=wallet.id)
                recorded = book(connection, [journal])
        except IntegrityError:
            raise Conflict("This wallet was activated concurrently; retry") from None
        if recorded:
            signal_for(self._engine).notify()
        return wallet

    def commit(self, journal: Journal, expected: WalletStatus | None = None) -> None:
        try:
            written, recorded = self._write([journal], expected)
        except IntegrityError:
            raise Conflict("This chain event was already booked; retry") from None
        if not written[0]:
            raise Conflict("The wallet changed meanwhile; retry")
        if recorded:
            signal_for(self._engine).notify()

    def commit_many(self, journals: Sequence[Journal]) -> list[bool]:
        """One transaction for all (``storage.journals``); when a record of one was already
        booked, it is rolled back and each journal is committed on its own instead, so
        that journal alone fails."""
        if not journals:
            return []
        try:
            written, recorded = self._write(journals)
        except IntegrityError:
            return [self._commit_alone(journal) for journal in journals]
        if recorded:
            signal_for(self._engine).notify()
        return written

    def _commit_alone(self, journal: Journal) -> bool:
        try:
            self.commit(journal)
        except Conflict:
            return False
        return True

    def _write(
        self, journals: Sequence[Journal], expected: WalletStatus | None = None
    ) -> tuple[list[bool], int]:
        """Writes ``journals`` in one transaction; the written ones' wallets then carry
        their new version."""
        with self._engine.begin() as connection:
            written, recorded = write(connection, journals, expected)
        for journal, done in zip(journals, written, strict=True):
            if done:
                journal.wallet.version += 1
        return written, recorded

    def acquire_lease(self, wallet_id: int, owner: str, until: float, now: float) -> bool:
        with self._engine.begin() as connection:
            return schedule.acquire(connection, wallet_id, owner, until, now)

    def renew_leases(self, wallet_ids: Sequence[int], owner: str, until: float) -> None:
        with self._engine.begin() as connection:
            schedule.renew(connection, wallet_ids, owner, until)

    def release_lease(self, wallet_id: int, owner: str) -> None:
        with self._engine.begin() as connection:
            schedule.release(connection, wallet_id, owner)

    def deposits(self, wallet_id: int) -> list[DepositRecord]:
        with self._engine.connect() as connection:
            return [_deposit(r) for r in connection.execute(_DEPOSITS_OF, {"wallet_id": wallet_id})]

    def withdrawals(self, wallet_id: int) -> list[WithdrawalRecord]:
        with self._engine.connect() as connection:
            return [
                _withdrawal(r)
                for r in connection.execute(_WITHDRAWALS_OF, {"wallet_id": wallet_id})
            ]

    def _page(
        self, statements: tuple[Any, Any, Any], wallet_id: int, page: PageRequest
    ) -> tuple[list[Any], int]:
        count, newest, oldest = statements
        with self._engine.connect() as connection:
            total = connection.execute(count, {"wallet_id": wallet_id}).scalar_one()
            params = {"wallet_id": wallet_id, "limit": page.limit, "offset": page.offset}
            rows = connection.execute(newest if page.newest_first else oldest, params).all()
        return list(rows), int(total)

    def transactions(
        self, wallet_id: int, page: PageRequest
    ) -> tuple[list[TransactionRecord], int]:
        rows, total = self._page(_TRANSACTION_PAGES, wallet_id, page)
        return [_transaction(r) for r in rows], total

    def rewards(self, wallet_id: int, page: PageRequest) -> tuple[list[RewardRecord], int]:
        rows, total = self._page(_REWARD_PAGES, wallet_id, page)
        return [_reward(r) for r in rows], total

    def points(self, wallet_id: int) -> list[PerformancePoint]:
        with Session(self._engine) as session:
            rows = session.exec(
                select(PerformancePointRow)
                .where(PerformancePointRow.wallet_id == wallet_id)
                .order_by(col(PerformancePointRow.at), col(PerformancePointRow.id))
            )
            return [PerformancePoint(_utc(r.at), r.value, r.flow) for r in rows]

    def wallets(self, chain_id: int) -> Sequence[Wallet]:
        with Session(self._engine) as session:
            rows = session.exec(
                select(WalletRow).where(WalletRow.chain_id == chain_id).order_by(col(WalletRow.id))
            )
            return [_wallet(r) for r in rows]

    def all_deposits(self, chain_id: int) -> list[tuple[int, DepositRecord]]:
        with Session(self._engine) as session:
            rows = session.exec(
                select(DepositRow)
                .where(DepositRow.chain_id == chain_id)
                .order_by(col(DepositRow.date), col(DepositRow.id))
            )
            return [
                (
                    r.wallet_id,
                    DepositRecord(r.amount, r.token, r.tx_hash, r.block_number, _utc(r.date)),
                )
                for r in rows
            ]

    def stored(self, wallet_ids: Sequence[int]) -> dict[int, StoredWallet]:
        if not wallet_ids:
            return {}
        with self._engine.connect() as connection:
            return stored_wallets(connection, wallet_ids)

    def first_deposits(self, wallet_ids: Sequence[int]) -> dict[int, FirstDeposit]:
        if not wallet_ids:
            return {}
        with self._engine.connect() as connection:
            return first_deposits(connection, wallet_ids)

    def facts(self) -> list[WalletFacts]:
        with self._engine.connect() as connection:
            return wallet_facts(connection)

    def totalled_chains(self) -> list[int]:
        with self._engine.connect() as connection:
            return totalled_chains(connection)

    def replace_totals(self, totals: Mapping[tuple[int, int], Totals]) -> None:
        with self._engine.begin() as connection:
            replace_totals(connection, totals)

    def totals(self, chain_id: int) -> Totals:
        return read_totals(self._engine, chain_id)

    def count_transactions(self, chain_id: int) -> int:
        with Session(self._engine) as session:
            return session.exec(
                select(func.count())
                .select_from(TransactionRow)
                .join(WalletRow, col(WalletRow.id) == TransactionRow.wallet_id)
                .where(WalletRow.chain_id == chain_id)
            ).one()
