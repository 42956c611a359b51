"""What the service tells partners of its rules (``GET /api/v1/config``): the limits every
wallet is held to, the constraints an agent accepts, the chains served, and the admin
changes pending on each chain's operator module.

Every figure is a setting or a rule the service applies, never a number of its own for
show: a rule it does not have (a size threshold in US dollars for the optimizer) is absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from yieldagent.domain.catalog import Catalog, ChainInfo
from yieldagent.domain.constraints import DEFAULT_MIN_FRACTION, OPTIONAL_PARAMS, PARAMS
from yieldagent.domain.dates import iso
from yieldagent.domain.ports.module_changes import (
    OPERATOR,
    RULE,
    ModuleChange,
    PendingModuleChanges,
)


@dataclass(frozen=True, slots=True)
class Rules:
    """The limits the service holds every wallet to, from its settings."""

    min_withdraw_usd: Decimal
    """The smallest partial withdrawal, in USD."""
    max_pool_share: float
    """The most of one pool's supply all wallets together may hold (a ratio)."""
    wallet_money_calls_per_minute: int
    """Money calls a partner may make on one wallet in a minute; 0: unlimited."""


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    """What ``GET /config`` answers."""

    rules: Rules
    constraint_kinds: Mapping[str, tuple[str, ...]]
    """Each constraint kind's required parameters."""
    optional_params: Mapping[str, tuple[str, ...]]
    """The parameters a kind takes with a default."""
    default_min_fraction: float
    chains: tuple[ChainInfo, ...]
    pending: tuple[ModuleChange, ...]


def describe(change: ModuleChange) -> str:
    """``change`` in one sentence, with when it can apply and how an owner refuses it."""
    if change.kind == RULE:
        what = f"target {change.subject} function {change.selector} becomes {change.new_value}"
    elif change.kind == OPERATOR:
        what = f"the operator key becomes {change.new_value}"
    else:
        what = f"token {change.subject} price feed becomes {change.new_value}"
    return (
        f"Chain {change.chain_id}, module {change.module}: {what}; the admin can apply it "
        f"from {iso(change.effective_at)}; until then an account's owner may refuse it with "
        f"optOut({change.change_id})"
    )


class ConfigReader:
    """Reads the service's configuration: its rules and catalog, and what is pending on
    each chain's module as last read from the chain."""

    def __init__(self, rules: Rules, catalog: Catalog, changes: PendingModuleChanges) -> None:
        self._rules = rules
        self._catalog = catalog
        self._changes = changes

    def read(self) -> ServiceConfig:
        """The configuration now (a query per chain for its pending changes)."""
        chain_ids = self._catalog.chain_ids()
        pending = [c for chain_id in chain_ids for c in self._changes.pending(chain_id)]
        return ServiceConfig(
            rules=self._rules,
            constraint_kinds=dict(PARAMS),
            optional_params=dict(OPTIONAL_PARAMS),
            default_min_fraction=DEFAULT_MIN_FRACTION,
            chains=tuple(self._catalog.chain(chain_id) for chain_id in chain_ids),
            pending=tuple(pending),
        )
