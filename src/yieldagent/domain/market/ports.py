"""The market's ports: what a chain's markets quote, what it reads of its pools for the
guards, and where each pool's standing under the guards is kept.

Every chain adapter answers ``MarketChain``: the chain port (``domain.ports.chain``) and
the market's reads together, so the books, the optimizer and the guards take one object.
``PoolReads`` is optional: a chain without it is guarded on what its quotes show.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from yieldagent.domain.market.history import Snapshot
from yieldagent.domain.market.quotes import PoolQuote
from yieldagent.domain.market.readings import PoolReading
from yieldagent.domain.ports.chain import ChainPort


class MarketReads(Protocol):
    """A chain's lending markets, as the optimizer prices them."""

    async def quotes(self, token: str, protocols: Sequence[str]) -> list[PoolQuote]:
        """Each protocol's pool as it is now, able to quote its supply APR after adding or
        removing an amount: our own rate impact."""


class MarketChain(ChainPort, MarketReads, Protocol):
    """One EVM chain with its markets: what every chain adapter is."""


@runtime_checkable
class PoolReads(Protocol):
    """A chain that reads its pools' guard inputs: their switches (paused, frozen), share
    prices, collateral feeds and recent history. A chain without it is guarded on what its
    quotes show (supply, borrows, cash)."""

    async def pool_readings(self, token: str, protocols: Sequence[str]) -> list[PoolReading]:
        """Each of ``protocols``' pool of ``token``, for its guards; pools it does not know
        are left out."""


@dataclass(frozen=True, slots=True)
class RiskRecord:
    """What is kept of one pool's guards: whether a loss excludes it (until an operator
    clears it, and when that was), the state and reasons it last showed, and its recent
    snapshots."""

    protocol: str
    token: str
    loss_excluded: bool = False
    cleared_at: int | None = None
    """Chain time (unix seconds) of the operator's last clearing."""
    state: str = "ok"
    reasons: tuple[str, ...] = ()
    peak_share_price: int = 0
    """The highest share price seen since the last clearing (0: none yet)."""
    history: tuple[Snapshot, ...] = ()
    """The pool's recent snapshots, oldest first, as the survey recorded them for a chain
    whose readings carry no history (``domain.market.history.remembered``)."""


class RiskRepository(Protocol):
    """Where the guards' state of each pool is kept, and what the service holds there."""

    def records(self, chain_id: int) -> list[RiskRecord]:
        """Every pool's record on ``chain_id``."""

    def save(self, chain_id: int, records: Sequence[RiskRecord]) -> None:
        """Stores ``records`` (each replacing its pool's)."""

    def exposure(self, chain_id: int, token: str) -> Mapping[str, int]:
        """What every wallet together holds of ``token`` in each protocol, by protocol."""

    def last_moves(self, wallet_ids: Sequence[int]) -> Mapping[int, float]:
        """When each of ``wallet_ids`` last moved funds in a run (wall-clock unix
        seconds); wallets that never did are missing."""
