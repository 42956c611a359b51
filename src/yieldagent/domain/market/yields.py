"""A pool's yield in parts a partner can explain, and the history the service records of it.

Every figure is a percent number like the catalog's ``apr`` (5.5 means 5.5 %):

- ``apy_base``: the pool's supply rate net of its own fee, compounded every second
  (``rate_models.apy_from_apr``): what interest alone pays in a year.
- ``apy_rewards``: the reward emissions the service collects for its depositors, a year of
  them valued at the reward token's price over what the pool holds. Simple, not
  compounded: rewards compound only once claimed and swapped into the pool's token.
- ``apy_total = apy_base + apy_rewards``.
- ``apy_net = apy_total × (1 − fee_bps ÷ 10 000)``: what a depositor keeps after the
  service's performance fee, which takes ``fee_bps`` of the yield (interest and swapped
  rewards alike), never of principal, when funds leave (``books.accounting``). Taking the
  same share of every year's yield scales the yearly return by the same factor.

A figure the chain cannot tell is None, and so is every sum it enters: never 0.

The history is a ``YieldPoint`` per pool every ``every_seconds`` of chain time, recorded
as the service reads the market (``YieldRecorder``) and kept ``keep_seconds``; its 7- and
30-day averages (``average``) are plain means of the points in the window, which are
evenly spaced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from statistics import fmean
from typing import Protocol

from yieldagent.domain.catalog import Catalog
from yieldagent.domain.errors import NotFound
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.market.quotes import PoolQuote
from yieldagent.domain.market.rate_models import apy_from_apr

BPS = 10_000
DAY_SECONDS = 86_400
AVERAGE_DAYS = (7, 30)
"""The windows of the averages the catalog shows."""


@dataclass(frozen=True, slots=True)
class YieldParts:
    """A pool's APY broken into its parts (percent numbers; None: unknown)."""

    base: float | None
    rewards: float | None
    fee_bps: int

    @property
    def total(self) -> float | None:
        """``base + rewards``; None when either is unknown."""
        if self.base is None or self.rewards is None:
            return None
        return self.base + self.rewards

    @property
    def net(self) -> float | None:
        """``total × (1 − fee_bps ÷ 10 000)``: what a depositor keeps after the fee."""
        total = self.total
        return None if total is None else total * (1 - self.fee_bps / BPS)


def parts_of(quote: PoolQuote | None, fee_bps: int) -> YieldParts:
    """The parts of ``quote``'s yield now; all unknown without a quote."""
    if quote is None:
        return YieldParts(None, None, fee_bps)
    return YieldParts(apy_from_apr(quote.rate()), quote.reward_apr(), fee_bps)


@dataclass(frozen=True, slots=True)
class YieldPoint:
    """One pool at one moment of chain time, as the history records it."""

    protocol: str
    token: str
    at: int
    """Chain time, unix seconds."""
    supply: int
    """Underlying the pool holds, interest included, in the token's smallest units."""
    borrows: int
    """Underlying lent out of it: in each market, its share of the borrows, pro rata to
    what it holds of the market's supply."""
    apy_base: float
    apy_rewards: float | None

    @property
    def utilization(self) -> float:
        """Borrows over supply, a fraction in [0, 1] (0 for an empty pool)."""
        return min(self.borrows / self.supply, 1.0) if self.supply > 0 else 0.0


def point_of(quote: PoolQuote, at: int) -> YieldPoint:
    """What the history records of ``quote`` at ``at``."""
    return YieldPoint(
        quote.protocol,
        quote.token,
        at,
        quote.total_supply,
        # A vault is one supplier of its markets among others: it lends out its share.
        sum(min(m.borrows, m.supply) * m.held // m.supply for m in quote.markets if m.supply),
        apy_from_apr(quote.rate()),
        quote.reward_apr(),
    )


@dataclass(frozen=True, slots=True)
class YieldAverage:
    """A pool's yield averaged over a window of its recorded history."""

    days: int
    parts: YieldParts
    points: int
    """How many recorded points the average takes."""
    since: int
    """Chain time of the oldest of them: later than the window's start while the history
    is younger than the window."""


def average(points: Sequence[YieldPoint], days: int, now: int, fee_bps: int) -> YieldAverage | None:
    """The mean of the ``points`` recorded in the ``days`` before ``now``; None when
    there are none. Rewards are averaged over the points that know them (None if none)."""
    window = [p for p in points if now - days * DAY_SECONDS < p.at <= now]
    if not window:
        return None
    rewards = [p.apy_rewards for p in window if p.apy_rewards is not None]
    parts = YieldParts(
        fmean(p.apy_base for p in window), fmean(rewards) if rewards else None, fee_bps
    )
    return YieldAverage(days, parts, len(window), min(p.at for p in window))


class Interval(StrEnum):
    """How a history read groups its points."""

    HOUR = "hour"
    DAY = "day"

    @property
    def seconds(self) -> int:
        """The interval's length."""
        return 3600 if self is Interval.HOUR else DAY_SECONDS


def bucketed(points: Sequence[YieldPoint], interval: Interval | None) -> list[YieldPoint]:
    """``points`` (oldest first) grouped into UTC hours or days: each group one point at
    the group's start, with the means of its points' figures (supply and borrows rounded
    down). ``interval`` None: the points as recorded."""
    if interval is None:
        return list(points)
    groups: dict[int, list[YieldPoint]] = {}
    for point in points:
        groups.setdefault(point.at - point.at % interval.seconds, []).append(point)
    merged = []
    for start, group in sorted(groups.items()):
        rewards = [p.apy_rewards for p in group if p.apy_rewards is not None]
        merged.append(
            YieldPoint(
                group[0].protocol,
                group[0].token,
                start,
                sum(p.supply for p in group) // len(group),
                sum(p.borrows for p in group) // len(group),
                fmean(p.apy_base for p in group),
                fmean(rewards) if rewards else None,
            )
        )
    return merged


class YieldHistory(Protocol):
    """Where the pools' recorded yields are kept."""

    def record(self, chain_id: int, points: Sequence[YieldPoint]) -> None:
        """Stores ``points`` of ``chain_id``."""

    def latest_at(self, chain_id: int) -> int | None:
        """Chain time of the newest point of ``chain_id``; None when none is kept."""

    def points(
        self, chain_id: int, token: str, protocol: str, start: int | None, end: int | None
    ) -> list[YieldPoint]:
        """One pool's points from ``start`` to ``end`` (inclusive; None: unbounded),
        oldest first."""

    def prune(self, chain_id: int, before: int) -> int:
        """Deletes the points of ``chain_id`` older than ``before``; returns how many."""


class YieldRecorder:
    """Records every catalog pool's yield as the service reads the market, one point per
    ``every_seconds`` of chain time, and forgets points older than ``keep_seconds``."""

    def __init__(
        self, history: YieldHistory, catalog: Catalog, every_seconds: int, keep_seconds: int
    ) -> None:
        self._history = history
        self._catalog = catalog
        self._every = every_seconds
        self._keep = keep_seconds

    async def record(self, chain_id: int, chain: MarketChain) -> int:
        """Records ``chain``'s pools when a point is due; returns how many it recorded."""
        head = await chain.head()
        last = self._history.latest_at(chain_id)
        if last is not None and head.timestamp - last < self._every:
            return 0
        points = []
        for token in self._catalog.chain(chain_id).tokens:
            names = [p.name for p in token.protocols]
            quotes = await chain.quotes(token.address, names)
            points += [point_of(q, head.timestamp) for q in quotes]
        if points:
            self._history.record(chain_id, points)
        self._history.prune(chain_id, head.timestamp - self._keep)
        return len(points)


@dataclass(frozen=True, slots=True)
class PoolYield:
    """A pool's yield now and its recorded averages."""

    parts: YieldParts
    averages: tuple[YieldAverage, ...]


class PoolYields:
    """The yield figures partners read: a pool's parts now with its averages, and its
    recorded history."""

    def __init__(self, history: YieldHistory, catalog: Catalog, fee_bps: int) -> None:
        self._history = history
        self._catalog = catalog
        self.fee_bps = fee_bps

    def of(
        self, chain_id: int, quote: PoolQuote | None, protocol: str, token: str, now: int
    ) -> PoolYield:
        """``protocol``'s pool of ``token`` as ``quote`` shows it now, with the averages
        over ``AVERAGE_DAYS`` of its history up to ``now`` (chain time)."""
        longest = max(AVERAGE_DAYS) * DAY_SECONDS
        points = self._history.points(chain_id, token, protocol, now - longest, now)
        found = (average(points, days, now, self.fee_bps) for days in AVERAGE_DAYS)
        return PoolYield(parts_of(quote, self.fee_bps), tuple(a for a in found if a is not None))

    def history(
        self,
        chain_id: int,
        protocol: str,
        token: str | None,
        start: int | None,
        end: int | None,
        interval: Interval | None,
    ) -> list[YieldPoint]:
        """The recorded points of ``protocol``'s pool of ``token`` (by default the first
        catalog token it holds on the chain) from ``start`` to ``end``, grouped by
        ``interval``. NotFound for a chain, token or protocol the catalog lacks."""
        chain = self._catalog.chain(chain_id)
        if token is not None:
            info = self._catalog.token(chain_id, token)
        else:
            holding = [t for t in chain.tokens if t.protocol(protocol) is not None]
            info = holding[0] if holding else chain.tokens[0]
        if info.protocol(protocol) is None:
            raise NotFound(f"Protocol {protocol} is not in the catalog for {info.symbol}")
        points = self._history.points(chain_id, info.address, protocol, start, end)
        return bucketed(points, interval)
