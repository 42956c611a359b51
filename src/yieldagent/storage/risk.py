"""The risk guards' storage: each pool's record (``pool_risks``), what the service holds in
each pool (the chain totals the books keep), and when wallets last moved funds (the
schedule)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session
from sqlmodel import select as orm_select

from yieldagent.domain.ports.storage import RiskRecord
from yieldagent.storage.aggregates import read_totals
from yieldagent.storage.db import chunks
from yieldagent.storage.tables import PoolRiskRow, WalletScheduleRow

_schedule = WalletScheduleRow.__table__  # type: ignore[attr-defined]


def _record(row: PoolRiskRow) -> RiskRecord:
    return RiskRecord(
        row.protocol,
        row.token,
        row.loss_excluded,
        row.cleared_at,
        row.state,
        tuple(json.loads(row.reasons)),
        row.peak_share_price,
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
        """Stores ``records``, each replacing its pool's, in one transaction. Two processes
        may store a pool's first record at once (a listing and a batch): the one that loses
        the insert stores its records again, now as updates."""
        try:
            self._save(chain_id, records)
        except IntegrityError:
            self._save(chain_id, records)

    def _save(self, chain_id: int, records: Sequence[RiskRecord]) -> None:
        with Session(self._engine) as session:
            for record in records:
                row = session.get(PoolRiskRow, (chain_id, record.protocol, record.token))
                if row is None:
                    row = PoolRiskRow(
                        chain_id=chain_id, protocol=record.protocol, token=record.token
                    )
                row.loss_excluded = record.loss_excluded
                row.cleared_at = record.cleared_at
                row.state = record.state
                row.reasons = json.dumps(list(record.reasons))
                row.peak_share_price = record.peak_share_price
                session.add(row)
            session.commit()

    def exposure(self, chain_id: int, token: str) -> Mapping[str, int]:
        """What the chain's wallets hold of ``token`` in each protocol, as the books' totals
        have it (their allocations as last valued)."""
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
