"""Compound v3 (Comet): the base token's pool, quoted from Comet's own curve getters.

Comet's supply and borrow curves are per-second rates scaled by 1e18 (kinks are 1e18
fractions); times 31,536,000 and 1e9 they become the annual RAY parameters of the domain's
``CompoundV3`` model, here its subclass ``CometModel`` that computes as Comet does.
``totalSupply`` and ``totalBorrow`` are present values with the interest accrued to the
block, as Comet's views compute them. The Comet holds the base token: it is its own
custody. Its rewards are a CometRewards contract (role ``rewards``). The risk guards read
its pause switches (``isSupplyPaused``, ``isWithdrawPaused``) with its supply and borrows;
it has no share price to watch: Comet absorbs bad debt into its reserves, so its supply
index never falls.
"""

from __future__ import annotations

from yieldagent.chain.web3.abis import (
    BALANCE_OF,
    COMET_BORROW_BASE,
    COMET_BORROW_KINK,
    COMET_BORROW_SLOPE_HIGH,
    COMET_BORROW_SLOPE_LOW,
    COMET_SUPPLY,
    COMET_SUPPLY_BASE,
    COMET_SUPPLY_KINK,
    COMET_SUPPLY_PAUSED,
    COMET_SUPPLY_RATE,
    COMET_SUPPLY_SLOPE_HIGH,
    COMET_SUPPLY_SLOPE_LOW,
    COMET_TOTAL_BORROW,
    COMET_UTILIZATION,
    COMET_WITHDRAW,
    COMET_WITHDRAW_PAUSED,
    TOTAL_SUPPLY,
)
from yieldagent.chain.web3.config import ProtocolConfig
from yieldagent.chain.web3.protocols.base import (
    MAX_UINT,
    PER_SECOND_WAD_TO_ANNUAL_RAY,
    Call,
    approve,
    exiting,
    supplying,
    withdrawing,
)
from yieldagent.chain.web3.protocols.onchain_models import CometModel
from yieldagent.chain.web3.reader import BlockId, Read, RpcReader, read
from yieldagent.domain.market.history import Snapshot
from yieldagent.domain.market.quotes import MarketQuote, PoolQuote
from yieldagent.domain.ports.chain import Block

WAD_TO_RAY = 10**9
CURVE = (
    (COMET_SUPPLY_KINK, COMET_SUPPLY_BASE, COMET_SUPPLY_SLOPE_LOW, COMET_SUPPLY_SLOPE_HIGH),
    (COMET_BORROW_KINK, COMET_BORROW_BASE, COMET_BORROW_SLOPE_LOW, COMET_BORROW_SLOPE_HIGH),
)


class CometPool:
    """A Comet (cUSDCv3-like) market of the token."""

    def __init__(self, reader: RpcReader, token: str, config: ProtocolConfig) -> None:
        self._reader = reader
        self.token = token
        self.config = config

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def custody(self) -> str:
        return self.config.address

    @property
    def rewards(self) -> str | None:
        """The CometRewards contract that pays this Comet's suppliers, if any."""
        return self.config.contracts.get("rewards")

    async def resolve(self) -> None:
        return None  # the Comet is the only address it needs

    async def quote(self, block: Block) -> PoolQuote:
        comet = self.config.address
        values = await self._reader.call_many(
            [read(comet, TOTAL_SUPPLY), read(comet, COMET_TOTAL_BORROW)]
            + [read(comet, fn) for curve in CURVE for fn in curve],
            block.number,
        )
        supply, borrows = values[:2]
        model = CometModel(*_curve(values[2:6]), *_curve(values[6:10]))
        market = MarketQuote(self.config.title or "Compound v3", supply, borrows)
        return PoolQuote(self.name, self.token, model, (market,))

    async def reading(self, block: Block) -> Snapshot:
        """The Comet as its risk guards read it at ``block``: supply, borrows and its pause
        switches, in one batch (no share price: see the module)."""
        comet = self.config.address
        supply, borrows, supply_paused, withdraw_paused = await self._reader.call_many(
            [
                read(comet, TOTAL_SUPPLY),
                read(comet, COMET_TOTAL_BORROW),
                read(comet, COMET_SUPPLY_PAUSED),
                read(comet, COMET_WITHDRAW_PAUSED),
            ],
            block.number,
        )
        return Snapshot(
            block.timestamp,
            int(supply),
            int(borrows),
            share_price=0,
            supply_paused=bool(supply_paused),
            withdraw_paused=bool(withdraw_paused),
        )

    async def position(self, holder: str, block: BlockId) -> int:
        return int(await self._reader.call(self.config.address, BALANCE_OF, holder, block=block))

    def position_read(self, holder: str) -> Read:
        return read(self.config.address, BALANCE_OF, holder)

    async def contract_rate(self, block: BlockId) -> int:
        """``getSupplyRate(getUtilization())``, annualized to RAY."""
        comet = self.config.address
        utilization = await self._reader.call(comet, COMET_UTILIZATION, block=block)
        rate = await self._reader.call(comet, COMET_SUPPLY_RATE, utilization, block=block)
        return int(rate) * PER_SECOND_WAD_TO_ANNUAL_RAY

    def supply_calls(self, account: str, amount: int) -> list[Call]:
        comet = self.config.address
        return [
            approve(self.token, comet, amount),
            Call(
                comet, COMET_SUPPLY, (self.token, amount), description=supplying(self.name, amount)
            ),
        ]

    def withdraw_calls(self, account: str, amount: int) -> list[Call]:
        withdraw = (self.token, amount)
        return [
            Call(
                self.config.address,
                COMET_WITHDRAW,
                withdraw,
                description=withdrawing(self.name, amount),
            )
        ]

    async def exit_calls(self, account: str) -> list[Call]:
        withdraw = (self.token, MAX_UINT)
        return [Call(self.config.address, COMET_WITHDRAW, withdraw, description=exiting(self.name))]


def _curve(values: list[int]) -> tuple[int, int, int, int]:
    """(kink, base, slope low, slope high) of one Comet curve, as RAY annual rates."""
    kink, base, low, high = values
    return (
        kink * WAD_TO_RAY,
        base * PER_SECOND_WAD_TO_ANNUAL_RAY,
        low * PER_SECOND_WAD_TO_ANNUAL_RAY,
        high * PER_SECOND_WAD_TO_ANNUAL_RAY,
    )
