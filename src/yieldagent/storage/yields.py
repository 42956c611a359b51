"""The pools' recorded yields (``pool_yields``): what ``domain.market.yields`` records as
the service reads the market, read back by pool and time, pruned by age."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine, delete, func, insert, select

from yieldagent.domain.market.yields import YieldPoint
from yieldagent.storage.tables import PoolYieldRow

_yields = PoolYieldRow.__table__  # type: ignore[attr-defined]


class YieldStore:
    """``domain.market.yields.YieldHistory`` over one database."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def record(self, chain_id: int, points: Sequence[YieldPoint]) -> None:
        if not points:
            return
        rows = [
            {
                "chain_id": chain_id,
                "protocol": p.protocol,
                "token": p.token,
                "at": p.at,
                "supply": p.supply,
                "borrows": p.borrows,
                "apy_base": p.apy_base,
                "apy_rewards": p.apy_rewards,
            }
            for p in points
        ]
        with self._engine.begin() as connection:
            connection.execute(insert(_yields), rows)

    def latest_at(self, chain_id: int) -> int | None:
        with self._engine.connect() as connection:
            found = connection.execute(
                select(func.max(_yields.c.at)).where(_yields.c.chain_id == chain_id)
            ).scalar()
        return None if found is None else int(found)

    def points(
        self, chain_id: int, token: str, protocol: str, start: int | None, end: int | None
    ) -> list[YieldPoint]:
        query = select(
            _yields.c.at,
            _yields.c.supply,
            _yields.c.borrows,
            _yields.c.apy_base,
            _yields.c.apy_rewards,
        ).where(
            _yields.c.chain_id == chain_id,
            _yields.c.protocol == protocol,
            _yields.c.token == token,
        )
        if start is not None:
            query = query.where(_yields.c.at >= start)
        if end is not None:
            query = query.where(_yields.c.at <= end)
        with self._engine.connect() as connection:
            rows = connection.execute(query.order_by(_yields.c.at, _yields.c.id)).all()
        return [
            YieldPoint(protocol, token, int(at), int(supply), int(borrows), base, rewards)
            for at, supply, borrows, base, rewards in rows
        ]

    def prune(self, chain_id: int, before: int) -> int:
        with self._engine.begin() as connection:
            result = connection.execute(
                delete(_yields).where(_yields.c.chain_id == chain_id, _yields.c.at < before)
            )
        return int(result.rowcount)
