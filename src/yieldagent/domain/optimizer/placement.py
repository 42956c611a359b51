"""A wallet's valuation as the optimizer reads it: its candidates (the pools it may use,
each with what it holds there), and where its idle funds go within the risk guards.

The optimizer does not depend on the guards: it names what it asks of them (``Guards``),
and the guards' view of a chain (``domain.risk.survey.RiskView``) answers it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from yieldagent.domain.books.operations import Move
from yieldagent.domain.books.valuation import Valuation
from yieldagent.domain.books.wallets import Wallet
from yieldagent.domain.catalog import TokenInfo
from yieldagent.domain.constraints import Constraints, Thresholds
from yieldagent.domain.errors import InvalidRequest
from yieldagent.domain.market.curves import Candidate
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.optimizer.rebalance import Costs, optimize
from yieldagent.domain.ports.chain import ChainKind


class Guards(Protocol):
    """What the optimizer asks of the risk guards when it places a wallet's funds."""

    @property
    def enabled(self) -> bool:
        """False: no guard applies."""

    def constrain(
        self,
        token: str,
        rules: Constraints,
        candidates: Sequence[Candidate],
        total: int,
        *,
        relax: bool = False,
    ) -> Constraints:
        """A wallet's ``rules`` with the guards' exclusions and caps added, for a wallet
        worth ``total`` choosing among ``candidates`` (``relax``: its minimums dropped)."""

    def thresholds(self, wallet_id: int, thresholds: Thresholds) -> Thresholds:
        """``thresholds`` for this wallet now (no gain pays for a move while it must
        wait)."""


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
    risk: Guards | None = None,
) -> list[Move]:
    """Where the wallet's idle funds go, as the optimizer plans within the risk guards
    (``risk``): where the best allocation wants more, or with a rebalance when the rules
    require one (a minimum position, say) or when it pays. Nothing moves without idle
    funds."""
    if valuation.idle <= 0:
        return []
    protocols = [p for p in wallet.selected_protocols if p not in paused]
    found = candidates(valuation, protocols)
    if risk is None:  # nobody guards this placement
        rules = wallet.constraints
        return list(optimize(valuation.positions, valuation.idle, found, rules, costs).moves)
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
