"""The chain port for one simulated chain."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from decimal import Decimal

from yieldagent.chain.simulated.genesis import reward_token
from yieldagent.chain.simulated.market import LOSS, SimulatedMarket
from yieldagent.chain.simulated.pools import quote_of
from yieldagent.chain.simulated.risk import Scenarios
from yieldagent.domain.market.quotes import PoolQuote
from yieldagent.domain.market.rate_models import SECONDS_PER_YEAR
from yieldagent.domain.market.readings import PoolReading
from yieldagent.domain.ports.accounts import SmartAccount
from yieldagent.domain.ports.chain import (
    Block,
    ChainKind,
    ChainTx,
    ClaimReceipt,
    ContractCall,
    GasCost,
    Position,
    RewardAmount,
    Send,
    SwapReceipt,
    Transfer,
    TxReceipt,
)
from yieldagent.simulated_world.state import MarketError, MinedTx, PoolState

# Gas units of each action, and each chain's gas price (wei) and native token price.
GAS_UNITS = {
    "supply": 180_000,
    "withdraw": 200_000,
    "swap": 160_000,
    "transfer": 65_000,
    "claim": 150_000,
    "approve": 46_000,
}
GAS_PRICE_WEI = {
    1: 8_000_000_000,
    137: 30_000_000_000,
    8453: 10_000_000,
    42161: 10_000_000,
    84532: 10_000_000,
    11155111: 8_000_000_000,
}
NATIVE_PRICE_USD = {
    1: 3000.0,
    137: 0.5,
    8453: 3000.0,
    42161: 3000.0,
    84532: 3000.0,
    11155111: 3000.0,
}


def _receipt(row: MinedTx) -> TxReceipt:
    return TxReceipt(row.tx_hash, row.block_number, row.timestamp)


def _sent(send: Send, row: MinedTx | MarketError) -> TxReceipt | Exception:
    """A send's receipt (a whole withdrawal's says how much it took), or its refusal."""
    if isinstance(row, MarketError):
        return row
    whole = send.action == ChainKind.WITHDRAW and send.whole
    return replace(_receipt(row), amount=row.amount) if whole else _receipt(row)


def _chain_tx(row: MinedTx) -> ChainTx:
    return ChainTx(
        row.tx_hash,
        ChainKind(row.kind),
        row.token,
        row.sender,
        row.recipient,
        row.amount,
        row.block_number,
        row.timestamp,
        token_out=row.token_out,
        amount_out=row.amount_out,
    )


class SimulatedChain:
    """One chain of the simulated world, behind the chain port."""

    def __init__(self, market: SimulatedMarket, chain_id: int) -> None:
        self.market = market
        self.chain_id = chain_id

    async def head(self) -> Block:
        number, timestamp = self.market.head(self.chain_id)
        return Block(number, timestamp)

    async def token_balance(self, token: str, holder: str) -> int:
        return self.market.balance(self.chain_id, token, holder)

    async def positions(self, holder: str, token: str) -> list[Position]:
        return [
            Position(protocol, token, amount)
            for protocol, amount in self.market.positions(self.chain_id, token, holder)
        ]

    async def holdings(
        self, token: str, holders: Sequence[str]
    ) -> dict[str, tuple[int, list[Position]]]:
        """Each holder's balance of ``token`` and positions in its pools, read at once (see
        ``domain.books.valuation.BatchReads``)."""
        return {
            holder: (idle, [Position(protocol, token, amount) for protocol, amount in held])
            for holder, (idle, held) in self.market.holdings(self.chain_id, token, holders).items()
        }

    async def history(self, holder: str, since_block: int) -> list[ChainTx]:
        rows = self.market.history(self.chain_id, holder, since_block)
        return [_chain_tx(row) for row in rows if row.kind != LOSS]

    async def histories(self, holders: Sequence[str], since_block: int) -> dict[str, list[ChainTx]]:
        """Each holder's history, read at once (see ``domain.ports.chain.BatchHistory``)."""
        return {
            holder: [_chain_tx(row) for row in rows if row.kind != LOSS]
            for holder, rows in self.market.histories(self.chain_id, holders, since_block).items()
        }

    async def find_transfer(self, tx_hash: str) -> Transfer | None:
        row = self.market.transaction(tx_hash)
        if row is None or row.chain_id != self.chain_id or row.kind not in ("transfer", "mint"):
            return None
        return Transfer(
            row.tx_hash,
            row.token,
            row.sender,
            row.recipient,
            row.amount,
            row.block_number,
            row.timestamp,
        )

    async def quotes(self, token: str, protocols: Sequence[str]) -> list[PoolQuote]:
        wanted = set(protocols)
        return [
            replace(quote_of(pool), reward_yearly=self._reward_yearly(pool))
            for pool in self.market.pools_now(self.chain_id, token)
            if pool.protocol in wanted
        ]

    def _reward_yearly(self, pool: PoolState) -> int:
        """A year of the pool's reward emissions in its token's smallest units, at the
        tokens' prices (``domain.market.quotes.PoolQuote.reward_yearly``)."""
        if pool.reward_token is None or pool.reward_rate <= 0:
            return 0
        reward_price, reward_decimals = self.market.price(self.chain_id, pool.reward_token)
        token_price, token_decimals = self.market.price(self.chain_id, pool.token)
        value = (
            Decimal(pool.reward_rate * SECONDS_PER_YEAR)
            * reward_price
            / 10**reward_decimals
            / token_price
            * 10**token_decimals
        )
        return int(value)

    async def pool_readings(self, token: str, protocols: Sequence[str]) -> list[PoolReading]:
        return Scenarios(self.market).readings(self.chain_id, token, protocols)

    async def check_account(self, account: SmartAccount) -> None:
        """Every account is a simulated one: the service acts through any of them."""

    async def prepare_account(self, account: SmartAccount) -> None:
        """Nothing to do: simulated accounts need no code."""

    async def revocation(self, holder: str) -> str | None:
        """None: nobody revokes the operator of a simulated account."""
        return None

    async def supply(self, holder: str, protocol: str, token: str, amount: int) -> TxReceipt:
        return _receipt(self.market.supply(self.chain_id, holder, protocol, token, amount))

    async def withdraw(
        self, holder: str, protocol: str, token: str, amount: int, whole: bool = False
    ) -> TxReceipt:
        if whole:
            held = dict(self.market.positions(self.chain_id, token, holder))
            amount = held.get(protocol, 0)
        row = self.market.withdraw(self.chain_id, holder, protocol, token, amount)
        return replace(_receipt(row), amount=amount) if whole else _receipt(row)

    async def send_many(self, sends: Sequence[Send]) -> list[TxReceipt | Exception]:
        """Each send as its own transaction, all in one unit of the simulated world (see
        ``domain.ports.chain.BatchWrites``)."""
        mined = self.market.send_many(self.chain_id, sends)
        return [_sent(send, row) for send, row in zip(sends, mined, strict=True)]

    async def plan_calls(
        self, holder: str, action: str, protocol: str, token: str, amount: int
    ) -> list[ContractCall]:
        """None: the simulated market has no contracts to call."""
        return []

    async def quote_swap(self, token_in: str, token_out: str, amount_in: int) -> int:
        return self.market.quote_swap(self.chain_id, token_in, token_out, amount_in)

    async def swap(
        self, holder: str, token_in: str, token_out: str, amount_in: int, min_out: int
    ) -> SwapReceipt:
        row = self.market.swap(self.chain_id, holder, token_in, token_out, amount_in, min_out)
        assert row.amount_out is not None
        return SwapReceipt(_receipt(row), row.amount_out)

    async def transfer(self, token: str, sender: str, recipient: str, amount: int) -> TxReceipt:
        return _receipt(self.market.transfer(self.chain_id, token, sender, recipient, amount))

    async def pay(
        self, token: str, holder: str, owner: str, amount: int, collector: str, fee: int
    ) -> tuple[TxReceipt, TxReceipt | None]:
        """Two transfers, the owner's first."""
        paid = await self.transfer(token, holder, owner, amount)
        return paid, (await self.transfer(token, holder, collector, fee) if fee else None)

    def _reward(self, token: str, amount: int) -> RewardAmount:
        info = reward_token(self.chain_id, token)
        assert info is not None, f"{token} is not a reward token"
        return RewardAmount(token, info.symbol, amount, info.decimals, info.price_usd)

    async def accrued_rewards(self, holder: str) -> list[RewardAmount]:
        return [
            self._reward(token, amount)
            for token, amount in self.market.accrued_rewards(self.chain_id, holder).items()
        ]

    async def claim_rewards(self, holder: str) -> ClaimReceipt:
        rows = self.market.claim_rewards(self.chain_id, holder)
        if not rows:
            number, timestamp = self.market.head(self.chain_id)
            return ClaimReceipt(TxReceipt("", number, timestamp), ())
        return ClaimReceipt(
            _receipt(rows[-1]), tuple(self._reward(row.token, row.amount) for row in rows)
        )

    async def gas_cost(self, action: str) -> GasCost:
        gas = GAS_UNITS[action]
        wei = gas * GAS_PRICE_WEI[self.chain_id]
        return GasCost(gas, wei, wei / 10**18 * NATIVE_PRICE_USD[self.chain_id])
