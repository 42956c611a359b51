"""Moonwell: an mToken (Compound v2) with its JumpRateModel, quoted from both.

The model's per-timestamp rates (scaled by 1e18) times 31,536,000 and 1e9 are the annual
RAY parameters of the domain's ``Moonwell`` model, here its subclass ``JumpRateModel``
that computes as the contract does; the kink and ``reserveFactorMantissa`` are 1e18
fractions. The stored totals are brought to the quote's block with Compound v2's
``accrueInterest`` arithmetic (simple interest at the stored borrow rate, the reserve
factor's share to reserves), so the quote sees what the next transaction will. Supply is
cash + borrows − reserves. The mToken holds the underlying: it is the custody.
"""

from __future__ import annotations

from yieldagent.chain.web3.abis import (
    BALANCE_OF,
    COMPTROLLER_MINT_PAUSED,
    JUMP_BASE_RATE,
    JUMP_JUMP_MULTIPLIER,
    JUMP_KINK,
    JUMP_MULTIPLIER,
    MTOKEN_ACCRUAL_TIMESTAMP,
    MTOKEN_BALANCE_OF_UNDERLYING,
    MTOKEN_BORROW_RATE,
    MTOKEN_CASH,
    MTOKEN_COMPTROLLER,
    MTOKEN_EXCHANGE_RATE,
    MTOKEN_MINT,
    MTOKEN_RATE_MODEL,
    MTOKEN_REDEEM,
    MTOKEN_REDEEM_UNDERLYING,
    MTOKEN_RESERVE_FACTOR,
    MTOKEN_SUPPLY_RATE,
    MTOKEN_TOTAL_BORROWS,
    MTOKEN_TOTAL_RESERVES,
)
from yieldagent.chain.web3.config import ProtocolConfig
from yieldagent.chain.web3.protocols.base import (
    PER_SECOND_WAD_TO_ANNUAL_RAY,
    Call,
    approve,
    exiting,
    supplying,
    withdrawing,
)
from yieldagent.chain.web3.protocols.onchain_models import JumpRateModel
from yieldagent.chain.web3.reader import BlockId, Read, RpcReader, read
from yieldagent.domain.market.history import Snapshot
from yieldagent.domain.market.quotes import MarketQuote, PoolQuote
from yieldagent.domain.ports.chain import Block

WAD = 10**18
WAD_TO_RAY = 10**9


def accrue(
    borrows: int, reserves: int, borrow_rate: int, reserve_factor: int, seconds: int
) -> tuple[int, int]:
    """(borrows, reserves) after ``seconds`` of ``accrueInterest`` at the per-second
    ``borrow_rate`` (1e18), truncated as Compound v2's ``mul_ScalarTruncate``."""
    if seconds <= 0:
        return borrows, reserves
    interest = borrow_rate * seconds * borrows // WAD
    return borrows + interest, reserves + reserve_factor * interest // WAD


class MTokenPool:
    """The token's mToken market."""

    def __init__(self, reader: RpcReader, token: str, config: ProtocolConfig) -> None:
        self._reader = reader
        self.token = token
        self.config = config
        self._rate_model: str | None = config.contracts.get("rate_model")
        self._comptroller: str | None = config.contracts.get("comptroller")

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def custody(self) -> str:
        return self.config.address

    async def resolve(self) -> None:
        if self._rate_model is None:
            self._rate_model = str(await self._reader.call(self.config.address, MTOKEN_RATE_MODEL))
        if self._comptroller is None:
            self._comptroller = str(
                await self._reader.call(self.config.address, MTOKEN_COMPTROLLER)
            )

    def _state(self) -> list[Read]:
        """The market's stored state, as the quote and the guards' reading read it: cash,
        borrows, reserves, reserve factor, last accrual and borrow rate."""
        m = self.config.address
        return [
            read(m, MTOKEN_CASH),
            read(m, MTOKEN_TOTAL_BORROWS),
            read(m, MTOKEN_TOTAL_RESERVES),
            read(m, MTOKEN_RESERVE_FACTOR),
            read(m, MTOKEN_ACCRUAL_TIMESTAMP),
            read(m, MTOKEN_BORROW_RATE),
        ]

    async def reading(self, block: Block) -> Snapshot:
        """The market as its risk guards read it at ``block``, in one batch: its supply
        and borrows brought to the block as the quote brings them, its exchange rate (its
        share price: bad debt written off lowers it) and the Comptroller's pause switch on
        supplying. Compound v2 pauses no redeeming, so withdrawals never read as paused."""
        m = self.config.address
        comptroller = self._comptroller
        assert comptroller is not None, "resolve() first"
        values = await self._reader.call_many(
            [
                *self._state(),
                read(m, MTOKEN_EXCHANGE_RATE),
                read(comptroller, COMPTROLLER_MINT_PAUSED, m),
            ],
            block.number,
        )
        cash, borrows, reserves, factor, accrued_at, borrow_rate, exchange_rate, paused = values
        borrows, reserves = accrue(
            borrows, reserves, borrow_rate, factor, block.timestamp - accrued_at
        )
        return Snapshot(
            block.timestamp,
            max(cash + borrows - reserves, 0),
            borrows,
            share_price=int(exchange_rate),
            supply_paused=bool(paused),
        )

    async def quote(self, block: Block) -> PoolQuote:
        m = self.config.address
        model_address = self._rate_model
        assert model_address is not None, "resolve() first"
        values = await self._reader.call_many(
            [
                read(m, MTOKEN_RATE_MODEL),
                *self._state(),
                read(model_address, JUMP_BASE_RATE),
                read(model_address, JUMP_KINK),
                read(model_address, JUMP_MULTIPLIER),
                read(model_address, JUMP_JUMP_MULTIPLIER),
            ],
            block.number,
        )
        current_model, cash, borrows, reserves, factor, accrued_at, borrow_rate = values[:7]
        if current_model != model_address:  # governance set a new rate model
            self._rate_model = str(current_model)
            return await self.quote(block)
        base, kink, multiplier, jump = values[7:]
        borrows, reserves = accrue(
            borrows, reserves, borrow_rate, factor, block.timestamp - accrued_at
        )
        model = JumpRateModel(
            base * PER_SECOND_WAD_TO_ANNUAL_RAY,
            kink * WAD_TO_RAY,
            multiplier * PER_SECOND_WAD_TO_ANNUAL_RAY,
            jump * PER_SECOND_WAD_TO_ANNUAL_RAY,
            factor * WAD_TO_RAY,
        )
        market = MarketQuote(self.config.title or "Moonwell", cash + borrows - reserves, borrows)
        return PoolQuote(self.name, self.token, model, (market,))

    async def position(self, holder: str, block: BlockId) -> int:
        """``balanceOfUnderlying``: it accrues first, so it is simulated with eth_call."""
        m = self.config.address
        return int(await self._reader.call(m, MTOKEN_BALANCE_OF_UNDERLYING, holder, block=block))

    def position_read(self, holder: str) -> Read:
        return read(self.config.address, MTOKEN_BALANCE_OF_UNDERLYING, holder)

    async def contract_rate(self, block: BlockId) -> int:
        """``supplyRatePerTimestamp`` (at the stored state), annualized to RAY."""
        rate = await self._reader.call(self.config.address, MTOKEN_SUPPLY_RATE, block=block)
        return int(rate) * PER_SECOND_WAD_TO_ANNUAL_RAY

    def supply_calls(self, account: str, amount: int) -> list[Call]:
        m = self.config.address
        mint = Call(m, MTOKEN_MINT, (amount,), description=supplying(self.name, amount))
        return [approve(self.token, m, amount), mint]

    def withdraw_calls(self, account: str, amount: int) -> list[Call]:
        m, what = self.config.address, withdrawing(self.name, amount)
        return [Call(m, MTOKEN_REDEEM_UNDERLYING, (amount,), description=what)]

    async def exit_calls(self, account: str) -> list[Call]:
        """``redeem`` of every mToken the account holds."""
        m = self.config.address
        held = int(await self._reader.call(m, BALANCE_OF, account, block="latest"))
        return [Call(m, MTOKEN_REDEEM, (held,), description=exiting(self.name))]
