"""The operator module's admin changes, as the chain tells them: what is pending on a chain
and when it can take effect.

A change the module's admin proposes (``ChangeProposed``) waits the module's delay (48
hours at least) before the admin can apply it; during that time an account's owner may
refuse its subject (``optOut``), which works only while it is pending. So what is pending,
and from when it can apply, is what partners must be shown. ``ModuleChangeSource`` reads
the module's logs (web3 only: the simulated chain has no module and no admin);
``PendingModuleChanges`` answers what is pending on a chain now (storage, for the
``/config`` read).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

RULE = "rule"
TOKEN = "token"  # noqa: S105 (a kind of change, not a secret)
OPERATOR = "operator"
CHANGE_KINDS = (RULE, TOKEN, OPERATOR)
"""``OperatorModule.ChangeKind`` by name: a target's function listed under a rule (or
unlisted), a token's price feed set (or removed), another operator key."""

APPLIED = "applied"
CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class ModuleChange:
    """One proposed change of a chain's operator module."""

    chain_id: int
    module: str
    change_id: str
    """The module's id of the change (``keccak256(abi.encode(change))``, 0x hex): what
    ``optOut`` takes."""
    kind: str
    """One of ``CHANGE_KINDS``."""
    subject: str
    """The target (rule), the token (token) or the new operator key (operator): what an
    account refuses when it opts out."""
    selector: str
    """A rule's function selector (0x hex, 4 bytes); empty for the other kinds."""
    new_value: str
    """What the subject becomes: a rule's kind (``supply``, ``withdraw``, ``claim``,
    ``swap``, or ``unlisted``), a token's new feed address (``unlisted``: no feed), or the
    new operator's address."""
    proposed_at: datetime
    """When it was proposed (its block's time, UTC)."""
    effective_at: datetime
    """From when the admin can apply it (``eta``)."""
    block: int
    log_index: int


@dataclass(frozen=True, slots=True)
class ChangeResolved:
    """A pending change applied or cancelled (``ChangeApplied``, ``ChangeCancelled``)."""

    change_id: str
    outcome: str
    """``applied`` or ``cancelled``."""
    block: int
    log_index: int


@dataclass(frozen=True, slots=True)
class ModuleChangeLogs:
    """What the module logged in a range of blocks, in log order."""

    proposed: Sequence[ModuleChange]
    resolved: Sequence[ChangeResolved]


class ModuleChangeSource(Protocol):
    """A chain's operator module's change logs."""

    async def confirmed_head(self) -> int:
        """The newest block deep enough to be final (the chain's confirmations)."""
        ...

    async def change_logs(self, from_block: int, to_block: int) -> ModuleChangeLogs:
        """The module's proposals and resolutions in ``[from_block, to_block]``."""
        ...


class PendingModuleChanges(Protocol):
    """What is pending on each chain's operator module, as last read from the chain."""

    def pending(self, chain_id: int) -> list[ModuleChange]:
        """The changes proposed and neither applied nor cancelled, oldest first (none on
        a chain that has no module, such as a simulated one)."""
        ...
