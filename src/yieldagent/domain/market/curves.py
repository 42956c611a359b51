"""What an amount earns in one pool: a pool's rate and yield curves after the wallet's own
change of position, as the allocation search reads them.

A ``Candidate`` is a protocol the funds may go to, its pool, and what the wallet holds
there: ``apr(a)`` is the pool's rate once the wallet holds ``a`` there (after the change
``a - current``), and the yearly yield on ``a`` is ``a × apr(a)``. The curves bend where
that change takes a market of the pool across a kink of its rate model, or fills it
(``Candidate.bends``).

The search reads these curves at many points, so they are quick and remembered:
``rate_function`` gives ``PoolQuote.rate``'s integers from per-market closures whose
constants are worked out once, a no-fee pool of one market reads its market's rate with
no wrapper, a rate's percent is ``rate / PERCENT``, and ``Yields`` remembers each
candidate's yields and APRs per amount, so that the optimizer prices its plan with the
figures the search compared.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from yieldagent.domain.market.quotes import PoolQuote
from yieldagent.domain.market.rate_models import RAY, supply_rate_function

PERCENT = RAY // 100
"""``rate / PERCENT`` is ``rate * 100 / RAY`` (``apr_percent``), the same float for one
operation less: Python rounds a quotient of ints correctly, and both are the same fraction."""


def _single_market(quote: PoolQuote) -> tuple[Callable[[int], int], int, int] | None:
    """For a pool of one market: the market's supply rate as a function of its supply, its
    supply, and the change of position at or below which the market or the pool's holding
    is empty (the pool then pays 0). None for a pool of several markets."""
    if len(quote.markets) != 1:
        return None
    [market] = quote.markets
    rate = supply_rate_function(quote.model, market.borrows, market.rate_at_target)
    return rate, market.supply, -min(market.supply, market.held)


def rate_function(quote: PoolQuote) -> Callable[[int], int]:
    """``quote.rate``: the pool's supply rate (annual, RAY) after a change of position, the
    same integers, with each market's constants worked out once (see
    ``rate_models.supply_rate_function``)."""
    return _rate_function(quote, _single_market(quote))


def _rate_function(
    quote: PoolQuote, single: tuple[Callable[[int], int], int, int] | None
) -> Callable[[int], int]:
    """``rate_function``, given ``_single_market(quote)``."""
    keep = RAY - quote.fee
    if single is not None:
        rate, supply, emptied = single
        if keep == RAY:  # no fee: (rate * RAY) // RAY is the rate

            def single_no_fee(delta: int) -> int:
                return 0 if delta <= emptied else rate(supply + delta)

            return single_no_fee

        def single_with_fee(delta: int) -> int:
            return 0 if delta <= emptied else rate(supply + delta) * keep // RAY

        return single_with_fee
    markets = quote.markets
    rates = [supply_rate_function(quote.model, m.borrows, m.rate_at_target) for m in markets]
    held_total = sum(m.held for m in markets)
    first_held, first_supply, first_rate = markets[0].held, markets[0].supply, rates[0]
    # the other markets' shares, rounded down; the first takes the rest (``quotes.spread``)
    others = [(m.held, m.supply, rate) for m, rate in zip(markets[1:], rates[1:], strict=True)]

    def spread(delta: int) -> int:
        total = held_total + delta  # what the pool then holds: its markets' weights
        if total <= 0:
            return 0
        gross, rest = 0, delta  # integers: the order of the sum does not matter
        for held, supply, rate in others:
            part = delta * held // held_total if held_total else 0
            rest -= part
            if held + part > 0 and supply + part > 0:
                gross += (held + part) * rate(supply + part)
        if first_held + rest > 0 and first_supply + rest > 0:
            gross += (first_held + rest) * first_rate(first_supply + rest)
        return gross // total * keep // RAY

    return spread


@dataclass(frozen=True, slots=True)
class Candidate:
    """A protocol the funds may go to, its pool, and what the wallet holds there now."""

    protocol: str
    quote: PoolQuote
    current: int = 0

    def apr(self, amount: int) -> float:
        """APR in percent if the wallet held ``amount`` here."""
        return self.quote.apr(amount - self.current)

    def yearly_yield(self, amount: int) -> float:
        """Yearly yield in token units if the wallet held ``amount`` here."""
        return amount * self.apr(amount) / 100 if amount > 0 else 0.0

    def bends(self) -> list[int]:
        """The holdings at which the yield curve bends (a market of the pool reaches a kink
        of its rate model or fills up): its peaks and troughs lie there."""
        return [self.current + delta for delta in self.quote.kinks() if self.current + delta > 0]


class Yields:
    """Yearly yields and APRs of candidates (by protocol), remembered: the search asks for
    the same points often, and the optimizer's figures for the allocation it found."""

    def __init__(self, candidates: Mapping[str, Candidate]) -> None:
        self._candidates = candidates
        self._curves: dict[str, tuple[Callable[[int], float], Callable[[int], float]]] = {}
        self._yearly: dict[str, Callable[[int], float]] = {}  # the curves' first halves
        self._bends: dict[str, list[int]] = {}

    def __contains__(self, name: object) -> bool:
        return name in self._candidates

    def bends(self, name: str) -> list[int]:
        """The candidate's bends (see ``Candidate.bends``)."""
        found = self._bends.get(name)
        if found is None:
            found = self._bends[name] = self._candidates[name].bends()
        return found

    def __call__(self, name: str, amount: int) -> float:
        """``Candidate.yearly_yield``, the same floats."""
        curve = self._yearly.get(name)
        if curve is None:
            curve = self._curve(name)[0]
        return curve(amount)

    def curve(self, name: str) -> Callable[[int], float]:
        """``Candidate.yearly_yield`` of one candidate, remembered."""
        curve = self._yearly.get(name)
        if curve is None:
            curve = self._curve(name)[0]
        return curve

    def apr(self, name: str, amount: int) -> float:
        """``Candidate.apr``, the same float, remembered."""
        return self._curve(name)[1](amount)

    def _curve(self, name: str) -> tuple[Callable[[int], float], Callable[[int], float]]:
        found = self._curves.get(name)
        if found is None:
            found = self._curves[name] = _curve(self._candidates[name])
            self._yearly[name] = found[0]
        return found

    def ceiling(self, name: str, held: int, step: int) -> float:
        """At least ``self(name, held + step) - self(name, held)``: a pool's rate does not
        rise as more is supplied to it, so ``step`` more earns at most the rate ``held``
        earns (or one unit, when nothing is held), with room for float rounding. Infinite
        when that rate is 0: a pool the wallet would empty, where this does not hold."""
        return (step + 1e-12 * (held + step)) * self.per_unit(name, held)

    def per_unit(self, name: str, held: int) -> float:
        """At least the yearly yield per unit of any holding from ``held`` up (from one
        unit, when ``held`` is 0): the yield per unit ``held`` earns, as a pool's rate does
        not rise with its supply; infinite when that is 0 (a pool the wallet would empty,
        where this does not hold)."""
        per_unit = self(name, held) / held if held > 0 else self(name, 1)
        return per_unit * (1 + 1e-9) if per_unit > 0 else math.inf


def _curve(
    candidate: Candidate,
) -> tuple[Callable[[int], float], Callable[[int], float]]:
    """``candidate.yearly_yield`` and ``candidate.apr``, the same floats, remembered per
    amount."""
    quote, current = candidate.quote, candidate.current
    single = _single_market(quote)
    known: dict[int, float] = {}  # yearly yields
    aprs: dict[int, float] = {}

    if single is not None and quote.fee == 0:
        # ``rate_function``'s no-fee pool of one market, inlined: a call less per point.
        # As functions of the amount: the market's supply, and the most that earns nothing.
        market_rate, supply, emptied = single
        offset, lowest = supply - current, emptied + current
        empty = max(lowest, 0)

        def apr_single(amount: int) -> float:
            found = aprs.get(amount)
            if found is None:
                rate = 0 if amount <= lowest else market_rate(offset + amount)
                found = aprs[amount] = rate / PERCENT
                if amount > 0 and amount not in known:  # the yield, as yearly_yield_single
                    known[amount] = amount * found / 100
            return found

        def yearly_yield_single(amount: int) -> float:
            found = known.get(amount)
            if found is None:
                if amount > empty:
                    found = amount * (market_rate(offset + amount) / PERCENT) / 100
                else:
                    found = 0.0
                known[amount] = found
            return found

        return yearly_yield_single, apr_single

    rate = _rate_function(quote, single)

    def apr(amount: int) -> float:
        found = aprs.get(amount)
        if found is None:
            found = aprs[amount] = rate(amount - current) / PERCENT
            if amount > 0 and amount not in known:  # the yield, as yearly_yield
                known[amount] = amount * found / 100
        return found

    def yearly_yield(amount: int) -> float:
        found = known.get(amount)
        if found is None:
            found = amount * (rate(amount - current) / PERCENT) / 100 if amount > 0 else 0.0
            known[amount] = found
        return found

    return yearly_yield, apr


def weighted_apr(allocation: Mapping[str, int], candidates: Sequence[Candidate]) -> float:
    """The allocation's APR in percent, each pool priced after the allocation's own change."""
    total = sum(allocation.values())
    if total == 0:
        return 0.0
    by_name = {c.protocol: c for c in candidates}
    return sum(amount * by_name[name].apr(amount) for name, amount in allocation.items()) / total
