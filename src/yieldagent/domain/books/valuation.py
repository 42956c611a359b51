"""What a wallet holds, read from its chain.

A wallet's **value** is its idle balance of its token in the smart account plus its
positions in the protocols, interest included. Reward tokens are not part of it until
claimed and swapped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from yieldagent.domain.books.accounting import Source, withdrawable
from yieldagent.domain.books.wallets import Wallet
from yieldagent.domain.errors import ChainUnavailable
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.market.quotes import PoolQuote
from yieldagent.domain.ports.chain import BatchReads, Block


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

    def sources(self, idle: bool = True) -> list[Source]:
        """Where the funds sit (the idle balance first, unless ``idle`` is false), each
        with what its pool can give now; positions in pools without a quote give none."""
        positions = [
            Source(p, v, self.quotes[p].apr(), self.quotes[p].cash)
            for p, v in self.positions.items()
            if p in self.quotes
        ]
        return ([Source(None, self.idle, 0.0, self.idle)] if idle else []) + positions

    @property
    def withdrawable(self) -> int:
        """What a withdrawal could pay at once: the idle balance and each position within
        its pool's cash."""
        return withdrawable(self.sources())

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


def moment_of(timestamp: int) -> datetime:
    """A chain timestamp as a datetime in UTC."""
    return datetime.fromtimestamp(timestamp, UTC)


async def value(
    chain: MarketChain, wallet: Wallet, protocols: Iterable[str] = (), head: Block | None = None
) -> Valuation:
    """Reads what ``wallet`` holds now, and the pools of its positions and ``protocols``;
    ``head``: the chain's head, when the caller just read it."""
    head = head or await chain.head()
    # Both at the head the chain keeps: read together, in one round trip where it batches.
    idle, held = await asyncio.gather(
        chain.token_balance(wallet.token, wallet.address),
        chain.positions(wallet.address, wallet.token),
    )
    positions = {p.protocol: p.amount for p in held}
    names = sorted(set(positions) | set(wallet.selected_protocols) | set(protocols))
    quotes = {q.protocol: q for q in await chain.quotes(wallet.token, names)}
    return Valuation(idle, positions, quotes, moment_of(head.timestamp))


UNREAD = "the chain could not read the wallet's holdings"
"""Why a wallet a bulk read left out was not valued."""


async def value_many(
    chain: MarketChain, wallets: Sequence[Wallet], head: Block, partial: bool = False
) -> dict[int, Valuation]:
    """What each of ``wallets`` holds at ``head``, with the pools of its positions and
    selected protocols, by wallet id: as ``value`` reads them one by one, but a chain
    that reads holders in bulk (``BatchReads``) is asked once per token, and the pools
    once per token. A bulk read may leave out a holder whose reads failed: with
    ``partial`` its wallet is missing from the answer, else it raises ChainUnavailable."""
    moment = moment_of(head.timestamp)
    valued: dict[int, Valuation] = {}
    by_token: dict[str, list[Wallet]] = {}
    for wallet in wallets:
        by_token.setdefault(wallet.token, []).append(wallet)
    for token, group in by_token.items():
        if isinstance(chain, BatchReads):
            found = await chain.holdings(token, [w.address for w in group])
            if not partial and any(w.address not in found for w in group):
                raise ChainUnavailable(UNREAD)
            group = [w for w in group if w.address in found]
            held = {
                w.id: (found[w.address][0], {p.protocol: p.amount for p in found[w.address][1]})
                for w in group
            }
        else:
            held = {}
            for w in group:
                idle = await chain.token_balance(token, w.address)
                positions = {p.protocol: p.amount for p in await chain.positions(w.address, token)}
                held[w.id] = (idle, positions)
        names = sorted(
            {p for idle, positions in held.values() for p in positions}
            | {p for w in group for p in w.selected_protocols}
        )
        quotes = {q.protocol: q for q in await chain.quotes(token, names)}
        for w in group:
            idle, positions = held[w.id]
            valued[w.id] = Valuation(idle, positions, quotes, moment)
    return valued
