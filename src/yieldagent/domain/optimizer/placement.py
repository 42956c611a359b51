"""A wallet's valuation as the optimizer reads it: its candidates (the pools it may use,
each with what it holds there), and where its idle funds go."""

from __future__ import annotations

from collections.abc import Iterable

from yieldagent.domain.books.operations import Move
from yieldagent.domain.books.valuation import Valuation
from yieldagent.domain.books.wallets import Wallet
from yieldagent.domain.catalog import TokenInfo
from yieldagent.domain.constraints import Thresholds
from yieldagent.domain.errors import InvalidRequest
from yieldagent.domain.market.curves import Candidate
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.optimizer.rebalance import Costs, optimize
from yieldagent.domain.ports.chain import ChainKind
from yieldagent.domain.risk.survey import UNGUARDED, RiskView


async def moving_costs(chain: MarketChain, token: TokenInfo) -> Costs:
    """What moving funds of ``token`` costs on ``chain`` now, and what the token is worth."""
    gas = await chain.gas_cost(ChainKind.SUPPLY)
    return Costs(gas.usd, token.price_usd, token.decimals)


def candidates(valuation: Valuation, protocols: Iterable[str]) -> list[Candidate]:
    """The pools of ``protocols``, each with what the wallet holds there."""
    return [
        Candidate(p, valuation.quotes[p], valuation.positions.get(p, 0))
        for p in protocols
        if p in valuation.quotes
    ]


def placement(
    wallet: Wallet,
    valuation: Valuation,
    costs: Costs,
    paused: frozenset[str] = frozenset(),
    risk: RiskView = UNGUARDED,
) -> list[Move]:
    """Where the wallet's idle funds go, as the optimizer plans within the risk guards
    (``risk``): where the best allocation wants more, or with a rebalance when the rules
    require one (a minimum position, say) or when it pays. Nothing moves without idle
    funds."""
    if valuation.idle <= 0:
        return []
    protocols = [p for p in wallet.selected_protocols if p not in paused]
    found = candidates(valuation, protocols)
    thresholds = risk.thresholds(wallet.id, Thresholds())
    try:
        rules = risk.constrain(wallet.token, wallet.constraints, found, valuation.total)
        plan = optimize(valuation.positions, valuation.idle, found, rules, costs, thresholds)
    except InvalidRequest:
        if not risk.enabled:
            raise
        rules = risk.constrain(wallet.token, wallet.constraints, found, valuation.total, relax=True)
        plan = optimize(valuation.positions, valuation.idle, found, rules, costs, thresholds)
    return list(plan.moves)
