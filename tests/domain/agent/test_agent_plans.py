"""A run's plan within the pools' cash: pure, no database, no chain."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import cast

from yieldagent.domain.agent.runs import within_liquidity
from yieldagent.domain.books.operations import Move, StepAction
from yieldagent.domain.books.valuation import Valuation
from yieldagent.domain.optimizer.quotes import PoolQuote


def test_a_plan_takes_from_each_pool_only_its_cash_and_supplies_only_what_came_out() -> None:
    quotes = {
        "compound": cast(PoolQuote, SimpleNamespace(cash=40)),
        "aave": cast(PoolQuote, SimpleNamespace(cash=10**9)),
    }
    valuation = Valuation(
        0, {"compound": 100, "aave": 50}, quotes, datetime(2026, 1, 1, tzinfo=UTC)
    )
    plan = (
        Move(StepAction.WITHDRAW, "compound", 100),
        Move(StepAction.WITHDRAW, "aave", 50),
        Move(StepAction.DEPOSIT, "moonwell", 90),
        Move(StepAction.DEPOSIT, "morpho", 60),
    )

    assert within_liquidity(plan, valuation) == [
        Move(StepAction.WITHDRAW, "compound", 40),
        Move(StepAction.WITHDRAW, "aave", 50),
        Move(
            StepAction.DEPOSIT, "moonwell", 90
        ),  # the last supply is cut first: 60 did not come out
    ]
