"""The ``module.change_proposed`` event: each wallet on a chain hears of a change its
operator module's admin proposed, while its owner can still refuse it.

The watch reads the module's logs from a stored cursor, one bounded range at a time and
never past the confirmed head, and stores each range's proposals (each with the events it
tells), resolutions and the cursor after it in one transaction (``ModuleChangeOutbox``).
A proposal is stored once, by its log's place (block, index), so a range read again after
a crash or a restart tells nothing twice. Every wallet on the chain hears it, whatever its
status: the module is enabled on every such account, and its owner's opt-out is the
account's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from yieldagent.domain.books.events import MODULE_CHANGE_PROPOSED, EventDraft
from yieldagent.domain.dates import iso
from yieldagent.domain.ports.module_changes import (
    ChangeResolved,
    ModuleChange,
    ModuleChangeSource,
    PendingModuleChanges,
)


@dataclass(frozen=True, slots=True)
class ChainWallet:
    """A wallet on a chain, as a module change reaches it."""

    wallet_id: int
    partner_id: int
    address: str


@dataclass(frozen=True, slots=True)
class ToldChange:
    """A proposal and the events it tells, stored together (or not at all)."""

    change: ModuleChange
    events: tuple[EventDraft, ...]


class ModuleChangeOutbox(PendingModuleChanges, Protocol):
    """Where a chain's module changes, the events they tell and the watch's cursor are kept."""

    def cursor(self, chain_id: int) -> int | None:
        """The first block not read yet (None: never read)."""
        ...

    def wallets_on(self, chain_id: int) -> list[ChainWallet]:
        """Every wallet on ``chain_id``."""
        ...

    def record(
        self,
        chain_id: int,
        proposed: Sequence[ToldChange],
        resolved: Sequence[ChangeResolved],
        next_block: int,
    ) -> int:
        """In one transaction: stores each proposal not stored yet with its events,
        resolves the pending changes ``resolved`` names, and moves the cursor to
        ``next_block``; returns how many proposals were new."""
        ...


def change_proposed(change: ModuleChange, wallet: ChainWallet) -> EventDraft:
    """The event telling ``wallet`` of ``change``."""
    return EventDraft(
        MODULE_CHANGE_PROPOSED,
        wallet.wallet_id,
        wallet.partner_id,
        change.chain_id,
        wallet.address,
        None,
        {
            "module": change.module,
            "change_id": change.change_id,
            "kind": change.kind,
            "subject": change.subject,
            "selector": change.selector,
            "new_value": change.new_value,
            "proposed_at": iso(change.proposed_at),
            "effective_at": iso(change.effective_at),
        },
    )


def told(change: ModuleChange, wallets: Sequence[ChainWallet]) -> ToldChange:
    """``change`` with an event for each of ``wallets``."""
    return ToldChange(change, tuple(change_proposed(change, w) for w in wallets))


async def watch_module_changes(
    chain_id: int,
    source: ModuleChangeSource,
    store: ModuleChangeOutbox,
    start_block: int,
    log_range: int,
    max_ranges: int = 50,
) -> int:
    """Reads ``chain_id``'s module changes from the stored cursor (``start_block`` the
    first time) up to the confirmed head, at most ``max_ranges`` ranges of ``log_range``
    blocks per call; returns how many proposals were new."""
    cursor = store.cursor(chain_id)
    cursor = start_block if cursor is None else cursor
    head = await source.confirmed_head()
    new = 0
    for _ in range(max_ranges):
        if cursor > head:
            break
        to_block = min(head, cursor + log_range - 1)
        logs = await source.change_logs(cursor, to_block)
        wallets = store.wallets_on(chain_id) if logs.proposed else []
        proposed = [told(change, wallets) for change in logs.proposed]
        new += store.record(chain_id, proposed, logs.resolved, to_block + 1)
        cursor = to_block + 1
    return new
