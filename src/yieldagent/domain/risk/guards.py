"""The guards: what each says of a pool, and the pool's verdict.

Each guard is a pure function of a pool's reading (``PoolReading``: the present, its
history, its collateral feeds), the service's position in it and the settings, named in
``GUARDS``. A guard that trips gives a ``Trip``: its rule, the state it asks for
(``no_new_funds`` or ``exit``) and why. A pool's verdict is the strictest state its trips
ask for, with every reason. The share and size caps are amounts rather than states; they
live in ``limits``, and a pool the service already holds its share of reads
``no_new_funds`` here too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from yieldagent.domain.market.history import Snapshot
from yieldagent.domain.market.readings import PoolReading, RiskState
from yieldagent.domain.risk.settings import RiskSettings, exact


class Rule(StrEnum):
    """The guards' names, as metrics, the CLI and partners see them."""

    POOL_SHARE = "pool_share"
    POOL_SIZE = "pool_size"
    TVL_DROP = "tvl_drop"
    PAUSED = "paused"
    UTILISATION = "utilisation"
    LIQUIDITY = "liquidity"
    LOSS = "loss"
    DEPEG = "depeg"
    MOVE_LOSS = "move_loss"
    MIN_WAIT = "min_wait"


@dataclass(frozen=True, slots=True)
class Exposure:
    """What the service holds of a pool, and whether an operator still excludes it after
    a loss."""

    ours: int = 0
    """Every wallet's position in the pool together."""
    loss_excluded: bool = False
    cleared_at: int | None = None
    """When an operator last cleared a loss exclusion: the loss guard looks at the share
    price only from then on."""
    peak_share_price: int = 0
    """The highest share price the service has seen of the pool since the last clearing
    (0: none), for chains whose readings carry no history."""


@dataclass(frozen=True, slots=True)
class Trip:
    """A guard that tripped: its rule, the state it asks for, and why."""

    rule: Rule
    state: RiskState
    reason: str
    holds_funds: bool = False
    """Whether the pool can pay nothing out now (its withdrawals paused): no plan may
    withdraw from it, whatever the state asks."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """A pool's state under every guard, and the trips that put it there."""

    state: RiskState = RiskState.OK
    trips: tuple[Trip, ...] = field(default=())

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why, one sentence per trip."""
        return tuple(t.reason for t in self.trips)

    @property
    def rules(self) -> tuple[Rule, ...]:
        """The rules that tripped."""
        return tuple(t.rule for t in self.trips)

    @property
    def takes_funds(self) -> bool:
        """Whether new funds may go in."""
        return self.state == RiskState.OK

    @property
    def exit(self) -> bool:
        """Whether every wallet must leave."""
        return self.state == RiskState.EXIT

    @property
    def holds_funds(self) -> bool:
        """Whether the pool pays nothing out now: a withdrawal from it would fail."""
        return any(t.holds_funds for t in self.trips)


OK = Verdict()

Guard = Callable[[PoolReading, Exposure, RiskSettings], "Trip | None"]


def _window(reading: PoolReading, settings: RiskSettings) -> list[Snapshot]:
    """The history within the guards' window, and the present."""
    since = reading.now.at - settings.window_seconds
    return [s for s in reading.history if s.at >= since] + [reading.now]


def pool_share(reading: PoolReading, exposure: Exposure, settings: RiskSettings) -> Trip | None:
    """The service already holds its share of the pool: nothing more goes in (what may go
    in otherwise is ``limits.wallet_cap``'s)."""
    share = exact(settings.max_pool_share)
    tvl = reading.now.tvl
    if exposure.ours > 0 and exposure.ours * share.denominator >= tvl * share.numerator:
        return Trip(
            Rule.POOL_SHARE,
            RiskState.NO_NEW_FUNDS,
            f"the service holds {settings.max_pool_share:.0%} or more of the pool",
        )
    return None


def tvl_drop(reading: PoolReading, exposure: Exposure, settings: RiskSettings) -> Trip | None:
    """The TVL fell by more than ``max_tvl_drop`` from its peak within the window."""
    peak = max(s.tvl for s in _window(reading, settings))
    drop = exact(settings.max_tvl_drop)
    kept = 1 - drop  # the share of the peak the TVL must keep
    if peak > 0 and reading.now.tvl * kept.denominator < peak * kept.numerator:
        hours = settings.window_seconds // 3600
        return Trip(
            Rule.TVL_DROP,
            RiskState.EXIT,
            f"TVL fell more than {settings.max_tvl_drop:.0%} within {hours} hours",
        )
    return None


def paused(reading: PoolReading, exposure: Exposure, settings: RiskSettings) -> Trip | None:
    """Withdrawals paused (alone or with supply): no new funds, since nothing can leave;
    once they reopen, exit (a pause within the window still counts). Supply paused or
    reserve frozen: exit."""
    now = reading.now
    if now.withdraw_paused:  # nothing can leave: no new funds until withdrawals reopen
        return Trip(Rule.PAUSED, RiskState.NO_NEW_FUNDS, "withdrawals are paused", holds_funds=True)
    if now.frozen:
        return Trip(Rule.PAUSED, RiskState.EXIT, "the reserve is frozen")
    if now.supply_paused:
        return Trip(Rule.PAUSED, RiskState.EXIT, "supply is paused")
    if any(s.paused for s in _window(reading, settings)):
        return Trip(Rule.PAUSED, RiskState.EXIT, "the pool was paused within the window")
    return None


def utilisation(reading: PoolReading, exposure: Exposure, settings: RiskSettings) -> Trip | None:
    """Utilisation at or above ``max_utilisation`` in every snapshot for longer than
    ``utilisation_seconds``."""
    limit = exact(settings.max_utilisation)
    high_since = None
    for snapshot in reversed(_window(reading, settings)):
        if not snapshot.utilisation_at_least(limit.numerator, limit.denominator):
            break
        high_since = snapshot.at
    if high_since is not None and reading.now.at - high_since >= settings.utilisation_seconds:
        return Trip(
            Rule.UTILISATION,
            RiskState.NO_NEW_FUNDS,
            f"utilisation has stayed at {settings.max_utilisation:.0%} or above",
        )
    return None


def liquidity(reading: PoolReading, exposure: Exposure, settings: RiskSettings) -> Trip | None:
    """Free liquidity below ``min_free_liquidity`` of the service's position: exit, taking
    what the pool can return as liquidity frees up."""
    floor = exact(settings.min_free_liquidity)
    if exposure.ours > 0 and reading.cash * floor.denominator < exposure.ours * floor.numerator:
        return Trip(
            Rule.LIQUIDITY,
            RiskState.EXIT,
            f"free liquidity is below {settings.min_free_liquidity:.0%} of our position",
        )
    return None


def loss(reading: PoolReading, exposure: Exposure, settings: RiskSettings) -> Trip | None:
    """The pool's share price fell (bad debt was realised), or an earlier loss is not yet
    cleared: exit."""
    if exposure.loss_excluded:
        return Trip(Rule.LOSS, RiskState.EXIT, "excluded after a loss until an operator clears it")
    since = exposure.cleared_at
    prices = [s.share_price for s in _window(reading, settings) if since is None or s.at >= since]
    now = reading.now.share_price
    if now < max(prices, default=0) or 0 < now < exposure.peak_share_price:
        return Trip(Rule.LOSS, RiskState.EXIT, "the pool's share price fell: a realised loss")
    return None


def depeg(reading: PoolReading, exposure: Exposure, settings: RiskSettings) -> Trip | None:
    """A collateral's feed is ``max_depeg`` or more below its peg: exit. A feed that cannot
    vouch for its price (unreadable, or older than ``max_feed_age_seconds``): no new
    funds, rather than exiting every wallet on a node's hiccup. While the chain's sequencer
    is down, and for ``sequencer_grace_seconds`` after it is back, every feed counts as
    stale: its price may be old, so no move is made on it."""
    kept = 1 - exact(settings.max_depeg)
    now, max_age = reading.now.at, settings.max_feed_age_seconds
    if reading.collateral and reading.sequencer is not None:
        why = reading.sequencer.distrust(now, settings.sequencer_grace_seconds)
        if why is not None:
            tokens = ", ".join(sorted(feed.token for feed in reading.collateral))
            return Trip(
                Rule.DEPEG,
                RiskState.NO_NEW_FUNDS,
                f"the price feed of collateral {tokens} is stale: {why}",
            )
    fallen = sorted(
        feed.token
        for feed in reading.collateral
        if not feed.stale(now, max_age)
        and feed.price * kept.denominator <= feed.peg * kept.numerator
    )
    if fallen:
        return Trip(
            Rule.DEPEG,
            RiskState.EXIT,
            f"collateral {', '.join(fallen)} is {settings.max_depeg:.0%} or more below its peg",
        )
    stale = sorted(feed.token for feed in reading.collateral if feed.stale(now, max_age))
    if stale:
        return Trip(
            Rule.DEPEG,
            RiskState.NO_NEW_FUNDS,
            f"the price feed of collateral {', '.join(stale)} is stale or cannot be read",
        )
    return None


GUARDS: tuple[tuple[Rule, Guard], ...] = (
    (Rule.PAUSED, paused),
    (Rule.LOSS, loss),
    (Rule.TVL_DROP, tvl_drop),
    (Rule.DEPEG, depeg),
    (Rule.LIQUIDITY, liquidity),
    (Rule.UTILISATION, utilisation),
    (Rule.POOL_SHARE, pool_share),
)
"""Every guard that judges a pool as a whole, in the order its reasons are listed."""

_RANK = {RiskState.OK: 0, RiskState.NO_NEW_FUNDS: 1, RiskState.EXIT: 2}


def assess(
    reading: PoolReading, exposure: Exposure, settings: RiskSettings, guards: Sequence[Rule] = ()
) -> Verdict:
    """The pool's verdict under every guard (or only ``guards``, when given)."""
    trips = tuple(
        trip
        for rule, guard in GUARDS
        if not guards or rule in guards
        if (trip := guard(reading, exposure, settings)) is not None
    )
    if not trips:
        return OK
    state = max((t.state for t in trips), key=_RANK.__getitem__)
    return Verdict(state, trips)
