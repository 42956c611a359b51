"""What a wallet could withdraw at once: its idle balance and each position within what
its pool can pay out, kept with every valuation; a withdrawal above it is refused with the
amount available, and nothing moves."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from support.liquidity import drain, pool_cash
from support.wallet_setup import (
    BASE,
    USDC,
    activated,
    chain_value,
    make_lifecycle,
    positions,
    snapshot,
    stored,
)
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.errors import InvalidRequest
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.ports.credentials import Partner

PartnerKey = tuple[Partner, str]


async def test_the_wallet_keeps_what_it_could_withdraw_at_once(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 1_000 * USDC, protocols=("aave",))
    assert stored(engine, wallet.address).withdrawable == chain_value(market, wallet.address)

    drain(market, "aave", leave=300 * USDC)
    await lifecycle.refresh(BASE)
    idle = market.balance(BASE, stored(engine, wallet.address).token, wallet.address)
    held = positions(market, wallet.address)["aave"]
    expected = idle + min(held, pool_cash(market, "aave"))
    assert (
        stored(engine, wallet.address).withdrawable
        == expected
        < chain_value(market, wallet.address)
    )

    before = snapshot(engine, market, wallet.address)
    with pytest.raises(InvalidRequest) as refused:
        await lifecycle.withdraw(owner.id, BASE, wallet.address, expected + 1)
    assert refused.value.detail == (
        f"Amount {expected + 1} exceeds the withdrawable balance of {expected}"
    )
    assert snapshot(engine, market, wallet.address) == before

    paid = await lifecycle.withdraw(owner.id, BASE, wallet.address, expected)
    assert paid.amount == expected
