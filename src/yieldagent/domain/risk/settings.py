"""The guards' thresholds, each with its default (``YIELDAGENT_RISK_*`` in ``config.py``).

Ratios are read as written (0.15 is exactly 3/20), so that every comparison with an
amount is exact integer arithmetic.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction


@functools.lru_cache(maxsize=64)
def exact(ratio: float) -> Fraction:
    """A ratio as written: 0.05 is exactly 1/20, not the nearest binary float (remembered:
    the planner asks for the same few ratios for every wallet)."""
    return Fraction(str(ratio))


@dataclass(frozen=True, slots=True)
class RiskSettings:
    """Every guard's threshold. The defaults follow the peers (ZyFAI, Yearn's allocator and
    monitoring, MetaMorpho); the agent's docs page names each source."""

    max_pool_share: float = 0.15
    """The most of a pool's supply the service (all wallets together) may hold after its own
    change (ZyFAI)."""
    min_pool_multiple: int = 10
    """A pool's TVL is at least this many times a wallet's position in it (ZyFAI)."""
    max_tvl_drop: float = 0.5
    """Exit a pool whose TVL fell by more than this share within ``window_seconds``
    (ZyFAI)."""
    window_seconds: int = 86_400
    """How far back the TVL drop and a past pause look; also how long a pool's history is
    kept."""
    max_utilisation: float = 0.95
    """No new funds while utilisation stays at or above this (Yearn's monitoring) ..."""
    utilisation_seconds: int = 3_600
    """... for longer than this."""
    min_free_liquidity: float = 0.05
    """Free liquidity under this share of the service's position: no new funds, and exit
    (ZyFAI)."""
    max_depeg: float = 0.05
    """Exit a pool lending against a collateral whose feed is this share below its peg."""
    max_feed_age_seconds: int = 90_000
    """A collateral feed whose last answer is older than this cannot vouch for its peg: no
    new funds (a day's heartbeat, as Chainlink's stablecoin feeds have, and an hour)."""
    sequencer_grace_seconds: int = 3_600
    """After a rollup's sequencer comes back up, its price feeds count as stale for this
    long: they may still show prices from before the outage (Chainlink's advice)."""
    max_move_loss_bps: int = 1
    """A move that would lose more than this many basis points of its amount is refused
    (Yearn's debt allocator)."""
    min_wait_seconds: int = 21_600
    """No yield-only rebalance within this time of the wallet's last move (Yearn's debt
    allocator); exits never wait."""
