"""The plan of one run: what a wallet's run is to do, given what it holds.

Pure: no chain, no database. Given a wallet, its valuation, the protocols paused on its
chain, what moving costs and when a rebalance pays, a run either moves nothing
(``no_action`` and why, or ``failed`` when the rules cannot be met) or makes moves, each
a planned step with its pool's APR as planned.

The cheap check comes first: when the optimality check (``optimizer.optimality``) shows
that no move can pay, the full search is spared and the run answers ``SETTLED``. Else the
optimizer plans over the wallet's protocols less the paused ones, and its moves are cut to
what the pools' cash can carry now (``within_liquidity``).

A ``Planner`` plans the runs of one chain at one moment: a run on request (one wallet), or
every wallet of a scheduled batch. Wallets with equal inputs share one settled check, and
each plan sees the pools as the plans before it leave them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeAlias

from yieldagent.domain.agent.rounds import PlannedRun
from yieldagent.domain.books.operations import Move, OperationStatus, Step, StepAction
from yieldagent.domain.books.valuation import Valuation
from yieldagent.domain.books.wallets import Wallet
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.errors import InvalidRequest
from yieldagent.domain.optimizer.curves import Candidate
from yieldagent.domain.optimizer.optimality import is_settled
from yieldagent.domain.optimizer.placement import candidates
from yieldagent.domain.optimizer.quotes import PoolQuote
from yieldagent.domain.optimizer.rebalance import Costs, Plan, Thresholds, optimize

SETTLED = "nothing to move: no move can pay (optimality check)"
"""A no_action run's reason when the optimality check spared the full search (the plan
then carries no APR figures)."""


@dataclass(frozen=True, slots=True)
class NoMoves:
    """A run that moves nothing: its outcome (``no_action`` or ``failed``) and why."""

    status: str
    reason: str


Decision: TypeAlias = NoMoves | PlannedRun
"""What a run is to do: move nothing (and why), or make a planned run's moves."""


class Planner:
    """Plans runs on one chain at one moment, with the chain's paused protocols and the
    agent's thresholds.

    The settled check's answer is kept by what it depends on (``_inputs``, and the costs):
    the valuations this planner is given for one token must read the same pools, as one
    chain's do at one head. The full search of each wallet sees the pools as the moves
    planned before it leave them."""

    def __init__(self, paused: frozenset[str], thresholds: Thresholds) -> None:
        self._paused = paused
        self._thresholds = thresholds
        self._checked: dict[tuple[object, ...], NoMoves | None] = {}
        """The settled check's verdict by its inputs: a run's end, or None (search)."""
        self._pools: dict[str, dict[str, PoolQuote]] = {}
        """Each token's pools as the moves planned so far leave them."""

    def plan(self, wallet: Wallet, valuation: Valuation, costs: Costs) -> Decision:
        """What the wallet's run is to do: ``valuation`` is what it holds, ``costs`` what
        moving its token costs. Infeasible rules, or any other refusal while planning,
        end the run ``failed``."""
        try:
            settled = self._settled(wallet, valuation, costs)
        except Exception as refused:
            return NoMoves(OperationStatus.FAILED, refusal(refused))
        if settled is not None:
            return settled
        pools = self._pools.setdefault(wallet.token, valuation.quotes)
        # Each plan sees the pools as the plans before it leave them.
        valuation = replace(valuation, quotes=pools)
        try:
            plan = optimize(*self._problem(wallet, valuation, costs))
            moves = within_liquidity(plan.moves, valuation)
        except Exception as refused:
            return NoMoves(OperationStatus.FAILED, refusal(refused))
        if not moves:
            return NoMoves(OperationStatus.NO_ACTION, _idle_reason(plan))
        self._pools[wallet.token] = _after(pools, moves)
        return PlannedRun(wallet, plan, _steps(wallet, valuation, moves))

    def _settled(self, wallet: Wallet, valuation: Valuation, costs: Costs) -> NoMoves | None:
        """The cheap check, once per inputs: the run's end when it shows that the full
        search would move nothing (or that the rules cannot be met), else None."""
        key = (costs, *_inputs(wallet, valuation, self._paused))
        if key not in self._checked:
            try:
                settled = is_settled(*self._problem(wallet, valuation, costs))
                self._checked[key] = (
                    NoMoves(OperationStatus.NO_ACTION, SETTLED) if settled else None
                )
            except InvalidRequest as infeasible:
                self._checked[key] = NoMoves(OperationStatus.FAILED, refusal(infeasible))
        return self._checked[key]

    def _problem(
        self, wallet: Wallet, valuation: Valuation, costs: Costs
    ) -> tuple[Mapping[str, int], int, list[Candidate], Constraints, Costs, Thresholds]:
        """What the optimizer solves for the wallet: its holdings over its protocols less
        the paused ones."""
        protocols = [p for p in wallet.selected_protocols if p not in self._paused]
        return (
            valuation.positions,
            valuation.idle,
            candidates(valuation, protocols),
            wallet.constraints,
            costs,
            self._thresholds,
        )


def within_liquidity(moves: Sequence[Move], valuation: Valuation) -> list[Move]:
    """A plan's moves as the pools can carry them now. The optimizer does not model a
    pool's cash: a withdrawal takes at most what its pool can give (leaving a paused or
    drained protocol partially, rather than failing), and the supplies then place only
    what came out, the last ones cut first."""
    shortfall = 0
    capped: list[Move] = []
    for move in moves:
        if move.action == StepAction.WITHDRAW and move.protocol in valuation.quotes:
            take = min(move.amount, max(valuation.quotes[move.protocol].cash, 0))
            shortfall += move.amount - take
            move = Move(move.action, move.protocol, take)
        capped.append(move)
    for index in reversed(range(len(capped))):
        move = capped[index]
        if shortfall and move.action != StepAction.WITHDRAW:
            cut = min(move.amount, shortfall)
            shortfall -= cut
            capped[index] = Move(move.action, move.protocol, move.amount - cut)
    return [move for move in capped if move.amount > 0]


def refusal(refused: Exception) -> str:
    """Why planning failed: infeasible rules, or the chain failed to answer."""
    if isinstance(refused, InvalidRequest):
        return refused.detail
    return f"planning failed: {refused}"


def _steps(wallet: Wallet, valuation: Valuation, moves: Sequence[Move]) -> tuple[Step, ...]:
    """The planned steps of ``moves``, each with its pool's APR as planned."""
    quotes = valuation.quotes
    return tuple(
        Step(
            move.action,
            wallet.token,
            move.amount,
            protocol=move.protocol,
            apr=quotes[move.protocol].apr() if move.protocol in quotes else None,
        )
        for move in moves
    )


def _after(pools: dict[str, PoolQuote], moves: Sequence[Move]) -> dict[str, PoolQuote]:
    """The pools as ``moves`` leave them."""
    moved = dict(pools)
    for move in moves:
        if move.protocol in moved:
            delta = -move.amount if move.action == StepAction.WITHDRAW else move.amount
            moved[move.protocol] = moved[move.protocol].moved(delta)
    return moved


def _idle_reason(plan: Plan) -> str:
    """Why a run moves nothing."""
    return plan.reason if not plan.moves else "the pools lack the cash to move now"


def _inputs(wallet: Wallet, valuation: Valuation, paused: frozenset[str]) -> tuple[object, ...]:
    """What a wallet's plan depends on besides the batch's pools, costs and thresholds:
    wallets with equal inputs get the same plan."""
    rules = wallet.constraints
    return (
        wallet.token,
        valuation.idle,
        tuple(sorted(valuation.positions.items())),
        tuple(p for p in wallet.selected_protocols if p not in paused),
        rules.min_protocols,
        rules.min_fraction,
        tuple(sorted(rules.excluded)),
        tuple(sorted(rules.max_amount.items())),
        tuple(sorted(rules.max_ratio.items())),
        rules.min_position,
        tuple(sorted(rules.min_amount.items())),
    )
