"""The per-wallet money call log (``domain.partners.money_calls.MoneyCallLog``).

One row per admitted call, deleted once it is older than the limit's window. ``record``
writes the call and prunes in one transaction, then counts in the next: the new row is
committed before the count, so of two racing calls the one that counts last sees both.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine, delete, insert, select

from yieldagent.domain.partners.money_calls import LoggedCall, MoneyCall
from yieldagent.storage.tables import WalletMoneyCallRow

_calls = WalletMoneyCallRow.__table__  # type: ignore[attr-defined]


class MoneyCallStore:
    """``MoneyCallLog`` over the service's database."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def record(self, call: MoneyCall, since: float) -> tuple[int, Sequence[LoggedCall]]:
        mine = (
            _calls.c.partner_id == call.partner_id,
            _calls.c.chain_id == call.chain_id,
            _calls.c.wallet == call.wallet,
        )
        with self._engine.begin() as connection:
            inserted = connection.execute(
                insert(_calls)
                .values(
                    partner_id=call.partner_id,
                    chain_id=call.chain_id,
                    wallet=call.wallet,
                    at=call.at,
                )
                .returning(_calls.c.id)
            )
            call_id = int(inserted.scalar_one())
            connection.execute(delete(_calls).where(_calls.c.at < since))
        with self._engine.connect() as connection:
            rows = connection.execute(
                select(_calls.c.id, _calls.c.at).where(*mine, _calls.c.at >= since)
            )
            return call_id, [LoggedCall(int(row.id), float(row.at)) for row in rows]

    def forget(self, call_id: int) -> None:
        with self._engine.begin() as connection:
            connection.execute(delete(_calls).where(_calls.c.id == call_id))
