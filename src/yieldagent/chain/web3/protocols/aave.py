"""Aave v3: a reserve of the Pool, quoted from its rate strategy and reserve state.

The rate model is the reserve's ``DefaultReserveInterestRateStrategy`` (optimal usage
ratio, base rate and slopes, all RAY) with the reserve factor of the reserve's
configuration (bits 64-79, in basis points). Supply is available liquidity (the token
the aToken holds) plus debt (variable and stable debt tokens' supplies), as the strategy
computes its usage ratio. The aToken holds the token: it is the pool's custody.
"""

from __future__ import annotations

from dataclasses import dataclass

from yieldagent.chain.web3.abis import (
    AAVE_BASE_VARIABLE_BORROW_RATE,
    AAVE_OPTIMAL_USAGE_RATIO,
    AAVE_RESERVE_DATA,
    AAVE_SUPPLY,
    AAVE_VARIABLE_RATE_SLOPE1,
    AAVE_VARIABLE_RATE_SLOPE2,
    AAVE_WITHDRAW,
    BALANCE_OF,
    TOTAL_SUPPLY,
)
from yieldagent.chain.web3.config import ProtocolConfig
from yieldagent.chain.web3.protocols.base import (
    MAX_UINT,
    Call,
    approve,
    exiting,
    supplying,
    withdrawing,
)
from yieldagent.chain.web3.reader import BlockId, Read, RpcReader, read
from yieldagent.domain.errors import ConfigurationError
from yieldagent.domain.market.history import Snapshot
from yieldagent.domain.market.quotes import MarketQuote, PoolQuote
from yieldagent.domain.market.rate_models import AaveV3
from yieldagent.domain.ports.chain import Block

RESERVE_FACTOR_SHIFT = 64
RESERVE_FACTOR_MASK = 0xFFFF
BPS_TO_RAY = 10**23


@dataclass(frozen=True, slots=True)
class Reserve:
    """The addresses an Aave reserve derives."""

    a_token: str
    stable_debt: str
    variable_debt: str
    strategy: str


ACTIVE_BIT, FROZEN_BIT, PAUSED_BIT = 56, 57, 60
"""Where Aave v3's ReserveConfiguration keeps the reserve's switches."""


def switches(configuration: int) -> tuple[bool, bool, bool]:
    """(supply paused, withdrawals paused, frozen) of a reserve configuration word: a paused
    or inactive reserve stops both; a frozen one takes no new supply."""
    active = bool(configuration >> ACTIVE_BIT & 1)
    paused = bool(configuration >> PAUSED_BIT & 1) or not active
    frozen = bool(configuration >> FROZEN_BIT & 1)
    return paused, paused, frozen


def reserve_factor(configuration: int) -> int:
    """The reserve factor of a reserve configuration word, RAY-scaled."""
    return (configuration >> RESERVE_FACTOR_SHIFT & RESERVE_FACTOR_MASK) * BPS_TO_RAY


class AavePool:
    """The token's reserve in an Aave v3 Pool."""

    def __init__(self, reader: RpcReader, token: str, config: ProtocolConfig) -> None:
        self._reader = reader
        self.token = token
        self.config = config
        self._reserve: Reserve | None = None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def reserve(self) -> Reserve:
        """The reserve's tokens and strategy (after ``resolve``)."""
        if self._reserve is None:
            raise RuntimeError(f"{self.name}: resolve() first")
        return self._reserve

    @property
    def custody(self) -> str:
        return self.reserve.a_token

    async def resolve(self) -> None:
        data = await self._reader.call(self.config.address, AAVE_RESERVE_DATA, self.token)
        self._reserve = _reserve_of(data)
        if int(self._reserve.a_token, 16) == 0:
            raise ConfigurationError(f"{self.name}: the Pool has no reserve for {self.token}")

    async def quote(self, block: Block) -> PoolQuote:
        reserve = self.reserve
        data, cash, variable, stable, optimal, base, slope1, slope2 = await self._reader.call_many(
            [
                read(self.config.address, AAVE_RESERVE_DATA, self.token),
                read(self.token, BALANCE_OF, reserve.a_token),
                read(reserve.variable_debt, TOTAL_SUPPLY),
                read(reserve.stable_debt, TOTAL_SUPPLY),
                read(reserve.strategy, AAVE_OPTIMAL_USAGE_RATIO),
                read(reserve.strategy, AAVE_BASE_VARIABLE_BORROW_RATE),
                read(reserve.strategy, AAVE_VARIABLE_RATE_SLOPE1),
                read(reserve.strategy, AAVE_VARIABLE_RATE_SLOPE2),
            ],
            block.number,
        )
        if _reserve_of(data) != reserve:  # governance moved the reserve's contracts
            self._reserve = _reserve_of(data)
            return await self.quote(block)
        model = AaveV3(optimal, base, slope1, slope2, reserve_factor(data[0][0]))
        borrows = variable + stable
        market = MarketQuote(self.config.title or "Aave v3", cash + borrows, borrows)
        return PoolQuote(self.name, self.token, model, (market,))

    async def reading(self, block: Block) -> Snapshot:
        """The reserve as its risk guards read it at ``block``: supply and borrows, its
        switches (active, frozen, paused) and its liquidity index, in one batch."""
        reserve = self.reserve
        data, cash, variable, stable = await self._reader.call_many(
            [
                read(self.config.address, AAVE_RESERVE_DATA, self.token),
                read(self.token, BALANCE_OF, reserve.a_token),
                read(reserve.variable_debt, TOTAL_SUPPLY),
                read(reserve.stable_debt, TOTAL_SUPPLY),
            ],
            block.number,
        )
        supply_paused, withdraw_paused, frozen = switches(data[0][0])
        borrows = variable + stable
        return Snapshot(
            block.timestamp,
            cash + borrows,
            borrows,
            int(data[1]),  # liquidityIndex
            supply_paused=supply_paused,
            withdraw_paused=withdraw_paused,
            frozen=frozen,
        )

    async def position(self, holder: str, block: BlockId) -> int:
        return int(await self._reader.call(self.reserve.a_token, BALANCE_OF, holder, block=block))

    def position_read(self, holder: str) -> Read:
        return read(self.reserve.a_token, BALANCE_OF, holder)

    async def contract_rate(self, block: BlockId) -> int:
        """The reserve's ``currentLiquidityRate`` (set at its last update)."""
        data = await self._reader.call(
            self.config.address, AAVE_RESERVE_DATA, self.token, block=block
        )
        return int(data[2])

    def supply_calls(self, account: str, amount: int) -> list[Call]:
        pool = self.config.address
        return [
            approve(self.token, pool, amount),
            Call(
                pool,
                AAVE_SUPPLY,
                (self.token, amount, account, 0),
                description=supplying(self.name, amount),
            ),
        ]

    def withdraw_calls(self, account: str, amount: int) -> list[Call]:
        withdraw = (self.token, amount, account)
        return [
            Call(
                self.config.address,
                AAVE_WITHDRAW,
                withdraw,
                description=withdrawing(self.name, amount),
            )
        ]

    async def exit_calls(self, account: str) -> list[Call]:
        withdraw = (self.token, MAX_UINT, account)
        return [Call(self.config.address, AAVE_WITHDRAW, withdraw, description=exiting(self.name))]


def _reserve_of(data: tuple[object, ...]) -> Reserve:
    a_token, stable, variable, strategy = (str(v) for v in data[8:12])
    return Reserve(a_token, stable, variable, strategy)
