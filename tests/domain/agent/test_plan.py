"""A run's plan: within the pools' cash, and one settled check for wallets with equal inputs.
Pure: no database, no chain."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.genesis import genesis_pool
from yieldagent.chain.simulated.pools import quote_of
from yieldagent.domain.agent.plan import SETTLED, NoMoves, Planner, within_liquidity
from yieldagent.domain.books.operations import Move, StepAction
from yieldagent.domain.books.valuation import Valuation
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.books.wallets import Wallet
from yieldagent.domain.constraints import Constraints, Thresholds
from yieldagent.domain.market.curves import Candidate
from yieldagent.domain.market.rate_models import RAY
from yieldagent.domain.optimizer.optimality import is_settled
from yieldagent.domain.optimizer.rebalance import Costs

BASE = 8453
GENESIS = 1_767_225_600
TOKEN = load_catalog().chain(BASE).tokens[0]
POOLS = {p.name: quote_of(genesis_pool(BASE, TOKEN, p, 7, GENESIS)) for p in TOKEN.protocols}
COSTS = Costs(gas_usd_per_move=0.05, token_price_usd=1.0, decimals=TOKEN.decimals)
MOMENT = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_plan_takes_from_each_pool_only_its_cash_and_supplies_only_what_came_out() -> None:
    plan = (
        Move(StepAction.WITHDRAW, "compound", 100),
        Move(StepAction.WITHDRAW, "aave", 50),
        Move(StepAction.DEPOSIT, "moonwell", 90),
        Move(StepAction.DEPOSIT, "morpho", 60),
    )

    assert within_liquidity(plan, {"compound": 40, "aave": 10**9}) == [
        Move(StepAction.WITHDRAW, "compound", 40),
        Move(StepAction.WITHDRAW, "aave", 50),
        Move(
            StepAction.DEPOSIT, "moonwell", 90
        ),  # the last supply is cut first: 60 did not come out
    ]


def test_a_refused_withdrawal_takes_nothing_and_funds_nothing() -> None:
    plan = (
        Move(StepAction.WITHDRAW, "compound", 100),
        Move(StepAction.WITHDRAW, "aave", 50),
        Move(StepAction.DEPOSIT, "moonwell", 150),
    )

    assert within_liquidity(plan, {"compound": 10**9, "aave": 10**9}, refused={"compound"}) == [
        Move(StepAction.WITHDRAW, "aave", 50),
        Move(StepAction.DEPOSIT, "moonwell", 50),
    ]


def test_supplies_place_what_a_withdrawal_pays_not_what_it_takes() -> None:
    aave = replace(POOLS["aave"], exit_rate=RAY * 99 // 100)  # pays 99% of what it takes
    plan = (Move(StepAction.WITHDRAW, "aave", 1_000), Move(StepAction.DEPOSIT, "moonwell", 1_000))

    assert within_liquidity(plan, {"aave": 10**9}, {"aave": aave}) == [
        Move(StepAction.WITHDRAW, "aave", 1_000),
        Move(StepAction.DEPOSIT, "moonwell", 990),
    ]


def _wallet(wallet_id: int, constraints: Constraints | None = None) -> Wallet:
    """An activated wallet over every genesis pool."""
    return Wallet(
        id=wallet_id,
        chain_id=BASE,
        address=f"0x{wallet_id:040x}",
        eoa="0x" + "e" * 40,
        partner_id=1,
        status=WalletStatus.ACTIVATED,
        token=TOKEN.address,
        selected_protocols=tuple(POOLS),
        constraints=constraints or Constraints(),
        principal=0,
        positions={},
        idle=0,
        current_apr=0.0,
        valued_at=MOMENT,
        is_staked=False,
        activation_date=MOMENT,
        last_deactivation_date=None,
        last_reactivation_date=None,
    )


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The idle amount of each wallet the optimality check was asked about."""
    asked: list[int] = []

    def counted(
        positions: Mapping[str, int],
        idle: int,
        candidates: Sequence[Candidate],
        constraints: Constraints,
        costs: Costs,
        thresholds: Thresholds,
    ) -> bool:
        asked.append(idle)
        return is_settled(positions, idle, candidates, constraints, costs, thresholds)

    monkeypatch.setattr("yieldagent.domain.agent.plan.is_settled", counted)
    return asked


def test_wallets_with_equal_inputs_share_one_settled_check(checks: list[int]) -> None:
    planner = Planner(frozenset(), Thresholds())
    empty = Valuation(0, {}, POOLS, MOMENT)

    first = planner.plan(_wallet(1), empty, COSTS)
    second = planner.plan(_wallet(2), empty, COSTS)

    assert first == second == NoMoves("no_action", SETTLED)
    assert checks == [0]


def test_rules_that_cannot_be_met_are_checked_once_for_equal_inputs(checks: list[int]) -> None:
    planner = Planner(frozenset(), Thresholds())
    rules = Constraints(min_protocols=len(POOLS) + 1)
    held = Valuation(1_000 * 10**6, {}, POOLS, MOMENT)

    first = planner.plan(_wallet(1, rules), held, COSTS)
    second = planner.plan(_wallet(2, rules), held, COSTS)

    assert isinstance(first, NoMoves)
    assert first == second
    assert first.status == "failed"
    assert "min_protocols" in first.reason
    assert checks == [1_000 * 10**6]


def test_other_inputs_get_their_own_check(checks: list[int]) -> None:
    planner = Planner(frozenset(), Thresholds())

    planner.plan(_wallet(1), Valuation(0, {}, POOLS, MOMENT), COSTS)
    planner.plan(_wallet(2), Valuation(0, {}, POOLS, MOMENT), COSTS)
    planner.plan(_wallet(3), Valuation(1, {}, POOLS, MOMENT), COSTS)

    assert checks == [0, 1]
