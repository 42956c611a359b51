"""What a wallet holds, read from its chain, and placing its idle funds.

A wallet's **value** is its idle balance of its token in the smart account plus its
positions in the protocols, interest included. Reward tokens are not part of it until
claimed and swapped.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from yieldagent.chain.port import ChainPort
from yieldagent.domain.allocation import Candidate, allocate, weighted_apr
from yieldagent.domain.market import PoolQuote
from yieldagent.domain.wallets import TransactionRecord, Wallet


@dataclass(frozen=True, slots=True)
class Valuation:
    """A wallet's holdings at one moment, with the pools they sit in."""

    idle: int
    positions: dict[str, int]
    quotes: dict[str, PoolQuote]
    moment: datetime

    @property
    def total(self) -> int:
        """Idle funds plus positions."""
        return self.idle + sum(self.positions.values())

    def apr(self) -> float:
        """The holdings' APR in percent, idle funds earning nothing."""
        total = self.total
        if total == 0:
            return 0.0
        earning = sum(
            self.quotes[p].apr() * amount
            for p, amount in self.positions.items()
            if p in self.quotes
        )
        return earning / total

    def candidates(self, protocols: Iterable[str]) -> list[Candidate]:
        """The pools of ``protocols``, each with what the wallet holds there."""
        return [
            Candidate(p, self.quotes[p], self.positions.get(p, 0))
            for p in protocols
            if p in self.quotes
        ]


def moment_of(timestamp: int) -> datetime:
    """A chain timestamp as a datetime in UTC."""
    return datetime.fromtimestamp(timestamp, UTC)


async def value(chain: ChainPort, wallet: Wallet, protocols: Iterable[str] = ()) -> Valuation:
    """Reads what ``wallet`` holds now, and the pools of its positions and ``protocols``."""
    head = await chain.head()
    idle = await chain.token_balance(wallet.token, wallet.address)
    positions = {p.protocol: p.amount for p in await chain.positions(wallet.address, wallet.token)}
    names = sorted(set(positions) | set(wallet.selected_protocols) | set(protocols))
    quotes = {q.protocol: q for q in await chain.quotes(wallet.token, names)}
    return Valuation(idle, positions, quotes, moment_of(head.timestamp))


async def place_idle(
    chain: ChainPort, wallet: Wallet, valuation: Valuation, correlation_id: str
) -> list[TransactionRecord]:
    """Supplies the idle funds where the wallet's best allocation wants more.

    Existing positions are not moved (rebalancing does that); the idle funds go to the
    protocols furthest below their target, in that order.
    """
    if valuation.idle <= 0:
        return []
    candidates = valuation.candidates(wallet.selected_protocols)
    target = allocate(valuation.total, candidates, wallet.constraints)
    gaps = sorted(
        ((amount - valuation.positions.get(p, 0), p) for p, amount in target.items()),
        reverse=True,
    )
    records = []
    left = valuation.idle
    for gap, protocol in gaps:
        amount = min(gap, left)
        if amount <= 0:
            continue
        apr = valuation.quotes[protocol].apr(amount)
        receipt = await chain.supply(wallet.address, protocol, wallet.token, amount)
        records.append(
            TransactionRecord(
                action="deposit",
                token=wallet.token,
                amount=amount,
                tx_hash=receipt.tx_hash,
                date=moment_of(receipt.timestamp),
                protocol=protocol,
                apr=apr,
                block_number=receipt.block_number,
                correlation_id=correlation_id,
            )
        )
        left -= amount
    return records


def expected_apr(valuation: Valuation, wallet: Wallet) -> float:
    """The APR the wallet's best allocation would earn, after its own rate impact."""
    candidates = valuation.candidates(wallet.selected_protocols)
    return weighted_apr(allocate(valuation.total, candidates, wallet.constraints), candidates)
