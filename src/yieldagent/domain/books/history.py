"""What partners read about wallets: the wallet record, its history pages, its APR, and
the chain's statistics. Nothing here changes state.

Hot reads (the wallet record, history pages, statistics) use what is stored: the wallet
as of its last valuation, which every money movement and the worker's periodic snapshot
refresh. Only the APR up to "now" values the wallet live on the chain.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal

from yieldagent.domain.books.aggregates import Totals, held_by_token, mean_apr
from yieldagent.domain.books.apr import AprResult, PerformancePoint, interpolate, time_weighted_apr
from yieldagent.domain.books.ports import WalletRepository
from yieldagent.domain.books.valuation import value
from yieldagent.domain.books.wallets import (
    DepositRecord,
    RewardRecord,
    TransactionRecord,
    Wallet,
    WithdrawalRecord,
    require,
    wallet_not_found,
)
from yieldagent.domain.catalog import Catalog, ChainInfo
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.pagination import PageRequest, Pagination, pagination


@dataclass(frozen=True, slots=True)
class WalletView:
    """A wallet record with its deposits and withdrawals."""

    wallet: Wallet
    deposits: list[DepositRecord]
    withdrawals: list[WithdrawalRecord]


@dataclass(frozen=True, slots=True)
class Share:
    """An amount in whole tokens and its share of its list, in percent."""

    token: str
    amount: float
    percentage: float


@dataclass(frozen=True, slots=True)
class ProtocolShare:
    """What one protocol holds, by token, and its share of all holdings."""

    protocol: str
    balances: list[Share]
    percentage: float


@dataclass(frozen=True, slots=True)
class Statistics:
    """A chain's aggregate figures."""

    total_balance_usd: float
    total_deposits_usd: float
    total_users: int
    total_transactions: int
    total_apr: float
    initial_deposits: list[Share]
    current_tokens: list[Share]
    protocols: list[ProtocolShare]


def percentages(amounts: Sequence[float]) -> list[float]:
    """Shares of ``amounts`` in percent with two decimals, summing to exactly 100 (largest
    remainder); all zeros when the total is zero."""
    total = sum(amounts)
    if total <= 0:
        return [0.0] * len(amounts)
    raw = [Decimal(a) * 10000 / Decimal(total) for a in amounts]
    cents = [int(r) for r in raw]
    by_remainder = sorted(range(len(raw)), key=lambda i: raw[i] - cents[i], reverse=True)
    for i in by_remainder[: 10000 - sum(cents)]:
        cents[i] += 1
    return [float((Decimal(c) / 100).quantize(Decimal("0.01"), ROUND_HALF_UP)) for c in cents]


class Reports:
    """Read-only views of wallets and chains."""

    def __init__(
        self, wallets: WalletRepository, chains: Mapping[int, MarketChain], catalog: Catalog
    ) -> None:
        self._wallets = wallets
        self._chains = chains
        self._catalog = catalog

    def _owned(self, partner_id: int, chain_id: int, address: str) -> Wallet:
        self._catalog.chain(chain_id)
        return require(self._wallets.get(chain_id, address), chain_id, address).owned_by(partner_id)

    def wallet_stamp(self, chain_id: int, address: str, by_eoa: bool) -> tuple[int, int]:
        """The id and version of the wallet ``wallet_view`` would show: public. Equal
        stamps mean equal views, on any replica."""
        self._catalog.chain(chain_id)
        found = self._wallets.stamp(chain_id, address, by_eoa)
        if found is None:
            raise wallet_not_found(chain_id, address)
        return found

    def wallet_view(self, chain_id: int, address: str, by_eoa: bool) -> WalletView:
        """The wallet at ``address`` (or of the EOA ``address``): public."""
        self._catalog.chain(chain_id)
        found = self._wallets.view(chain_id, address, by_eoa)
        if found is None:
            raise wallet_not_found(chain_id, address)
        return WalletView(*found)

    def transactions(
        self, partner_id: int, chain_id: int, address: str, page: PageRequest
    ) -> tuple[list[TransactionRecord], Pagination]:
        """A page of the wallet's transactions."""
        wallet = self._owned(partner_id, chain_id, address)
        items, total = self._wallets.transactions(wallet.id, page)
        return items, pagination(page, total)

    def rewards(
        self, partner_id: int, chain_id: int, address: str, page: PageRequest
    ) -> tuple[list[RewardRecord], Pagination]:
        """A page of the wallet's reward claims."""
        wallet = self._owned(partner_id, chain_id, address)
        items, total = self._wallets.rewards(wallet.id, page)
        return items, pagination(page, total)

    def reward_staking(self, partner_id: int, chain_id: int, address: str) -> bool:
        """Whether the wallet's claimed rewards are auto-staked."""
        return self._owned(partner_id, chain_id, address).is_staked

    async def apr(
        self,
        partner_id: int,
        chain_id: int,
        address: str,
        start: datetime | None,
        end: datetime | None,
        exact_end: bool,
    ) -> AprResult:
        """The wallet's time-weighted APR over the period (see ``domain.books.apr``)."""
        wallet = self._owned(partner_id, chain_id, address)
        points = [p for p in self._wallets.points(wallet.id) if start is None or p.at >= start]
        if not points:
            return time_weighted_apr([])
        valuation = await value(self._chains[chain_id], wallet)
        live = PerformancePoint(valuation.moment, valuation.total)
        if end is None or (exact_end and end >= live.at):
            period = [p for p in points if p.at <= live.at] + [live]
        elif exact_end:
            before = [p for p in points if p.at <= end]
            after = [p for p in points if p.at > end] + [live]
            period = before
            if before and before[-1].at < end:
                period = [*before, PerformancePoint(end, interpolate(before[-1], after[0], end))]
        else:
            period = [p for p in points if p.at <= end]
        return time_weighted_apr(period)

    def holdings(self, chain_id: int) -> dict[str, int]:
        """What the wallets of a chain hold, per token, in its smallest unit (from their
        last valuation; deactivated wallets hold nothing for the service). Read from the
        chain's totals: the same cost at any number of wallets."""
        return dict(held_by_token(self._wallets.totals(chain_id)))

    def statistics(self, chain_id: int) -> Statistics:
        """The chain's totals and liquidity distribution, from the last valuations."""
        return statistics(self._catalog.chain(chain_id), self._wallets.totals(chain_id))


def statistics(chain: ChainInfo, totals: Totals) -> Statistics:
    """A chain's statistics from its totals (``domain.books.aggregates``): the wallets and
    deposits of the catalog's tokens; transactions of every wallet."""
    tokens = {t.address: t for t in chain.tokens}
    mine = {
        address: totals.tokens[address] for address in sorted(totals.tokens) if address in tokens
    }

    def whole(address: str, amount: int) -> float:
        return float(Decimal(amount) / 10 ** tokens[address].decimals)

    def usd(address: str, amount: int) -> float:
        return whole(address, amount) * tokens[address].price_usd

    first_deposits = {a: t.first_deposited for a, t in mine.items() if t.first_wallets > 0}
    current = {a: t.held for a, t in mine.items() if t.held_wallets > 0}
    by_protocol: dict[str, dict[str, int]] = defaultdict(dict)
    for (protocol, token), placed in sorted(totals.protocols.items()):
        if token in tokens and placed.wallets > 0:
            by_protocol[protocol][token] = placed.amount

    def shares(amounts: Mapping[str, int]) -> list[Share]:
        names = sorted(amounts)
        values = [usd(t, amounts[t]) for t in names]
        return [
            Share(tokens[t].symbol, whole(t, amounts[t]), pct)
            for t, pct in zip(names, percentages(values), strict=True)
        ]

    users = sum(t.active_wallets for t in mine.values())
    protocol_names = sorted(by_protocol)
    protocol_usd = [sum(usd(t, a) for t, a in by_protocol[p].items()) for p in protocol_names]
    return Statistics(
        total_balance_usd=sum(usd(t, a) for t, a in current.items()),
        total_deposits_usd=sum(usd(t, m.deposited) for t, m in mine.items() if m.deposited),
        total_users=users,
        total_transactions=sum(t.transactions for t in totals.tokens.values()),
        total_apr=mean_apr(sum(t.apr_units for t in mine.values()), users),
        initial_deposits=shares(first_deposits),
        current_tokens=shares(current),
        protocols=[
            ProtocolShare(name, shares(by_protocol[name]), pct)
            for name, pct in zip(protocol_names, percentages(protocol_usd), strict=True)
        ],
    )
