"""Rate quotes: a pool as a chain shows it at one block, and the supply rate it would pay
after we add or remove an amount (our own rate impact).

A *pool* is what an agent supplies to (Aave's USDC reserve, Compound's cUSDCv3, a Morpho
vault). It lends through one or more *markets* (a vault's Morpho Blue markets; every other
protocol has one). A quote holds only what a chain can tell: the pool's rate model with
its on-chain parameters, its fee, and for each market the total supplied and borrowed,
the adaptive model's rate at target, and what the pool itself holds there.

A pool spreads a deposit over its markets in proportion to what it holds in each (all to
the first if it holds nothing) and takes a withdrawal the same way: the allocation rule
of the devnet's vault, and the simulator's. Rates are annual, RAY-scaled integers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from yieldagent.domain.market.rate_models import RAY, RateModel, apr_percent, apy_from_apr


class LendingMarket(Protocol):
    """What a rate quote needs of one market (a quote's ``MarketQuote``, or the
    simulator's live state)."""

    @property
    def supply(self) -> int:
        """Underlying supplied to the market by everyone, borrows included."""

    @property
    def borrows(self) -> int:
        """Underlying borrowed from the market."""

    @property
    def rate_at_target(self) -> int:
        """The adaptive model's state (annual, RAY); 0 for models that do not adapt."""

    @property
    def held(self) -> int:
        """What the pool holds of the market's supply."""


@dataclass(frozen=True, slots=True)
class MarketQuote:
    """One market of a pool, as read from the chain at one block."""

    name: str
    supply: int
    borrows: int
    rate_at_target: int = 0
    held: int = -1
    """What the pool holds of ``supply``; -1 (the default) means all of it."""

    def __post_init__(self) -> None:
        if self.held < 0:
            object.__setattr__(self, "held", self.supply)

    def cash(self) -> int:
        """What the market can pay out now."""
        return max(self.supply - self.borrows, 0)


def spread(markets: Sequence[LendingMarket], amount: int) -> list[int]:
    """Splits ``amount`` (negative: a withdrawal) over ``markets`` in proportion to what the
    pool holds in each; the rounding remainder (and everything, if it holds nothing) goes to
    the first."""
    total = sum(m.held for m in markets)
    if total == 0:
        return [amount] + [0] * (len(markets) - 1)
    parts = [amount * m.held // total for m in markets]
    parts[0] += amount - sum(parts)
    return parts


def pool_rate(model: RateModel, fee: int, markets: Sequence[LendingMarket], delta: int = 0) -> int:
    """The pool's supply rate (annual, RAY), net of its fee, after adding ``delta``
    (negative: removing) spread over its markets by ``spread``: the markets' supply rates
    weighted by what the pool then holds in each."""
    if len(markets) == 1:  # most pools: no spreading
        [market] = markets
        supply = market.supply + delta
        if supply <= 0 or market.held + delta <= 0:
            return 0
        gross = model.rates(supply, market.borrows, market.rate_at_target).supply
        return gross * (RAY - fee) // RAY
    parts = spread(markets, delta)
    weights = [m.held + d for m, d in zip(markets, parts, strict=True)]
    total = sum(weights)
    if total <= 0:
        return 0
    gross = (
        sum(
            w * model.rates(m.supply + d, m.borrows, m.rate_at_target).supply
            for w, d, m in zip(weights, parts, markets, strict=True)
            if w > 0 and m.supply + d > 0
        )
        // total
    )
    return gross * (RAY - fee) // RAY


def kink_deltas(model: RateModel, markets: Sequence[LendingMarket]) -> list[int]:
    """The changes of position (negative: removing) at which one of the markets reaches a
    kink of its rate model or becomes full: between two of them every market's rate follows
    one smooth piece of its curve. Rounded both ways, as ``spread`` splits in whole units."""
    if len(markets) == 1:  # most pools: the market takes the whole change, no rounding
        [market] = markets
        if market.borrows <= 0:
            return []
        scaled = market.borrows * RAY
        return sorted({-(-scaled // kink) - market.supply for kink in model.kinks})
    total = sum(m.held for m in markets)
    found: set[int] = set()
    kinks = model.kinks
    for market in markets:
        if market.borrows <= 0 or (market.held <= 0 < total):
            continue
        scaled = market.borrows * RAY
        for kink in kinks:
            # the market's supply at which borrows / supply is the kink
            needed = -(-scaled // kink) - market.supply
            if total <= 0:
                found.add(needed)
                continue
            delta, exact = divmod(needed * total, market.held)
            found.update((delta, delta + 1) if exact else (delta,))
    return sorted(found)


@dataclass(frozen=True, slots=True)
class PoolQuote:
    """A pool frozen at one block, able to say what rate an added amount would earn."""

    protocol: str
    token: str
    model: RateModel
    markets: tuple[MarketQuote, ...]
    fee: int = 0
    """The pool's own fee on interest (a vault's), RAY-scaled."""
    exit_rate: int = RAY
    """What a withdrawal pays per unit of the value it takes out, RAY-scaled: ``RAY`` for
    a pool that pays at its share price, less for one that pays less (a vault redeeming
    below its share price, a pool that charges for leaving)."""
    reward_yearly: int | None = None
    """What the pool's reward emissions that the service collects pay all its suppliers
    in a year, valued in the pool's token's smallest units at the reward token's price:
    0 for a pool without such a program, None where the chain cannot tell."""

    @property
    def total_supply(self) -> int:
        """Underlying the pool holds, interest included (a vault's total assets)."""
        return sum(m.held for m in self.markets)

    @property
    def cash(self) -> int:
        """What the pool can pay out now: its holding in each market, within that market's
        cash."""
        return sum(min(m.held, m.cash()) for m in self.markets)

    def paid_out(self, amount: int) -> int:
        """What a withdrawal taking ``amount`` of value out of the pool pays."""
        return amount if self.exit_rate == RAY else amount * self.exit_rate // RAY

    def rate(self, delta: int = 0) -> int:
        """Supply rate (annual, RAY) after adding ``delta`` (negative: removing)."""
        return pool_rate(self.model, self.fee, self.markets, delta)

    def apr(self, delta: int = 0) -> float:
        """Supply APR in percent after adding ``delta`` (negative: removing)."""
        return apr_percent(self.rate(delta))

    def reward_apr(self) -> float | None:
        """The reward emissions' yearly yield in percent of what the pool holds (simple:
        rewards are paid in another token and compound only once claimed and swapped);
        None when the chain cannot tell or the pool holds nothing."""
        supplied = self.total_supply
        if self.reward_yearly is None or supplied <= 0:
            return None
        return self.reward_yearly * 100 / supplied

    def moved(self, delta: int) -> PoolQuote:
        """The pool after we add ``delta`` (negative: remove), spread over its markets as
        the pool spreads it (``spread``)."""
        if not delta:
            return self
        parts = spread(self.markets, delta)
        markets = tuple(
            replace(m, supply=m.supply + part, held=m.held + part)
            for m, part in zip(self.markets, parts, strict=True)
        )
        return replace(self, markets=markets)

    def kinks(self) -> list[int]:
        """The changes of position at which the rate's curve bends (see ``kink_deltas``)."""
        return kink_deltas(self.model, self.markets)

    def market_apys(self) -> list[tuple[str, float]]:
        """Each market's current supply APY in percent (before the pool's fee)."""
        return [
            (m.name, apy_from_apr(self.model.rates(m.supply, m.borrows, m.rate_at_target).supply))
            for m in self.markets
        ]
