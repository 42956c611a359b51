"""A wallet's numbers over time, from its books: earnings that add up to the books' yield
to the unit, a performance series that is the books' points then now, and the APR by
token; only for the partner that owns the wallet."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine

from support.wallet_setup import (
    BASE,
    BASE_USDC,
    DAY,
    FEE_BPS,
    OTHER_EOA,
    USDC,
    activated,
    make_lifecycle,
    make_reports,
    stored,
    top_up_deposit,
)
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.books.accounting import split_withdrawal
from yieldagent.domain.books.apr import PerformancePoint
from yieldagent.domain.books.numbers import (
    EarningsInterval,
    Period,
    WalletNumbers,
    YieldMark,
    earnings,
    marks,
)
from yieldagent.domain.books.wallets import DepositRecord, WithdrawalRecord
from yieldagent.domain.errors import AccessDenied, InvalidInput
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.ports.credentials import Partner
from yieldagent.storage.wallets import WalletStore

PartnerKey = tuple[Partner, str]
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _numbers(engine: Engine, chains: dict[int, MarketChain]) -> WalletNumbers:
    return WalletNumbers(
        WalletStore(engine), chains, load_catalog(), make_reports(engine, chains), FEE_BPS
    )


def _at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def test_the_books_yield_is_realised_plus_accrued_and_deposits_do_not_move_it() -> None:
    info = load_catalog().token(BASE, BASE_USDC)
    split = split_withdrawal(300, 1_200, 1_000, FEE_BPS)  # 50 of it yield, 5 fee
    withdrawal = WithdrawalRecord.priced(BASE_USDC, split, info, None, None, _at(30))
    points = [
        PerformancePoint(_at(0), 0, 1_000),  # the activation's deposit
        PerformancePoint(_at(10), 1_100),  # 100 accrued
        PerformancePoint(_at(20), 1_150, 50),  # a top-up of 50
        PerformancePoint(_at(30), 1_200, -300),  # the withdrawal
    ]
    deposits = [
        DepositRecord(1_000, BASE_USDC, None, None, _at(0)),
        DepositRecord(50, BASE_USDC, None, None, _at(20)),
    ]
    found = marks(points, deposits, [withdrawal])
    assert [m.yield_() for m in found] == [0, 100, 150, 150]
    assert found[-1] == YieldMark(_at(30), 900, 1_050 - split.principal, 50, 5)
    assert [m.fee(FEE_BPS) for m in found] == [0, 10, 15, 15]


def test_earnings_telescope_over_days_to_the_unit() -> None:
    found = [
        YieldMark(_at(0), 1_000, 1_000, 0, 0),
        YieldMark(_at(5), 1_003, 1_000, 0, 0),
        YieldMark(_at(30), 1_017, 1_000, 0, 0),
        YieldMark(_at(50), 500, 490, 9, 0),
    ]
    whole = earnings(found, _at(0), _at(60), EarningsInterval.DAY, FEE_BPS)
    assert [e.date for e in whole.items] == [T0, T0 + timedelta(days=1), T0 + timedelta(days=2)]
    assert [e.yield_amount for e in whole.items] == [3, 14, 2]
    assert whole.total_yield == found[-1].yield_() - found[0].yield_()
    assert [e.fee_amount for e in whole.items] == [0, 1, 0]
    hourly = earnings(found, _at(3), _at(40), EarningsInterval.HOUR, FEE_BPS)
    assert len(hourly.items) == 37
    assert hourly.total_yield == found[2].yield_() - found[0].yield_()


async def test_a_wallets_earnings_add_up_to_its_books_and_to_its_withdrawals(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 10_000 * USDC)
    numbers = _numbers(engine, chains)
    for day in range(4):
        market.advance(DAY)
        await lifecycle.refresh(BASE)
        if day == 1:
            await lifecycle.top_up(
                owner.id, BASE, wallet.address, top_up_deposit(market, wallet.address, 500 * USDC)
            )
        if day == 2:
            await lifecycle.withdraw(owner.id, BASE, wallet.address, 2_000 * USDC)
    store = WalletStore(engine)
    now = stored(engine, wallet.address)
    withdrawals = store.withdrawals(now.id)
    value = now.idle + sum(now.positions.values())
    books_yield = sum(w.yield_ for w in withdrawals) + max(value - now.principal, 0)

    whole = numbers.earnings(owner.id, BASE, wallet.address, None, None, EarningsInterval.DAY)
    assert whole.total_yield == books_yield > 0
    assert whole.total_fee == sum(w.fee for w in withdrawals) + (
        max(value - now.principal, 0) * FEE_BPS // 10_000
    )
    assert len(whole.items) >= 4
    # any cut of the range adds up to the whole, to the unit
    first, last = whole.items[0].date, whole.items[-1].date + timedelta(days=1)
    middle = first + timedelta(hours=37, minutes=13)
    left = numbers.earnings(owner.id, BASE, wallet.address, None, middle, EarningsInterval.HOUR)
    right = numbers.earnings(owner.id, BASE, wallet.address, middle, last, EarningsInterval.DAY)
    assert left.total_yield + right.total_yield == whole.total_yield
    assert left.total_fee + right.total_fee == whole.total_fee

    await lifecycle.deactivate(owner.id, BASE, wallet.address, True)
    withdrawals = store.withdrawals(now.id)
    final = numbers.earnings(owner.id, BASE, wallet.address, None, None, EarningsInterval.DAY)
    assert final.total_yield == sum(w.yield_ for w in withdrawals)
    assert final.total_fee == sum(w.fee for w in withdrawals)


async def test_performance_is_the_books_points_then_now_split_by_protocol(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 5_000 * USDC)
    for _ in range(3):
        market.advance(DAY)
        await lifecycle.refresh(BASE)
    numbers = _numbers(engine, chains)
    view = await numbers.performance(owner.id, BASE, wallet.address, None)
    stored_points = WalletStore(engine).points(wallet.id)
    assert list(view.points[:-1]) == stored_points
    now = view.points[-1]
    assert now.at >= stored_points[-1].at
    held = stored(engine, wallet.address)
    assert now.value == held.idle + sum(held.positions.values())
    assert {p: a.amount for p, a in view.portfolio.items()} == {
        p: a for p, a in held.positions.items() if a > 0
    }
    for allocation in view.portfolio.values():
        parts = allocation.parts
        assert parts.total is not None and parts.net is not None
        assert parts.total == parts.base + parts.rewards  # type: ignore[operator]
        assert parts.net == parts.total * (1 - FEE_BPS / 10_000)
    later = await numbers.performance(owner.id, BASE, wallet.address, stored_points[-1].at)
    assert [p.at for p in later.points[:-1]] == [stored_points[-1].at]

    tokens = await numbers.token_aprs(owner.id, BASE, wallet.address, Period.ALL)
    apr = await make_reports(engine, chains).apr(owner.id, BASE, wallet.address, None, None, False)
    assert [(t.amount, t.apr) for t in tokens] == [(now.value, apr.apr)]
    assert apr.apr > 0
    day = await numbers.token_aprs(owner.id, BASE, wallet.address, Period.DAY)
    assert day[0].apr > 0


async def test_another_partner_reads_none_of_a_wallets_numbers(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 1_000 * USDC, eoa=OTHER_EOA)
    numbers = _numbers(engine, chains)
    stranger = owner.id + 1
    with pytest.raises(AccessDenied):
        numbers.earnings(stranger, BASE, wallet.address, None, None, EarningsInterval.DAY)
    with pytest.raises(AccessDenied):
        await numbers.performance(stranger, BASE, wallet.address, None)
    with pytest.raises(AccessDenied):
        await numbers.token_aprs(stranger, BASE, wallet.address, Period.ALL)
    with pytest.raises(InvalidInput):
        numbers.earnings(owner.id, BASE, wallet.address, T0, T0, EarningsInterval.DAY)
