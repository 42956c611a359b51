"""The minimum withdrawal in USD: a leaked partner key cannot make the operator pay gas for
payouts of a few units. Below the minimum a withdrawal is refused, naming it, and nothing
moves; deactivation still takes out a balance of any size."""

from __future__ import annotations

from decimal import Decimal

import pytest
from sqlalchemy import Engine

from support.books import assert_books_balance
from support.wallet_setup import (
    BASE,
    EOA,
    USDC,
    activated,
    chain_value,
    make_lifecycle,
    policy,
    snapshot,
    stored,
)
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.catalog import TokenInfo
from yieldagent.domain.errors import InvalidRequest
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.money.withdrawals import smallest_withdrawal
from yieldagent.domain.ports.credentials import Partner

PartnerKey = tuple[Partner, str]


def _token(decimals: int, price_usd: float) -> TokenInfo:
    return TokenInfo("0x" + "11" * 20, "TKN", decimals, price_usd, ())


@pytest.mark.parametrize(
    ("decimals", "price", "minimum", "units"),
    [
        (6, 1.0, "10", 10_000_000),  # USDC at its peg: 10 USD is 10 USDC
        (6, 1.0, "0.000001", 1),  # one unit, exactly
        (6, 1.0, "0.0000015", 2),  # between two units: the next one up
        (18, 1.0, "10", 10 * 10**18),  # beyond a float's exact integers
        (6, 0.9999, "10", 10_001_001),  # 10 / 0.9999 = 10.001000100…: rounded up
        (6, 3.0, "10", 3_333_334),  # a third never ends in binary or decimal
        (6, 1.0, "0", 0),  # no minimum
        (6, 0.0, "10", 0),  # no price: no USD value to hold it to
    ],
)
def test_the_smallest_withdrawal_is_exact(
    decimals: int, price: float, minimum: str, units: int
) -> None:
    least = smallest_withdrawal(_token(decimals, price), Decimal(minimum))
    assert least == units
    if least > 0:  # the bound is tight: one unit less is worth less than the minimum
        value = Decimal(least - 1) / 10**decimals * Decimal(repr(price))
        assert value < Decimal(minimum)


async def test_tiny_withdrawals_from_a_leaked_key_move_nothing(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains, policy(min_withdraw_usd=Decimal(10)))
    wallet = await activated(lifecycle, engine, market, owner.id, 1_000 * USDC)
    before = snapshot(engine, market, wallet.address)
    eoa_before = market.balance(BASE, wallet.token, EOA)
    mined_before = market.history(BASE, wallet.address, 0)

    for amount in (1, 2, 1_000, 10 * USDC - 1):
        with pytest.raises(InvalidRequest) as refused:
            await lifecycle.withdraw(owner.id, BASE, wallet.address, amount)
        assert refused.value.detail == (
            f"Amount {amount} is below the minimum withdrawal of 10 USD "
            "(10000000 in USDC's smallest unit); a smaller balance leaves with the "
            "wallet's deactivation"
        )

    assert snapshot(engine, market, wallet.address) == before
    assert market.balance(BASE, wallet.token, EOA) == eoa_before
    assert market.history(BASE, wallet.address, 0) == mined_before  # no gas spent
    paid = await lifecycle.withdraw(owner.id, BASE, wallet.address, 10 * USDC)
    assert paid.amount == 10 * USDC
    assert_books_balance(engine, market, [stored(engine, wallet.address)])


async def test_deactivation_takes_out_a_balance_below_the_minimum(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    catalog = load_catalog()
    lifecycle = make_lifecycle(engine, chains, policy(min_withdraw_usd=Decimal(10)))
    wallet = await activated(lifecycle, engine, market, owner.id, 5 * USDC)
    value = chain_value(market, wallet.address)
    assert value < smallest_withdrawal(catalog.token(BASE, wallet.token), Decimal(10))
    with pytest.raises(InvalidRequest):
        await lifecycle.withdraw(owner.id, BASE, wallet.address, value)

    eoa_before = market.balance(BASE, wallet.token, EOA)
    paid = await lifecycle.deactivate(owner.id, BASE, wallet.address, transfer=True)
    after = stored(engine, wallet.address)
    assert after.status == WalletStatus.DEACTIVATED
    assert chain_value(market, wallet.address) == 0
    assert paid is not None
    assert market.balance(BASE, wallet.token, EOA) == eoa_before + paid.split.to_user
    assert_books_balance(engine, market, [after])
