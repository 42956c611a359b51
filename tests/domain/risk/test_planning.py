"""The guards in a run's plan: wallets leave pools to exit, add nothing to pools that take
no new funds, wait between yield-only moves, and a fleet never owns more than its share of
a pool. Pure: pools are Base USDC's at genesis."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.genesis import genesis_pool
from yieldagent.chain.simulated.pools import quote_of
from yieldagent.domain.agent.plan import NoMoves, Planner
from yieldagent.domain.agent.rounds import PlannedRun
from yieldagent.domain.books.operations import StepAction
from yieldagent.domain.books.valuation import Valuation
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.books.wallets import Wallet
from yieldagent.domain.constraints import Constraints, Thresholds
from yieldagent.domain.market.rate_models import RAY
from yieldagent.domain.market.readings import RiskState
from yieldagent.domain.optimizer.rebalance import Costs
from yieldagent.domain.risk.guards import OK, Rule, Trip, Verdict
from yieldagent.domain.risk.settings import RiskSettings
from yieldagent.domain.risk.survey import PoolRisk, RiskView

BASE = 8453
GENESIS = 1_767_225_600
UNIT = 10**6
TOKEN = load_catalog().chain(BASE).tokens[0]
POOLS = {p.name: quote_of(genesis_pool(BASE, TOKEN, p, 7, GENESIS)) for p in TOKEN.protocols}
NAMES = sorted(POOLS)
COSTS = Costs(gas_usd_per_move=0.05, token_price_usd=1.0, decimals=TOKEN.decimals)
MOMENT = datetime(2026, 1, 1, tzinfo=UTC)
NOW = 1_800_000_000.0
EXIT = Verdict(RiskState.EXIT, (Trip(Rule.TVL_DROP, RiskState.EXIT, "TVL fell"),))
FULL = Verdict(
    RiskState.NO_NEW_FUNDS, (Trip(Rule.UTILISATION, RiskState.NO_NEW_FUNDS, "utilisation"),)
)
VERDICTS = {RiskState.OK: OK, RiskState.NO_NEW_FUNDS: FULL, RiskState.EXIT: EXIT}


def _wallet(wallet_id: int, held: dict[str, int] | None = None) -> Wallet:
    return Wallet(
        id=wallet_id,
        chain_id=BASE,
        address=f"0x{wallet_id:040x}",
        eoa="0x" + "e" * 40,
        partner_id=1,
        status=WalletStatus.ACTIVATED,
        token=TOKEN.address,
        selected_protocols=tuple(NAMES),
        constraints=Constraints(),
        principal=0,
        positions=dict(held or {}),
        idle=0,
        current_apr=0.0,
        valued_at=MOMENT,
        is_staked=False,
        activation_date=MOMENT,
        last_deactivation_date=None,
        last_reactivation_date=None,
    )


def _view(
    verdicts: dict[str, Verdict] | None = None,
    ours: dict[str, int] | None = None,
    last_moves: dict[int, float] | None = None,
) -> RiskView:
    pools = {
        (TOKEN.address, name): PoolRisk((verdicts or {}).get(name, OK), (ours or {}).get(name, 0))
        for name in NAMES
    }
    return RiskView(RiskSettings(), pools, last_moves or {}, NOW)


def _worst() -> str:
    return min(NAMES, key=lambda name: POOLS[name].apr())


def test_a_wallet_leaves_a_pool_to_exit_and_says_so() -> None:
    worst = _worst()
    held = {worst: 10_000 * UNIT}
    planner = Planner(frozenset(), Thresholds(), _view({worst: EXIT}, held))
    run = planner.plan(_wallet(1, held), Valuation(0, held, POOLS, MOMENT), COSTS)
    assert isinstance(run, PlannedRun)
    withdrawn = {s.protocol: s.amount for s in run.steps if s.action == StepAction.WITHDRAW}
    assert withdrawn == held
    assert all(s.protocol != worst for s in run.steps if s.action == StepAction.DEPOSIT)
    assert run.moving_out == f"leaving {worst}: TVL fell"
    assert run.left_behind == ""


def test_an_exit_takes_what_the_pool_can_return_and_says_what_is_left() -> None:
    worst = _worst()
    quote = POOLS[worst]
    held = {worst: quote.cash + 5 * UNIT}
    planner = Planner(frozenset(), Thresholds(), _view({worst: EXIT}, held))
    run = planner.plan(_wallet(1, held), Valuation(0, held, POOLS, MOMENT), COSTS)
    assert isinstance(run, PlannedRun)
    withdrawn = {s.protocol: s.amount for s in run.steps if s.action == StepAction.WITHDRAW}
    assert withdrawn == {worst: quote.cash}
    assert f"({5 * UNIT} left)" in run.left_behind


def test_a_pool_that_takes_no_new_funds_gets_none() -> None:
    best = max(NAMES, key=lambda name: POOLS[name].apr())
    idle = 50_000 * UNIT
    unguarded = Planner(frozenset(), Thresholds()).plan(
        _wallet(1), Valuation(idle, {}, POOLS, MOMENT), COSTS
    )
    assert isinstance(unguarded, PlannedRun)
    assert best in {s.protocol for s in unguarded.steps}
    guarded = Planner(frozenset(), Thresholds(), _view({best: FULL})).plan(
        _wallet(1), Valuation(idle, {}, POOLS, MOMENT), COSTS
    )
    assert isinstance(guarded, PlannedRun)
    assert best not in {s.protocol for s in guarded.steps}


def test_a_yield_only_move_waits_but_an_exit_does_not() -> None:
    worst = _worst()
    held = {worst: 2_000_000 * UNIT}
    valuation = Valuation(0, held, POOLS, MOMENT)
    free = Planner(frozenset(), Thresholds(), _view(ours=held)).plan(
        _wallet(1, held), valuation, COSTS
    )
    assert isinstance(free, PlannedRun), free
    waiting = _view(ours=held, last_moves={1: NOW - 3_600})
    held_back = Planner(frozenset(), Thresholds(), waiting).plan(_wallet(1, held), valuation, COSTS)
    assert isinstance(held_back, NoMoves)
    exiting = _view({worst: EXIT}, held, last_moves={1: NOW - 3_600})
    leaving = Planner(frozenset(), Thresholds(), exiting).plan(_wallet(1, held), valuation, COSTS)
    assert isinstance(leaving, PlannedRun)


def test_rules_the_guards_make_infeasible_give_way_to_the_exit() -> None:
    worst = _worst()
    held = {worst: 10_000 * UNIT}
    wallet = _wallet(1, held)
    wallet.constraints = Constraints(min_protocols=len(NAMES))
    planner = Planner(frozenset(), Thresholds(), _view({worst: EXIT}, held))
    run = planner.plan(wallet, Valuation(0, held, POOLS, MOMENT), COSTS)
    assert isinstance(run, PlannedRun), run
    assert any(s.protocol == worst and s.action == StepAction.WITHDRAW for s in run.steps)


@st.composite
def fleets(draw: st.DrawFn) -> tuple[list[tuple[Wallet, Valuation]], RiskView, dict[str, int]]:
    """Up to four wallets with idle funds and positions, pools in random states, and the
    rest of the service holding a random share of each pool."""
    count = draw(st.integers(1, 4))
    wallets: list[tuple[Wallet, Valuation]] = []
    ours = {name: draw(st.integers(0, POOLS[name].total_supply // 5)) for name in NAMES}
    for wallet_id in range(1, count + 1):
        idle = draw(st.integers(0, 40_000_000)) * UNIT
        held = {
            name: amount * UNIT
            for name in NAMES
            if (amount := draw(st.sampled_from([0, 0, 1_000, 500_000, 3_000_000])))
        }
        for name, amount in held.items():
            ours[name] += amount
        wallets.append((_wallet(wallet_id, held), Valuation(idle, held, POOLS, MOMENT)))
    states = {name: VERDICTS[draw(st.sampled_from(list(RiskState)))] for name in NAMES}
    return wallets, _view(states, ours), ours


@settings(max_examples=40, deadline=None)
@given(fleets())
def test_a_fleet_never_owns_more_than_its_share_of_a_pool_and_respects_every_guard(
    fleet: tuple[list[tuple[Wallet, Valuation]], RiskView, dict[str, int]],
) -> None:
    wallets, view, before = fleet
    planner = Planner(frozenset(), Thresholds(), view)
    after = dict(before)
    tvl = {name: POOLS[name].total_supply for name in NAMES}
    # A pool's cash is shared by the fleet: what the wallets before take, and supply.
    cash = {name: POOLS[name].cash for name in NAMES}
    for wallet, valuation in wallets:
        decision = planner.plan(wallet, valuation, COSTS)
        if isinstance(decision, NoMoves):
            continue
        position = dict(valuation.positions)
        for step in decision.steps:
            assert step.protocol is not None
            name = step.protocol
            sign = -1 if step.action == StepAction.WITHDRAW else 1
            after[name] += sign * step.amount
            tvl[name] += sign * step.amount
            position[name] = position.get(name, 0) + sign * step.amount
            cash[name] += sign * step.amount
            # no wallet plans to take more than the pool can still pay out
            assert cash[name] >= 0, (name, cash[name])
            verdict = view.pool(TOKEN.address, name).verdict
            if sign > 0:
                assert verdict.takes_funds, (name, verdict)
                # the pool stays ten times the wallet's position after its change
                assert tvl[name] >= 10 * position[name]
        for name, verdict in ((n, view.pool(TOKEN.address, n).verdict) for n in NAMES):
            if verdict.exit:
                # everything the pool could still return has left it
                assert position.get(name, 0) == 0 or cash[name] <= 0
    for name in NAMES:
        # never more than 15% of a pool, unless it held more before and added nothing
        assert after[name] * 20 <= max(before[name] * 20, tvl[name] * 3), name


def test_wallets_leaving_one_vault_share_its_cash_and_take_no_more() -> None:
    vault = "morpho_gauntlet_usdc_prime"
    quote = POOLS[vault]
    assert len(quote.markets) > 1  # a withdrawal queue over several markets
    held = {vault: 5_000_000 * UNIT}
    fleet = [(_wallet(i, held), Valuation(0, held, POOLS, MOMENT)) for i in (1, 2, 3)]
    planner = Planner(frozenset(), Thresholds(), _view({vault: EXIT}, {vault: 15_000_000 * UNIT}))
    taken = 0
    for wallet, valuation in fleet:
        decision = planner.plan(wallet, valuation, COSTS)
        assert isinstance(decision, PlannedRun | NoMoves)
        if isinstance(decision, PlannedRun):
            taken += sum(
                s.amount
                for s in decision.steps
                if s.action == StepAction.WITHDRAW and s.protocol == vault
            )
    # the fleet takes all the vault can pay out now, and not a unit more
    assert taken == quote.cash


def test_a_yield_only_move_that_would_lose_more_than_a_basis_point_is_refused() -> None:
    worst = _worst()
    held = {worst: 2_000_000 * UNIT}
    # the pool pays 2 bp less than the value a withdrawal takes out
    lossy = dict(POOLS, **{worst: replace(POOLS[worst], exit_rate=RAY - RAY * 2 // 10_000)})
    refused: list[tuple[int, str, str]] = []

    class Heard:
        def changed(self, chain_id: int, token: str, protocol: str, verdict: Verdict) -> None:
            raise AssertionError("no pool changed state")

        def move_refused(self, chain_id: int, token: str, protocol: str) -> None:
            refused.append((chain_id, token, protocol))

    view = replace(_view(ours=held), chain_id=BASE, observer=Heard())
    stays = Planner(frozenset(), Thresholds(), view).plan(
        _wallet(1, held), Valuation(0, held, lossy, MOMENT), COSTS
    )
    assert isinstance(stays, NoMoves)
    assert stays.reason == f"move refused: leaving {worst} would lose too much"
    assert refused == [(BASE, TOKEN.address, worst)]

    # a loss within the limit moves, and the supplies place what the pool pays out
    slight = dict(POOLS, **{worst: replace(POOLS[worst], exit_rate=RAY - RAY // 20_000)})
    moves = Planner(frozenset(), Thresholds(), view).plan(
        _wallet(1, held), Valuation(0, held, slight, MOMENT), COSTS
    )
    assert isinstance(moves, PlannedRun)
    out = sum(s.amount for s in moves.steps if s.action == StepAction.WITHDRAW)
    placed = sum(s.amount for s in moves.steps if s.action == StepAction.DEPOSIT)
    assert placed == slight[worst].paid_out(out) < out

    # leaving a pool to exit is required: it goes, loss and all
    exiting = replace(_view({worst: EXIT}, held), chain_id=BASE, observer=Heard())
    leaves = Planner(frozenset(), Thresholds(), exiting).plan(
        _wallet(1, held), Valuation(0, held, lossy, MOMENT), COSTS
    )
    assert isinstance(leaves, PlannedRun)
    assert {s.protocol for s in leaves.steps if s.action == StepAction.WITHDRAW} == {worst}
    assert len(refused) == 1


HELD = Verdict(
    RiskState.NO_NEW_FUNDS,
    (Trip(Rule.PAUSED, RiskState.NO_NEW_FUNDS, "withdrawals are paused", holds_funds=True),),
)
HELD_BACK = "withdrawals are paused in {} (holding {}), in USDC's smallest unit: …"


def test_no_plan_withdraws_from_a_pool_whose_withdrawals_are_paused() -> None:
    worst = _worst()
    held = {worst: 10_000 * UNIT}
    reason = HELD_BACK.format(worst, held[worst])
    wallet = replace(_wallet(1, held), status_reason=reason)
    valuation = Valuation(20_000 * UNIT, held, POOLS, MOMENT)
    free = Planner(frozenset(), Thresholds(), _view({worst: FULL}, held)).plan(
        wallet, valuation, COSTS
    )
    assert isinstance(free, PlannedRun)
    assert worst in {s.protocol for s in free.steps if s.action == StepAction.WITHDRAW}

    run = Planner(frozenset(), Thresholds(), _view({worst: HELD}, held)).plan(
        wallet, valuation, COSTS
    )
    assert isinstance(run, PlannedRun)  # the idle funds still go
    assert all(s.action == StepAction.DEPOSIT and s.protocol != worst for s in run.steps)
    assert sum(s.amount for s in run.steps) == 20_000 * UNIT
    # the run keeps saying which pool holds how much, rather than blanking the reason
    assert run.moving_out == run.left_behind == reason


def test_an_exit_from_a_paused_pool_waits_and_says_what_it_holds() -> None:
    worst = _worst()
    held = {worst: 10_000 * UNIT}
    both = Verdict(RiskState.EXIT, EXIT.trips + HELD.trips)
    run = Planner(frozenset(), Thresholds(), _view({worst: both}, held)).plan(
        _wallet(1, held), Valuation(0, held, POOLS, MOMENT), COSTS
    )
    assert isinstance(run, NoMoves)  # nothing can leave, so nothing is sent to fail

    idle = {worst: 10_000 * UNIT}
    moving = Planner(frozenset(), Thresholds(), _view({worst: both}, held)).plan(
        _wallet(1, idle), Valuation(5_000 * UNIT, idle, POOLS, MOMENT), COSTS
    )
    assert isinstance(moving, PlannedRun)
    assert all(s.protocol != worst for s in moving.steps)
    assert moving.left_behind == (
        f"leaving {worst} as its liquidity frees up ({10_000 * UNIT} left): "
        "TVL fell; withdrawals are paused"
    )
