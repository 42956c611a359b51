"""The plan of one run: what a wallet's run is to do, given what it holds.

Pure: no chain, no database. Given a wallet, its valuation, the protocols paused on its
chain, what moving costs and when a rebalance pays, a run either moves nothing
(``no_action`` and why, or ``failed`` when the rules cannot be met) or makes moves, each
a planned step with its pool's APR as planned.

The risk guards (``domain.risk``) are the wallet's constraints too: a pool to exit is
excluded (leaving it is a required move, which never waits), a pool that takes no new
funds is capped at what the wallet holds, and each pool at what the share and size rules
let the wallet hold given the whole service's position there. Within the minimum wait
after a wallet's last move, only required moves and idle funds go.

The cheap check comes first: when the optimality check (``optimizer.optimality``) shows
that no move can pay, the full search is spared and the run answers ``SETTLED``. Else the
optimizer plans over the wallet's protocols less the paused ones, and its moves are cut to
what the pools can carry now (``within_liquidity``): a withdrawal takes at most what its
pool can return (the wallet's position valued at ``maxWithdraw``, not at par), an exit the
rest in a later run, nothing from a pool whose withdrawals are paused (whose held-back
funds the wallet's ``status_reason`` keeps naming), and the supplies place only what came
out. A withdrawal the wallet is not required to make (its pool is neither to exit nor
excluded by the wallet's rules) that would lose more than the move-loss limit of its
amount is refused, and the supplies it would have funded with it.

A ``Planner`` plans the runs of one chain at one moment: a run on request (one wallet), or
every wallet of a scheduled batch. Wallets with equal inputs share one settled check, and
each plan sees the pools (the service's position and the cash left in each) as the plans
before it leave them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeAlias

from yieldagent.domain.agent.rounds import PlannedRun
from yieldagent.domain.books.held_back import follows
from yieldagent.domain.books.operations import Move, OperationStatus, Step, StepAction
from yieldagent.domain.books.valuation import Valuation
from yieldagent.domain.books.wallets import Wallet
from yieldagent.domain.constraints import Constraints, Thresholds
from yieldagent.domain.errors import InvalidRequest
from yieldagent.domain.market.curves import Candidate
from yieldagent.domain.market.quotes import PoolQuote
from yieldagent.domain.optimizer.optimality import is_settled
from yieldagent.domain.optimizer.placement import candidates
from yieldagent.domain.optimizer.rebalance import Costs, Plan, optimize
from yieldagent.domain.risk.limits import move_loss_refused
from yieldagent.domain.risk.survey import UNGUARDED, RiskView

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

    def __init__(
        self, paused: frozenset[str], thresholds: Thresholds, risk: RiskView = UNGUARDED
    ) -> None:
        self._paused = paused
        self._thresholds = thresholds
        self._risk = risk
        self._checked: dict[tuple[object, ...], NoMoves | None] = {}
        """The settled check's verdict by its inputs: a run's end, or None (search)."""
        self._pools: dict[str, dict[str, PoolQuote]] = {}
        """Each token's pools as the moves planned so far leave them."""
        self._ours: dict[tuple[str, str], int] = {
            key: pool.ours for key, pool in risk.pools.items()
        }
        """The service's position in each pool (by token, protocol) as the moves planned
        so far leave it."""
        self._cash: dict[tuple[str, str], int] = {}
        """What each pool (by token, protocol) can still pay out as the moves planned so
        far leave it: its cash as read, less what earlier wallets take, plus what they
        supply. Kept apart from ``_pools``, whose markets spread a withdrawal as the rate
        model does, not as the pool's withdrawal queue pays it."""

    def plan(self, wallet: Wallet, valuation: Valuation, costs: Costs) -> Decision:
        """What the wallet's run is to do: ``valuation`` is what it holds, ``costs`` what
        moving its token costs. Infeasible rules, or any other refusal while planning,
        end the run ``failed``."""
        try:
            settled = self._settled(wallet, valuation, self._problem(wallet, valuation, costs))
        except Exception as refused:
            return NoMoves(OperationStatus.FAILED, refusal(refused))
        if settled is not None:
            return settled
        pools = self._pools.setdefault(wallet.token, valuation.quotes)
        # Each plan sees the pools as the plans before it leave them.
        valuation = replace(valuation, quotes=pools)
        try:
            problem = self._problem(wallet, valuation, costs)
            try:
                plan = optimize(*problem)
            except InvalidRequest:
                if problem[3] is wallet.constraints:
                    raise
                # the guards made the wallet's rules infeasible: leaving a failing pool
                # comes before a minimum number of protocols or a forced position
                plan = optimize(*self._problem(wallet, valuation, costs, relax=True))
            lossy = self._lossy(wallet, plan.moves, valuation.quotes, problem[3])
            # a pool that pays nothing out is not asked to: the run would fail on chain
            shut = self._holding(wallet, valuation)
            cash = self._cash_of(wallet.token, pools)
            moves = within_liquidity(plan.moves, cash, pools, lossy | shut)
        except Exception as refused:
            return NoMoves(OperationStatus.FAILED, refusal(refused))
        if not moves:
            return NoMoves(OperationStatus.NO_ACTION, _idle_reason(plan, lossy))
        self._pools[wallet.token] = _after(pools, moves)
        for move in moves:
            key = (wallet.token, move.protocol)
            delta = -move.amount if move.action == StepAction.WITHDRAW else move.amount
            self._ours[key] = max(self._ours.get(key, 0) + delta, 0)
            self._cash[key] = max(self._cash.get(key, 0) + delta, 0)
        moving_out, left_behind = self._leaving(wallet, valuation, moves)
        if not left_behind and shut and follows(wallet.status_reason):
            # what the refresh says of the funds a paused pool holds stays said
            moving_out, left_behind = moving_out or wallet.status_reason, wallet.status_reason
        return PlannedRun(wallet, plan, _steps(wallet, valuation, moves), moving_out, left_behind)

    def _holding(self, wallet: Wallet, valuation: Valuation) -> frozenset[str]:
        """The pools that hold the wallet's funds and pay nothing out now."""
        return frozenset(
            name
            for name, held in valuation.positions.items()
            if held > 0 and self._risk.pool(wallet.token, name).verdict.holds_funds
        )

    def _cash_of(self, token: str, pools: Mapping[str, PoolQuote]) -> dict[str, int]:
        """What each pool of ``token`` can still pay out (see ``_cash``)."""
        cash = self._cash
        for name, quote in pools.items():
            cash.setdefault((token, name), max(quote.cash, 0))
        return {name: cash[(token, name)] for name in pools}

    def _lossy(
        self,
        wallet: Wallet,
        moves: Sequence[Move],
        quotes: Mapping[str, PoolQuote],
        rules: Constraints,
    ) -> frozenset[str]:
        """The pools ``moves`` would leave at a loss the guards refuse: withdrawals the
        wallet is not required to make (its ``rules``, guards included, neither exclude
        the pool) that a pool would pay out more than the move-loss limit short of. Each
        is reported to the guards' observer."""
        if not self._risk.enabled:
            return frozenset()
        lossy = frozenset(
            m.protocol
            for m in moves
            if m.action == StepAction.WITHDRAW
            and m.protocol in quotes
            and m.protocol not in rules.excluded
            and move_loss_refused(
                m.amount, quotes[m.protocol].paid_out(m.amount), self._risk.settings
            )
        )
        for name in sorted(lossy):
            self._risk.move_refused(wallet.token, name)
        return lossy

    def _settled(
        self,
        wallet: Wallet,
        valuation: Valuation,
        problem: tuple[Mapping[str, int], int, list[Candidate], Constraints, Costs, Thresholds],
    ) -> NoMoves | None:
        """The cheap check, once per inputs: the run's end when it shows that the full
        search would move nothing (or that the rules cannot be met), else None."""
        rules, costs, thresholds = problem[3], problem[4], problem[5]
        key = (costs, thresholds, *_inputs(wallet, valuation, self._paused, rules))
        if key not in self._checked:
            try:
                settled = is_settled(*problem)
                self._checked[key] = (
                    NoMoves(OperationStatus.NO_ACTION, SETTLED) if settled else None
                )
            except InvalidRequest as infeasible:
                if rules is wallet.constraints:
                    self._checked[key] = NoMoves(OperationStatus.FAILED, refusal(infeasible))
                else:
                    self._checked[key] = None  # the search relaxes what the guards broke
        return self._checked[key]

    def _problem(
        self, wallet: Wallet, valuation: Valuation, costs: Costs, relax: bool = False
    ) -> tuple[Mapping[str, int], int, list[Candidate], Constraints, Costs, Thresholds]:
        """What the optimizer solves for the wallet: its holdings over its protocols less
        the paused ones, within its rules and the guards (``relax``: the guards with only
        the wallet's caps, when its minimums cannot be met with them)."""
        protocols = [p for p in wallet.selected_protocols if p not in self._paused]
        found = candidates(valuation, protocols)
        rules = self._risk.constrain(
            wallet.token, wallet.constraints, found, valuation.total, self._ours, relax
        )
        return (
            valuation.positions,
            valuation.idle,
            found,
            rules,
            costs,
            self._risk.thresholds(wallet.id, self._thresholds),
        )

    def _leaving(
        self, wallet: Wallet, valuation: Valuation, moves: Sequence[Move]
    ) -> tuple[str, str]:
        """What the wallet says (its ``status_reason``) while the run moves it out of
        pools to exit, and after it: what the pools could not yet return, if anything."""
        taken = {m.protocol: m.amount for m in moves if m.action == StepAction.WITHDRAW}
        moving: list[str] = []
        left: list[str] = []
        for name, held in sorted(valuation.positions.items()):
            verdict = self._risk.pool(wallet.token, name).verdict
            if held <= 0 or not verdict.exit:
                continue
            why = "; ".join(verdict.reasons)
            moving.append(f"leaving {name}: {why}")
            rest = held - taken.get(name, 0)
            if rest > 0:
                left.append(f"leaving {name} as its liquidity frees up ({rest} left): {why}")
        return " · ".join(moving), " · ".join(left)


def within_liquidity(
    moves: Sequence[Move],
    cash: Mapping[str, int],
    quotes: Mapping[str, PoolQuote] | None = None,
    refused: Collection[str] = (),
) -> list[Move]:
    """A plan's moves as the pools can carry them now. The optimizer does not model a
    pool's cash: a withdrawal takes at most what its pool can still give (``cash``, by
    protocol), leaving a paused or drained protocol partially rather than failing, and
    nothing from a pool in ``refused``; it pays what its pool pays out for it
    (``quotes``). The supplies then place only what came out, the last ones cut first."""
    shortfall = 0
    capped: list[Move] = []
    for move in moves:
        if move.action == StepAction.WITHDRAW:
            name = move.protocol
            take = 0 if name in refused else min(move.amount, max(cash.get(name, move.amount), 0))
            paid = quotes[name].paid_out(take) if quotes and name in quotes else take
            shortfall += move.amount - paid
            move = Move(move.action, name, take)
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
    """The planned steps of ``moves``, each with its pool's APR as planned. A withdrawal
    of the whole position is ``whole``: interest accrues between the reading and the block
    that mines it, and a withdrawal of the amount read would leave that in the pool."""
    quotes = valuation.quotes
    return tuple(
        Step(
            move.action,
            wallet.token,
            move.amount,
            protocol=move.protocol,
            apr=quotes[move.protocol].apr() if move.protocol in quotes else None,
            whole=move.action == StepAction.WITHDRAW
            and move.amount == valuation.positions.get(move.protocol),
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


def _idle_reason(plan: Plan, lossy: Collection[str] = ()) -> str:
    """Why a run moves nothing."""
    if not plan.moves:
        return plan.reason
    if lossy:
        return f"move refused: leaving {', '.join(sorted(lossy))} would lose too much"
    return "the pools lack the cash to move now"


def _inputs(
    wallet: Wallet, valuation: Valuation, paused: frozenset[str], rules: Constraints
) -> tuple[object, ...]:
    """What a wallet's plan depends on besides the batch's pools, costs and thresholds
    (``rules``: its constraints with the guards): wallets with equal inputs get the same
    plan."""
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
