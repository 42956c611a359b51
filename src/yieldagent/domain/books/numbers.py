"""A wallet's numbers over time, from its books: its value series (performance), its APR
by token, and its earnings.

**The books' yield.** At any moment ``t`` the books show a wallet's yield so far:

    Y(t) = Σ yield_amount of the withdrawals up to t + max(value(t) − principal(t), 0)

the yield realised by withdrawals plus the yield accrued in its value above principal. The
fee works the same way: ``F(t) = Σ fee_amount of the withdrawals up to t +
accrued(t) × fee_bps ÷ 10 000`` (rounded down), the fee charged plus the fee due.

``value(t)`` is the value after the flow of the last performance point at or before ``t``
(the books record one at every deposit and withdrawal, and periodically between), then the
wallet's last valuation; ``principal(t)`` follows its deposits and withdrawals up to
``t``, as the ledger keeps it. A deposit moves value and principal alike, and a
withdrawal moves realised yield up by what it takes from accrued: neither changes ``Y``.
Yield accrues and reward swaps add value, which ``Y`` counts.

**Earnings** over a range are ``Y`` and ``F`` at its end less at its start, cut into UTC
days (or hours): the items telescope, so any range's items sum to the change of ``Y``
over it to the unit. Once a wallet is deactivated its value and principal are 0, and its
totals are the sums of its withdrawals' ``yield_amount`` and ``fee_amount``.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum

from yieldagent.domain.books.accounting import BPS
from yieldagent.domain.books.apr import PerformancePoint
from yieldagent.domain.books.history import Reports
from yieldagent.domain.books.ports import WalletRepository
from yieldagent.domain.books.valuation import value
from yieldagent.domain.books.wallets import (
    DepositRecord,
    RewardRecord,
    Wallet,
    WithdrawalRecord,
    require,
)
from yieldagent.domain.catalog import Catalog, TokenInfo
from yieldagent.domain.errors import InvalidInput
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.market.yields import YieldParts, parts_of
from yieldagent.domain.pagination import MAX_LIMIT, PageRequest

MAX_EARNING_ITEMS = 10_000
"""The most items one earnings read answers (27 years of days, 416 days of hours)."""


@dataclass(frozen=True, slots=True)
class YieldMark:
    """What the books show at one performance point: the value after its flow, the
    principal, and the yield and fee withdrawals realised, all up to that moment."""

    at: datetime
    value: int
    principal: int
    realised_yield: int
    realised_fee: int

    def yield_(self) -> int:
        """``Y``: the realised yield plus the accrued (value above principal)."""
        return self.realised_yield + max(self.value - self.principal, 0)

    def fee(self, fee_bps: int) -> int:
        """``F``: the fee charged plus the fee due on the accrued yield."""
        return self.realised_fee + max(self.value - self.principal, 0) * fee_bps // BPS


def marks(
    points: Sequence[PerformancePoint],
    deposits: Sequence[DepositRecord],
    withdrawals: Sequence[WithdrawalRecord],
) -> list[YieldMark]:
    """The books at each of ``points`` (oldest first): each point's value after its flow,
    with the deposits and withdrawals dated up to it."""
    flows: list[tuple[datetime, int, DepositRecord | WithdrawalRecord]] = sorted(
        [(d.date, 0, d) for d in deposits] + [(w.date, 1, w) for w in withdrawals],
        key=lambda f: (f[0], f[1]),
    )
    found: list[YieldMark] = []
    principal = realised_yield = realised_fee = 0
    taken = 0
    for point in sorted(points, key=lambda p: p.at):
        while taken < len(flows) and flows[taken][0] <= point.at:
            record = flows[taken][2]
            if isinstance(record, DepositRecord):
                principal += record.amount
            else:
                principal = max(principal - record.principal, 0)
                realised_yield += record.yield_
                realised_fee += record.fee
            taken += 1
        found.append(YieldMark(point.at, point.after, principal, realised_yield, realised_fee))
    return found


def mark_at(found: Sequence[YieldMark], at: datetime) -> YieldMark | None:
    """The last of ``found`` at or before ``at``; None before the first."""
    index = bisect_right([m.at for m in found], at)
    return found[index - 1] if index else None


class EarningsInterval(StrEnum):
    """How an earnings read cuts its range."""

    DAY = "day"
    HOUR = "hour"

    @property
    def length(self) -> timedelta:
        """The interval's length."""
        return timedelta(days=1) if self is EarningsInterval.DAY else timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class Earning:
    """Yield and fee over one day (or hour), in the token's smallest unit."""

    date: datetime
    yield_amount: int
    fee_amount: int


@dataclass(frozen=True, slots=True)
class Earnings:
    """A range's earnings and their sums."""

    items: tuple[Earning, ...]

    @property
    def total_yield(self) -> int:
        """Sum of the items' yield."""
        return sum(e.yield_amount for e in self.items)

    @property
    def total_fee(self) -> int:
        """Sum of the items' fee."""
        return sum(e.fee_amount for e in self.items)


def _floor(moment: datetime, interval: EarningsInterval) -> datetime:
    if interval is EarningsInterval.DAY:
        return moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return moment.replace(minute=0, second=0, microsecond=0)


def earnings(
    found: Sequence[YieldMark],
    start: datetime,
    end: datetime,
    interval: EarningsInterval,
    fee_bps: int,
) -> Earnings:
    """The changes of ``Y`` and ``F`` over each UTC day (or hour) of ``[start, end)``,
    the first and last cut at ``start`` and ``end``."""

    def y(at: datetime) -> tuple[int, int]:
        mark = mark_at(found, at)
        return (0, 0) if mark is None else (mark.yield_(), mark.fee(fee_bps))

    items = []
    cursor = _floor(start, interval)
    before = y(start)
    while cursor < end:
        upto = min(cursor + interval.length, end)
        after = y(upto)
        items.append(Earning(cursor, after[0] - before[0], after[1] - before[1]))
        before, cursor = after, cursor + interval.length
    return Earnings(tuple(items))


class Period(StrEnum):
    """The window of an APR by token."""

    ALL = "all"
    DAY = "day"


@dataclass(frozen=True, slots=True)
class Allocation:
    """What a wallet holds in one protocol, and what the pool pays now."""

    amount: int
    apr: float
    """The pool's supply APR in percent (the catalog's ``apr``)."""
    parts: YieldParts


@dataclass(frozen=True, slots=True)
class RewardHolding:
    """One reward token of a wallet: claimable now and claimed so far (smallest units of
    the reward token), and the claims' value in US dollars at their prices."""

    symbol: str
    decimals: int
    price_usd: float
    unlocked: int
    claimed: int
    claimed_usd: float


@dataclass(frozen=True, slots=True)
class PerformanceView:
    """A wallet's value series (the books' points, then now) and what it holds now."""

    token: TokenInfo
    points: tuple[PerformancePoint, ...]
    portfolio: Mapping[str, Allocation]
    rewards: tuple[RewardHolding, ...]


@dataclass(frozen=True, slots=True)
class TokenApr:
    """A wallet's holding of one token and its time-weighted APR over a period."""

    token: TokenInfo
    amount: int
    apr: float


class WalletNumbers:
    """The wallet reads over time: performance, APR by token, earnings."""

    def __init__(
        self,
        wallets: WalletRepository,
        chains: Mapping[int, MarketChain],
        catalog: Catalog,
        reports: Reports,
        fee_bps: int,
    ) -> None:
        self._wallets = wallets
        self._chains = chains
        self._catalog = catalog
        self._reports = reports
        self._fee_bps = fee_bps

    def _owned(self, partner_id: int, chain_id: int, address: str) -> Wallet:
        self._catalog.chain(chain_id)
        return require(self._wallets.get(chain_id, address), chain_id, address).owned_by(partner_id)

    def marks(self, wallet: Wallet) -> list[YieldMark]:
        """The books' marks of ``wallet``: at each performance point, then at its last
        valuation unless that is older (a claim's swap, say, values the wallet anew at
        the moment of the point before it)."""
        points = self._wallets.points(wallet.id)
        latest = wallet.idle + sum(wallet.positions.values())
        if not points or wallet.valued_at >= points[-1].at:
            points = [*points, PerformancePoint(wallet.valued_at, latest)]
        deposits = self._wallets.deposits(wallet.id)
        return marks(points, deposits, self._wallets.withdrawals(wallet.id))

    def earnings(
        self,
        partner_id: int,
        chain_id: int,
        address: str,
        start: datetime | None,
        end: datetime | None,
        interval: EarningsInterval,
    ) -> Earnings:
        """The wallet's earnings over ``[start, end)`` (by default from its first point to
        just after its last), by ``interval``."""
        wallet = self._owned(partner_id, chain_id, address)
        found = self.marks(wallet)
        start = start or found[0].at
        end = end or found[-1].at + timedelta(microseconds=1)
        if end <= start:
            raise InvalidInput.field(("to",), "to must be after from")
        count = (end - _floor(start, interval)) / interval.length
        if count > MAX_EARNING_ITEMS:
            raise InvalidInput.field(
                ("from",), f"The range holds more than {MAX_EARNING_ITEMS} items of the interval"
            )
        return earnings(found, start, end, interval, self._fee_bps)

    async def performance(
        self, partner_id: int, chain_id: int, address: str, start: datetime | None
    ) -> PerformanceView:
        """The wallet's points from ``start`` (by default all), then its value now read on
        the chain, with how that splits by protocol and its reward tokens."""
        wallet = self._owned(partner_id, chain_id, address)
        token = self._catalog.token(chain_id, wallet.token)
        chain = self._chains[chain_id]
        valuation = await value(chain, wallet)
        points = [p for p in self._wallets.points(wallet.id) if start is None or p.at >= start]
        points.append(PerformancePoint(valuation.moment, valuation.total))
        portfolio = {
            protocol: Allocation(
                amount,
                quote.apr(),
                parts_of(quote, self._fee_bps),
            )
            for protocol, amount in sorted(valuation.positions.items())
            if amount > 0 and (quote := valuation.quotes.get(protocol)) is not None
        }
        return PerformanceView(token, tuple(points), portfolio, await self._rewards(chain, wallet))

    async def _rewards(self, chain: MarketChain, wallet: Wallet) -> tuple[RewardHolding, ...]:
        accrued = {r.symbol: r for r in await chain.accrued_rewards(wallet.address)}
        claims: dict[str, list[RewardRecord]] = {}
        page = 1
        while True:
            items, total = self._wallets.rewards(wallet.id, PageRequest(page, MAX_LIMIT, False))
            for claim in items:
                claims.setdefault(claim.token_symbol, []).append(claim)
            if page * MAX_LIMIT >= total or not items:
                break
            page += 1
        holdings = []
        for symbol in sorted(set(accrued) | set(claims)):
            now = accrued.get(symbol)
            claimed = claims.get(symbol, [])
            decimals = now.decimals if now else claimed[0].decimals
            price = now.price_usd if now else _price(claimed)
            holdings.append(
                RewardHolding(
                    symbol,
                    decimals,
                    price,
                    now.amount if now else 0,
                    sum(c.amount for c in claimed),
                    sum(c.dollar_value for c in claimed),
                )
            )
        return tuple(holdings)

    async def token_aprs(
        self, partner_id: int, chain_id: int, address: str, period: Period
    ) -> list[TokenApr]:
        """The wallet's holding of its token, valued now, with its time-weighted APR since
        its activation (``Period.ALL``) or over the last day of chain time."""
        wallet = self._owned(partner_id, chain_id, address)
        token = self._catalog.token(chain_id, wallet.token)
        valuation = await value(self._chains[chain_id], wallet)
        start = valuation.moment - timedelta(days=1) if period is Period.DAY else None
        result = await self._reports.apr(partner_id, chain_id, address, start, None, False)
        return [TokenApr(token, valuation.total, result.apr)]


def _price(claims: Sequence[RewardRecord]) -> float:
    """A reward token's price at its last claim: its dollar value per whole token."""
    last = claims[-1]
    whole = Decimal(last.amount) / 10**last.decimals
    return float(Decimal(str(last.dollar_value)) / whole) if whole else 0.0
