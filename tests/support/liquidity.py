"""Draining a simulated pool's cash and refilling it, through the market's own actions.

How the simulator models liquidity (``domain/market.py``): a pool lends through one or
more markets (three for a Morpho vault), each with a ``supply`` and ``borrows``. A
market's cash is ``supply − borrows``; a pool's cash (``PoolState.cash()``, what
``PoolQuote.cash`` shows the service) is the sum. ``withdraw`` refuses any amount above
the pool's cash ("not enough liquidity in the pool"). Borrows move only at each
simulated hour's step: they close half the gap to ``target utilization × supply``, the
target drifting around the pool's mean (0.78 to 0.90 on Base). Nothing borrows or repays
between steps, so while simulated time stands still (the tests' market) a pool's cash
changes only through supplies and withdrawals.

A holder can withdraw only what it supplied, so no one can take a pool's cash below what
it was without time passing. Hence ``drain``: another lender (``LENDER``) supplies three
times the pool's size, a simulated day passes (borrowers follow the larger supply:
utilization back near its target, so the pool's cash grows by far less than the lender
put in), and the lender withdraws all the cash but ``leave``. The pool then holds exactly
``leave`` of cash, with utilization near 100 %. ``refill`` is the lender supplying again:
the cash grows by that amount at once. (Letting time pass would refill it too, as
borrowers repay towards the target utilization, but more slowly and less exactly.)
"""

from __future__ import annotations

from support.wallet_setup import BASE, BASE_USDC, DAY
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.simulated_world.state import PoolState

LENDER = "0x" + "1e" * 20
"""Another supplier of the pools, whose moves drain and refill a pool's cash."""
BANK = "0x" + "ba" * 20
"""Where the lender's funds come from (the faucet mints to it first)."""


def pool(market: SimulatedMarket, protocol: str) -> PoolState:
    """The Base USDC pool of ``protocol``, as it is now."""
    (found,) = [p for p in market.pools_now(BASE, BASE_USDC) if p.protocol == protocol]
    return found


def pool_cash(market: SimulatedMarket, protocol: str) -> int:
    """What can be withdrawn from ``protocol``'s Base USDC pool now."""
    return pool(market, protocol).cash()


def drain(market: SimulatedMarket, protocol: str, leave: int) -> None:
    """Leaves exactly ``leave`` of cash in ``protocol``'s Base USDC pool; simulated time
    moves one day on (see the module's docstring)."""
    size = 3 * pool(market, protocol).total_supply()
    market.deposit_from(BASE, BASE_USDC, BANK, LENDER, size)
    market.supply(BASE, LENDER, protocol, BASE_USDC, size)
    market.advance(DAY)
    take = pool_cash(market, protocol) - leave
    (lent,) = [a for p, a in market.positions(BASE, BASE_USDC, LENDER) if p == protocol]
    assert 0 < take <= lent, f"the lender cannot take {take} of its {lent} from {protocol}"
    market.withdraw(BASE, LENDER, protocol, BASE_USDC, take)
    assert pool_cash(market, protocol) == leave


def refill(market: SimulatedMarket, protocol: str, amount: int) -> None:
    """Adds ``amount`` of cash to ``protocol``'s Base USDC pool: the lender supplies it."""
    before = pool_cash(market, protocol)
    market.supply(BASE, LENDER, protocol, BASE_USDC, amount)
    assert pool_cash(market, protocol) == before + amount
