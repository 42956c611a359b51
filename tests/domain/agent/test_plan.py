"""A run's plan within the pools' cash: pure, no database, no chain."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import cast

from yieldagent.domain.agent.plan import within_liquidity
from yieldagent.domain.books.valuation import Valuation
from yieldagent.domain.optimizer.quotes import PoolQuote
from yieldagent.domain.optimizer.rebalance import Move


def test_a_plan_takes_from_each_pool_only_its_cash_and_supplies_only_what_came_out() -> None:
    quotes = {
        "compound": cast(PoolQuote, SimpleNamespace(cash=40)),
        "aave": cast(PoolQuote, SimpleNamespace(cash=10**9)),
    }
    valuation = Valuation(
        0, {"compound": 100, "aave": 50}, quotes, datetime(2026, 1, 1, tzinfo=UTC)
    )
    plan = (
        Move("withdraw", "compound", 100),
        Move("withdraw", "aave", 50),
        Move("deposit", "moonwell", 90),
        Move("deposit", "morpho", 60),
    )

    assert within_liquidity(plan, valuation) == [
        Move("withdraw", "compound", 40),
        Move("withdraw", "aave", 50),
        Move("deposit", "moonwell", 90),  # the last supply is cut first: 60 did not come out
    ]
