"""Where each chain's fleet-wide log watches keep their cursor (``WatchCursors``): the first
block not read yet, per chain and watch. A cursor only moves forward."""

from __future__ import annotations

from sqlalchemy import Engine
from sqlmodel import Session

from yieldagent.storage.tables import ChainWatchCursorRow


class WatchCursorStore:
    """``domain.ports.storage.WatchCursors`` over the service's database."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def cursor(self, chain_id: int, watch: str) -> int | None:
        with Session(self._engine) as session:
            row = session.get(ChainWatchCursorRow, (chain_id, watch))
            return None if row is None else row.next_block

    def advance(self, chain_id: int, watch: str, next_block: int) -> None:
        with Session(self._engine) as session:
            row = session.get(ChainWatchCursorRow, (chain_id, watch), with_for_update=True)
            if row is None:
                session.add(
                    ChainWatchCursorRow(chain_id=chain_id, watch=watch, next_block=next_block)
                )
            elif row.next_block < next_block:
                row.next_block = next_block
            session.commit()
