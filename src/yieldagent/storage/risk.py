"""The risk guards' storage: each pool's record (``pool_risks``; its recent snapshots a
JSON list), what the service holds in each pool (the chain totals the books keep), and
when wallets last moved funds (the schedule).

A change of a pool's state comes with its events (``protocol.risk_changed``), which the
domain derived for the wallets it concerns (``domain.risk.notices``, from ``wallets_of``);
they are recorded in the same transaction as the record, so the state and its events are
stored together or not at all. The stored row is read for update and must still be at the
state the change was judged from, so two processes judging a pool at once tell of one
change once: the later one's change is handed back, to be derived again."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from sqlalchemy import Engine, bindparam, select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session
from sqlmodel import select as orm_select

from yieldagent.domain.books.events import EventDraft
from yieldagent.domain.books.ports import PoolWallet, RiskChange
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.market.history import Snapshot
from yieldagent.domain.market.ports import RiskRecord
from yieldagent.storage.aggregates import read_totals
from yieldagent.storage.db import chunks
from yieldagent.storage.events import record_events, signal_for
from yieldagent.storage.tables import PoolRiskRow, WalletRow, WalletScheduleRow

_schedule = WalletScheduleRow.__table__  # type: ignore[attr-defined]
_wallets = WalletRow.__table__  # type: ignore[attr-defined]
_OF_TOKEN = select(
    _wallets.c.id,
    _wallets.c.partner_id,
    _wallets.c.address,
    _wallets.c.status,
    _wallets.c.allocation,
    _wallets.c.selected_protocols,
).where(_wallets.c.chain_id == bindparam("chain_id"), _wallets.c.token == bindparam("token"))


def _record(row: PoolRiskRow) -> RiskRecord:
    return RiskRecord(
        row.protocol,
        row.token,
        row.loss_excluded,
        row.cleared_at,
        row.state,
        tuple(json.loads(row.reasons)),
        row.peak_share_price,
        tuple(_snapshot(*fields) for fields in json.loads(row.history)),
    )


def _snapshot(
    at: int,
    tvl: int,
    borrows: int,
    share_price: int,
    supply_paused: bool,
    withdraw_paused: bool,
    frozen: bool,
) -> Snapshot:
    return Snapshot(at, tvl, borrows, share_price, supply_paused, withdraw_paused, frozen)


def _history(history: Sequence[Snapshot]) -> str:
    """The snapshots as a JSON list of lists (integers stay exact: JSON's are unbounded)."""
    return json.dumps(
        [
            [s.at, s.tvl, s.borrows, s.share_price, s.supply_paused, s.withdraw_paused, s.frozen]
            for s in history
        ]
    )


class RiskStore:
    """Reads and writes the guards' records."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def records(self, chain_id: int) -> list[RiskRecord]:
        """Every pool's record on ``chain_id``, by protocol and token."""
        with Session(self._engine) as session:
            rows = session.exec(
                orm_select(PoolRiskRow).where(PoolRiskRow.chain_id == chain_id)
            ).all()
            return sorted((_record(row) for row in rows), key=lambda r: (r.protocol, r.token))

    def save(self, chain_id: int, records: Sequence[RiskRecord]) -> None:
        """Stores ``records``, each replacing its pool's, in one transaction, with no
        events (``save_changes`` keeps those). Two processes may store a pool's first
        record at once (a listing and a batch): the one that loses the insert stores its
        records again, now as updates."""
        try:
            self._save(chain_id, records)
        except IntegrityError:
            self._save(chain_id, records)

    def _save(self, chain_id: int, records: Sequence[RiskRecord]) -> None:
        with Session(self._engine) as session:
            for record in records:
                _write(session, _row(session, chain_id, record), record)
            session.commit()

    def save_changes(self, chain_id: int, changes: Sequence[RiskChange]) -> list[RiskChange]:
        """Stores each change whose pool is still at the state it was judged from, with
        its events, in one transaction; returns the others, nothing of them stored. A
        first record another process inserted meanwhile is met as ``save`` meets it."""
        try:
            stale, told = self._save_changes(chain_id, changes)
        except IntegrityError:
            stale, told = self._save_changes(chain_id, changes)
        if told:
            signal_for(self._engine).notify()
        return stale

    def _save_changes(
        self, chain_id: int, changes: Sequence[RiskChange]
    ) -> tuple[list[RiskChange], int]:
        with Session(self._engine) as session:
            stale: list[RiskChange] = []
            drafts: list[EventDraft] = []
            for change in changes:
                row = _row(session, chain_id, change.record)
                if row.state != change.previous:
                    stale.append(change)
                    continue
                drafts.extend(change.events)
                _write(session, row, change.record)
            session.flush()
            told = record_events(session, drafts)
            session.commit()
            return stale, told

    def wallets_of(self, chain_id: int, token: str) -> list[PoolWallet]:
        """The wallets of ``token`` on ``chain_id``, as a change of a pool reaches them."""
        with self._engine.connect() as connection:
            rows = connection.execute(_OF_TOKEN, {"chain_id": chain_id, "token": token})
            return [
                PoolWallet(
                    row.id,
                    row.partner_id,
                    row.address,
                    WalletStatus(row.status),
                    {k: int(v) for k, v in json.loads(row.allocation).items()},
                    tuple(json.loads(row.selected_protocols)),
                )
                for row in rows
            ]

    def exposure(self, chain_id: int, token: str) -> Mapping[str, int]:
        """What the chain's wallets hold of ``token`` in each protocol, as the books' totals
        have it (their positions as last valued)."""
        totals = read_totals(self._engine, chain_id)
        return {
            protocol: placed.amount
            for (protocol, held), placed in totals.protocols.items()
            if held == token
        }

    def last_moves(self, wallet_ids: Sequence[int]) -> Mapping[int, float]:
        """When each of ``wallet_ids`` last moved funds in a run; those that never did are
        missing."""
        found: dict[int, float] = {}
        with self._engine.connect() as connection:
            for chunk in chunks(list(wallet_ids)):
                rows = connection.execute(
                    select(_schedule.c.wallet_id, _schedule.c.last_moved_at).where(
                        _schedule.c.wallet_id.in_(chunk), _schedule.c.last_moved_at.is_not(None)
                    )
                )
                found.update({row.wallet_id: float(row.last_moved_at) for row in rows})
        return found


def _row(session: Session, chain_id: int, record: RiskRecord) -> PoolRiskRow:
    """The pool's stored row, read for update; a new one (at ``ok``) when there is none."""
    row = session.get(PoolRiskRow, (chain_id, record.protocol, record.token), with_for_update=True)
    if row is None:
        row = PoolRiskRow(chain_id=chain_id, protocol=record.protocol, token=record.token)
    return row


def _write(session: Session, row: PoolRiskRow, record: RiskRecord) -> None:
    row.loss_excluded = record.loss_excluded
    row.cleared_at = record.cleared_at
    row.state = record.state
    row.reasons = json.dumps(list(record.reasons))
    row.peak_share_price = record.peak_share_price
    row.history = _history(record.history)
    session.add(row)
