"""The optimize use case: the question checked in the contract's order, and an answer
whose targets, plan and calls agree."""

from __future__ import annotations

import pytest

from yieldagent.catalog import load_catalog
from yieldagent.domain.constraints import Thresholds
from yieldagent.domain.errors import InvalidInput, InvalidRequest, NotFound
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.optimizer.optimize import Optimizer

BASE = 8453
USDC = load_catalog().chain(BASE).tokens[0]
UNLISTED = "0x" + "12" * 20


def _optimizer(chains: dict[int, MarketChain]) -> Optimizer:
    return Optimizer(load_catalog(), chains, Thresholds())


async def test_an_unknown_chain_is_not_found_and_an_unlisted_token_a_bad_request(
    chains: dict[int, MarketChain],
) -> None:
    optimizer = _optimizer(chains)
    with pytest.raises(NotFound, match=r"^Chain 7 is not supported"):
        await optimizer.optimize(7, USDC.address, "100", {}, [], [])
    with pytest.raises(InvalidRequest, match=rf"^Token {UNLISTED} is not supported"):
        await optimizer.optimize(BASE, UNLISTED, "100", {}, [], [])


async def test_the_amounts_are_checked_before_the_token(chains: dict[int, MarketChain]) -> None:
    with pytest.raises(InvalidInput) as caught:
        await _optimizer(chains).optimize(BASE, UNLISTED, "-1", {}, [], [])
    assert caught.value.violations[0].loc == ("total_capital",)


async def test_the_targets_place_the_capital_and_price_each_pool_after_it(
    chains: dict[int, MarketChain],
) -> None:
    capital = 1_000_000 * 10**USDC.decimals
    answer = await _optimizer(chains).optimize(
        BASE, USDC.address, str(capital), {}, [], [], wallet=None
    )
    assert sum(t.amount for t in answer.targets) == capital
    assert {t.protocol: t.amount for t in answer.targets} == answer.plan.target
    quotes = {q.protocol: q for q in await chains[BASE].quotes(USDC.address, ["aave"])}
    for target in answer.targets:
        if target.protocol in quotes:
            assert target.apr == quotes[target.protocol].apr(target.amount)
    assert answer.calls == ()  # no wallet, no calls
