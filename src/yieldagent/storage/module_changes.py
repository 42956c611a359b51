"""The operator module's admin changes (``domain.books.module_changes``): each proposal by
its log's place, with the events it tells, and the watch's cursor per chain.

``record`` writes a range's proposals, their events (``storage.events.record_events``: the
outbox, webhook deliveries included), the resolutions and the cursor in one transaction.
A proposal already stored is skipped with its events; two processes that read the same
range meet at the primary key, and the one that loses reads again and finds the rows, so
every wallet hears each proposal once. The cursor only moves forward.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine, select, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from yieldagent.domain.books.events import EventDraft
from yieldagent.domain.books.module_changes import ChainWallet, ToldChange
from yieldagent.domain.ports.module_changes import ChangeResolved, ModuleChange
from yieldagent.storage.events import record_events, signal_for
from yieldagent.storage.tables import ModuleChangeCursorRow, ModuleChangeRow, WalletRow

PENDING = "pending"
_changes = ModuleChangeRow.__table__  # type: ignore[attr-defined]
_wallets = WalletRow.__table__  # type: ignore[attr-defined]


def _change(row: ModuleChangeRow) -> ModuleChange:
    return ModuleChange(
        chain_id=row.chain_id,
        module=row.module,
        change_id=row.change_id,
        kind=row.kind,
        subject=row.subject,
        selector=row.selector,
        new_value=row.new_value,
        proposed_at=row.proposed_at,
        effective_at=row.effective_at,
        block=row.block,
        log_index=row.log_index,
    )


class ModuleChangeStore:
    """``ModuleChangeOutbox`` and ``PendingModuleChanges`` over the service's database."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def cursor(self, chain_id: int) -> int | None:
        with Session(self._engine) as session:
            row = session.get(ModuleChangeCursorRow, chain_id)
            return None if row is None else row.next_block

    def wallets_on(self, chain_id: int) -> list[ChainWallet]:
        query = (
            select(_wallets.c.id, _wallets.c.partner_id, _wallets.c.address)
            .where(_wallets.c.chain_id == chain_id)
            .order_by(_wallets.c.id)
        )
        with self._engine.connect() as connection:
            return [ChainWallet(*row) for row in connection.execute(query)]

    def pending(self, chain_id: int) -> list[ModuleChange]:
        query = (
            select(ModuleChangeRow)
            .where(_changes.c.chain_id == chain_id, _changes.c.state == PENDING)
            .order_by(_changes.c.block, _changes.c.log_index)
        )
        with Session(self._engine) as session:
            return [_change(row) for row in session.scalars(query)]

    def record(
        self,
        chain_id: int,
        proposed: Sequence[ToldChange],
        resolved: Sequence[ChangeResolved],
        next_block: int,
    ) -> int:
        try:
            new, told = self._record(chain_id, proposed, resolved, next_block)
        except IntegrityError:  # another process stored the same range first
            new, told = self._record(chain_id, proposed, resolved, next_block)
        if told:
            signal_for(self._engine).notify()
        return new

    def _record(
        self,
        chain_id: int,
        proposed: Sequence[ToldChange],
        resolved: Sequence[ChangeResolved],
        next_block: int,
    ) -> tuple[int, int]:
        with Session(self._engine) as session:
            drafts: list[EventDraft] = []
            new = 0
            for entry in proposed:
                change = entry.change
                if session.get(ModuleChangeRow, (chain_id, change.block, change.log_index)):
                    continue
                session.add(
                    ModuleChangeRow(
                        chain_id=chain_id,
                        block=change.block,
                        log_index=change.log_index,
                        module=change.module,
                        change_id=change.change_id,
                        kind=change.kind,
                        subject=change.subject,
                        selector=change.selector,
                        new_value=change.new_value,
                        proposed_at=change.proposed_at,
                        effective_at=change.effective_at,
                        state=PENDING,
                    )
                )
                drafts.extend(entry.events)
                new += 1
            session.flush()
            for resolution in resolved:
                # The module keeps one pending entry per id: the one proposed before.
                session.execute(
                    update(ModuleChangeRow)
                    .where(
                        _changes.c.chain_id == chain_id,
                        _changes.c.change_id == resolution.change_id,
                        _changes.c.state == PENDING,
                        _changes.c.block <= resolution.block,
                    )
                    .values(state=resolution.outcome, resolved_block=resolution.block)
                )
            cursor = session.get(ModuleChangeCursorRow, chain_id, with_for_update=True)
            if cursor is None:
                session.add(ModuleChangeCursorRow(chain_id=chain_id, next_block=next_block))
            elif cursor.next_block < next_block:
                cursor.next_block = next_block
            session.flush()
            told = record_events(session, drafts)
            session.commit()
            return new, told
