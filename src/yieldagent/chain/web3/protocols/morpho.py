"""A Morpho vault (ERC-4626 over Morpho Blue markets), quoted market by market.

Each of the vault's markets is read from Morpho Blue (``market``, the vault's
``position``) and its AdaptiveCurveIrm (``rateAtTarget``), then brought to the quote's
block as Morpho's next accrual would (``morpho_math.accrued``): totals with the interest
since ``lastUpdate``, the rate at target adapted over that time. The vault's holding in
each market is its supply shares in assets. The model is the domain's ``MorphoBlue``
with the markets' fee, here its subclass ``AdaptiveCurveModel`` that computes as the IRM
does; the pool's own fee is the vault's ``fee()``. Per-second WAD rates times 31,536,000
and 1e9 are the domain's annual RAY rates.

The vault holds the token between calls, so it is the custody. Its allocation rule (a
deposit spread over the markets in proportion to what it holds in each) is the quote's.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from yieldagent.chain.web3.abis import (
    BALANCE_OF,
    IRM_BORROW_RATE_VIEW,
    IRM_RATE_AT_TARGET,
    MORPHO_MARKET,
    MORPHO_MARKET_PARAMS,
    MORPHO_POSITION,
    SYMBOL,
    VAULT_CONVERT_TO_ASSETS,
    VAULT_DEPOSIT,
    VAULT_FEE,
    VAULT_REDEEM,
    VAULT_WITHDRAW,
    Fn,
)
from yieldagent.chain.web3.config import ProtocolConfig
from yieldagent.chain.web3.protocols import morpho_math as mm
from yieldagent.chain.web3.protocols.base import (
    PER_SECOND_WAD_TO_ANNUAL_RAY,
    Call,
    approve,
    exiting,
    supplying,
    withdrawing,
)
from yieldagent.chain.web3.protocols.onchain_models import AdaptiveCurveModel
from yieldagent.chain.web3.reader import BlockId, Read, ReadReverted, RpcReader, read
from yieldagent.domain.errors import ConfigurationError
from yieldagent.domain.market.history import Snapshot
from yieldagent.domain.market.quotes import MarketQuote, PoolQuote
from yieldagent.domain.ports.chain import Block

WAD_TO_RAY = 10**9
VAULT_MORPHO = Fn("MORPHO()", "address")
WITHDRAW_QUEUE_LENGTH = Fn("withdrawQueueLength()", "uint256")
WITHDRAW_QUEUE = Fn("withdrawQueue(uint256)", "bytes32")


@dataclass(frozen=True, slots=True)
class MarketParams:
    """A Morpho Blue market's parameters, and the name the quote gives it."""

    id: bytes
    loan_token: str
    collateral_token: str
    oracle: str
    irm: str
    lltv: int
    name: str

    def as_tuple(self) -> tuple[str, str, str, str, int]:
        """The ``MarketParams`` struct."""
        return (self.loan_token, self.collateral_token, self.oracle, self.irm, self.lltv)


@dataclass(frozen=True, slots=True)
class MarketRead:
    """One market of the vault as read at a block: state, the vault's shares, the IRM's
    stored rate at target."""

    params: MarketParams
    state: mm.MarketState
    shares: int
    rate_at_target: int


class VaultPool:
    """An ERC-4626 vault lending the token on Morpho Blue markets."""

    def __init__(self, reader: RpcReader, token: str, config: ProtocolConfig) -> None:
        self._reader = reader
        self.token = token
        self.config = config
        self._morpho: str | None = config.contracts.get("morpho")
        self._markets: tuple[MarketParams, ...] = ()

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def custody(self) -> str:
        return self.config.address

    @property
    def markets(self) -> tuple[MarketParams, ...]:
        """The vault's markets, in its withdrawal order (after ``resolve``)."""
        if not self._markets:
            raise RuntimeError(f"{self.name}: resolve() first")
        return self._markets

    @property
    def morpho(self) -> str:
        """Morpho Blue's address (after ``resolve``)."""
        if self._morpho is None:
            raise RuntimeError(f"{self.name}: resolve() first")
        return self._morpho

    async def resolve(self) -> None:
        vault = self.config.address
        if self._morpho is None:
            self._morpho = str(await self._reader.call(vault, VAULT_MORPHO))
        ids = [bytes.fromhex(m.removeprefix("0x")) for m in self.config.markets]
        if not ids:  # a MetaMorpho vault lists them itself
            count = await self._reader.call(vault, WITHDRAW_QUEUE_LENGTH)
            ids = await self._reader.call_many(
                [read(vault, WITHDRAW_QUEUE, i) for i in range(count)], "latest"
            )
        if not ids:
            raise ConfigurationError(f"{self.name}: the vault lists no market")
        params = await self._reader.call_many(
            [read(self.morpho, MORPHO_MARKET_PARAMS, i) for i in ids], "latest"
        )
        symbols = await self._symbols([str(t) for p in params for t in p[:2]])
        self._markets = tuple(
            MarketParams(
                i,
                loan,
                collateral,
                oracle,
                irm,
                lltv,
                _market_name(symbols[collateral], symbols[loan], lltv),
            )
            for i, (loan, collateral, oracle, irm, lltv) in zip(ids, params, strict=True)
        )

    async def _symbols(self, tokens: list[str]) -> dict[str, str]:
        """Each token's symbol; its address's first digits if it has none."""
        unique = list(dict.fromkeys(tokens))
        answers = await asyncio.gather(
            *(self._reader.call(t, SYMBOL) for t in unique), return_exceptions=True
        )
        for answer in answers:
            if isinstance(answer, BaseException) and not isinstance(answer, ReadReverted):
                raise answer
        return {
            t: t[:10] if isinstance(a, BaseException) else str(a)
            for t, a in zip(unique, answers, strict=True)
        }

    async def read_markets(self, block: BlockId) -> tuple[int, list[MarketRead]]:
        """The vault's fee (WAD) and each market's stored state, at ``block``."""
        vault, morpho = self.config.address, self.morpho
        reads = [read(vault, VAULT_FEE)]
        for m in self.markets:
            reads += [
                read(morpho, MORPHO_MARKET, m.id),
                read(morpho, MORPHO_POSITION, m.id, vault),
                read(m.irm, IRM_RATE_AT_TARGET, m.id),
            ]
        values = await self._reader.call_many(reads, block)
        fee, rest = values[0], values[1:]
        markets = [
            MarketRead(m, mm.MarketState(*rest[3 * i]), rest[3 * i + 1][0], rest[3 * i + 2])
            for i, m in enumerate(self.markets)
        ]
        return int(fee), markets

    async def quote(self, block: Block) -> PoolQuote:
        fee, markets = await self.read_markets(block.number)
        quoted = []
        fees = set()
        for m in markets:
            state, rate_at_target = mm.accrued(
                m.state, m.rate_at_target, block.timestamp, has_irm=int(m.params.irm, 16) != 0
            )
            held = mm.to_assets_down(m.shares, state.total_supply_assets, state.total_supply_shares)
            fees.add(state.fee)
            quoted.append(
                MarketQuote(
                    m.params.name,
                    state.total_supply_assets,
                    state.total_borrow_assets,
                    (rate_at_target or mm.INITIAL_RATE_AT_TARGET) * PER_SECOND_WAD_TO_ANNUAL_RAY,
                    held,
                )
            )
        market_fee = _common_fee(fees, quoted, markets)
        model = AdaptiveCurveModel(fee=market_fee * WAD_TO_RAY)
        return PoolQuote(self.name, self.token, model, tuple(quoted), fee * WAD_TO_RAY)

    async def reading(self, block: Block) -> Snapshot:
        """The vault as its risk guards read it at ``block`` (``guard_reading``)."""
        snapshot, _ = await self.guard_reading(block)
        return snapshot

    async def guard_reading(self, block: Block) -> tuple[Snapshot, tuple[str, ...]]:
        """The vault as its risk guards read it at ``block``: its assets, what its markets
        have lent out of them, and its share price (the assets of ``SHARE`` shares), read
        together in one batch; and the collateral tokens of the markets it holds a supply
        in (what it lends against now, each once)."""
        vault = self.config.address
        quote, price = await asyncio.gather(
            self.quote(block),
            self._reader.call(vault, VAULT_CONVERT_TO_ASSETS, SHARE, block=block.number),
        )
        tvl = quote.total_supply
        lent_against = tuple(
            dict.fromkeys(
                m.collateral_token
                for m, q in zip(self.markets, quote.markets, strict=True)
                if q.held > 0
            )
        )
        return Snapshot(block.timestamp, tvl, max(tvl - quote.cash, 0), int(price)), lent_against

    @property
    def collaterals(self) -> frozenset[str]:
        """Every collateral token its markets lend against (after ``resolve``)."""
        return frozenset(m.collateral_token for m in self.markets)

    async def position(self, holder: str, block: BlockId) -> int:
        vault = self.config.address
        shares = await self._reader.call(vault, BALANCE_OF, holder, block=block)
        if shares == 0:
            return 0
        return int(await self._reader.call(vault, VAULT_CONVERT_TO_ASSETS, shares, block=block))

    def position_read(self, holder: str) -> Read:
        """The holder's shares: ``assets_read`` of them is its position."""
        return read(self.config.address, BALANCE_OF, holder)

    def assets_read(self, shares: int) -> Read:
        """What ``shares`` of the vault are worth in the token (``convertToAssets``)."""
        return read(self.config.address, VAULT_CONVERT_TO_ASSETS, shares)

    async def contract_rate(self, block: BlockId) -> int:
        """What Morpho's state and the IRM's ``borrowRateView`` give: each market's supply
        rate (borrow rate × utilization × (1 − market fee)), weighted by the vault's
        holding in it, times (1 − vault fee); from the markets as last accrued."""
        fee, markets = await self.read_markets(block)
        rates = await self._reader.call_many(
            [
                read(
                    m.params.irm,
                    IRM_BORROW_RATE_VIEW,
                    m.params.as_tuple(),
                    (
                        m.state.total_supply_assets,
                        m.state.total_supply_shares,
                        m.state.total_borrow_assets,
                        m.state.total_borrow_shares,
                        m.state.last_update,
                        m.state.fee,
                    ),
                )
                for m in markets
            ],
            block,
        )
        weighted = total = 0
        for m, rate in zip(markets, rates, strict=True):
            s = m.state
            held = mm.to_assets_down(m.shares, s.total_supply_assets, s.total_supply_shares)
            if held == 0 or s.total_supply_assets == 0:
                continue
            supply_rate = (
                rate * PER_SECOND_WAD_TO_ANNUAL_RAY * s.total_borrow_assets * (mm.WAD - s.fee)
            ) // (s.total_supply_assets * mm.WAD)
            weighted += held * supply_rate
            total += held
        if total == 0:
            return 0
        return weighted // total * (mm.WAD - fee) // mm.WAD

    def supply_calls(self, account: str, amount: int) -> list[Call]:
        vault = self.config.address
        return [
            approve(self.token, vault, amount),
            Call(vault, VAULT_DEPOSIT, (amount, account), description=supplying(self.name, amount)),
        ]

    def withdraw_calls(self, account: str, amount: int) -> list[Call]:
        withdraw = (amount, account, account)
        return [
            Call(
                self.config.address,
                VAULT_WITHDRAW,
                withdraw,
                description=withdrawing(self.name, amount),
            )
        ]

    async def exit_calls(self, account: str) -> list[Call]:
        """``redeem`` of every share the account holds."""
        vault = self.config.address
        shares = int(await self._reader.call(vault, BALANCE_OF, account, block="latest"))
        redeem = (shares, account, account)
        return [Call(vault, VAULT_REDEEM, redeem, description=exiting(self.name))]


SHARE = 10**18
"""The shares whose assets are the vault's share price (compared only with itself)."""


def _market_name(collateral: str, loan: str, lltv: int) -> str:
    """``cbBTC/USDC 86%``-like: collateral, loan token, and the LLTV in percent."""
    percent = f"{lltv * 100 / 10**18:.2f}".rstrip("0").rstrip(".")
    return f"{collateral}/{loan} {percent}%"


def _common_fee(fees: set[int], quoted: list[MarketQuote], markets: list[MarketRead]) -> int:
    """The markets' fee (WAD): one model serves every market, so when their fees differ
    the holding-weighted fee stands for them."""
    if len(fees) <= 1:
        return next(iter(fees), 0)
    held = sum(q.held for q in quoted)
    if held == 0:
        return max(fees)
    return sum(q.held * m.state.fee for q, m in zip(quoted, markets, strict=True)) // held
