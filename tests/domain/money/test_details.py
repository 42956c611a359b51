"""A wallet's fee and deposit limit: the fee due is what withdrawing everything would
charge, the fee charged is what the withdrawals took, and the deposit limit is the one
activation and top-up enforce, to the unit."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from support.wallet_setup import (
    BASE,
    EOA,
    FEE_BPS,
    OTHER_EOA,
    USDC,
    activated,
    make_lifecycle,
    stored,
)
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.books.accounting import BPS
from yieldagent.domain.catalog import TokenInfo
from yieldagent.domain.errors import AccessDenied, InvalidRequest
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.money.deposits import deposit_limit
from yieldagent.domain.money.details import WalletDetails
from yieldagent.domain.ports.credentials import Partner
from yieldagent.storage.partners import PartnerStore

PartnerKey = tuple[Partner, str]
DAY = 86_400


def _token(price: float, decimals: int) -> TokenInfo:
    return TokenInfo("0x" + "11" * 20, "TKN", decimals, price, ())


@pytest.mark.parametrize(
    ("price", "decimals", "limit"),
    [
        (1.0, 6, 1_000_000 * 10**6),
        (0.9998, 6, 1_000_200_040_008),  # 1e12 / 0.9998, rounded down
        (3000.0, 18, 333_333_333_333_333_333_333),
    ],
)
def test_the_deposit_limit_is_the_dollar_limit_at_the_tokens_price(
    price: float, decimals: int, limit: int
) -> None:
    assert deposit_limit(_token(price, decimals), 1_000_000.0) == limit


async def test_the_limit_is_what_a_top_up_may_bring_and_no_more(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 1_000 * USDC)
    details = WalletDetails(lifecycle.books)
    limit = details.deposit_limit(owner.id, BASE, wallet.address, EOA)
    usdc = load_catalog().token(BASE, wallet.token)
    assert limit.amount == deposit_limit(usdc, 1_000_000) == 1_000_000 * USDC
    lifecycle.deposits.check_size(usdc, limit.amount)
    with pytest.raises(AccessDenied):
        lifecycle.deposits.check_size(usdc, limit.amount + 1)
    with pytest.raises(InvalidRequest, match="is not the owner"):
        details.deposit_limit(owner.id, BASE, wallet.address, OTHER_EOA)


async def test_the_fee_due_and_charged_follow_the_books(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 10_000 * USDC)
    details = WalletDetails(lifecycle.books)
    fresh = details.fee(owner.id, BASE, wallet.address)
    assert (fresh.fraction, fresh.charged) == (FEE_BPS / BPS, 0)

    market.advance(60 * DAY)
    await lifecycle.refresh(BASE)
    now = stored(engine, wallet.address)
    accrued = now.idle + sum(now.positions.values()) - now.principal
    assert accrued > 0
    assert details.fee(owner.id, BASE, wallet.address).due == accrued * FEE_BPS // BPS

    paid = await lifecycle.withdraw(owner.id, BASE, wallet.address, 5_000 * USDC)
    after = details.fee(owner.id, BASE, wallet.address)
    assert paid.fee > 0 and after.charged == paid.fee
    left = stored(engine, wallet.address)
    remaining = left.idle + sum(left.positions.values()) - left.principal
    assert after.due == max(remaining, 0) * FEE_BPS // BPS


async def test_only_the_owner_reads_the_details(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    stranger, _ = PartnerStore(engine).create("stranger", frozenset({"wallets"}))
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 1_000 * USDC)
    details = WalletDetails(lifecycle.books)
    with pytest.raises(AccessDenied):
        details.fee(stranger.id, BASE, wallet.address)
    with pytest.raises(AccessDenied):
        details.deposit_limit(stranger.id, BASE, wallet.address, EOA)


async def test_the_fee_due_is_what_deactivating_charges_to_the_unit(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 25_000 * USDC)
    market.advance(90 * DAY)
    await lifecycle.refresh(BASE)
    details = WalletDetails(lifecycle.books)
    due = details.fee(owner.id, BASE, wallet.address).due
    assert due > 0
    paid = await lifecycle.deactivate(owner.id, BASE, wallet.address, transfer=True)
    assert paid is not None and paid.fee == due
    after = details.fee(owner.id, BASE, wallet.address)
    assert (after.due, after.charged) == (0, due)
