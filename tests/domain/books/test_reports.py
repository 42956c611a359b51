"""What partners read about wallets: the wallet record, history pages, reward staking, the
time-weighted APR and the chain's statistics, on wallets moved through their lifecycle."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from sqlalchemy import Engine

from support.wallet_setup import (
    BASE,
    DAY,
    EOA,
    OTHER_EOA,
    USDC,
    activated,
    all_transactions,
    chain_value,
    make_lifecycle,
    make_reports,
    stored,
    top_up_deposit,
)
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.books.apr import YEAR_SECONDS, PerformancePoint
from yieldagent.domain.books.history import Share
from yieldagent.domain.books.valuation import moment_of
from yieldagent.domain.books.wallet_states import ACTIVE, WalletStatus
from yieldagent.domain.errors import AccessDenied, NotFound
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.pagination import PageRequest, Pagination
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.domain.ports.credentials import Partner
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.wallets import WalletStore

PartnerKey = tuple[Partner, str]
CENT = Decimal("0.01")


def _hundred(percentages: list[float]) -> Decimal:
    """The sum of percentages as printed: two decimals each."""
    return sum((Decimal(str(p)).quantize(CENT) for p in percentages), Decimal(0))


def _annualized(growth: float, span: timedelta) -> float:
    return (growth - 1) * YEAR_SECONDS / span.total_seconds() * 100


# -- the wallet record ------------------------------------------------------------------------


async def test_wallet_view_by_address_and_by_eoa(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    first = await activated(lifecycle, engine, market, owner.id, 1000 * USDC, agent_id="first")
    market.advance(DAY)
    await lifecycle.withdraw(owner.id, BASE, first.address, 100 * USDC)
    market.advance(DAY)
    latest = await activated(lifecycle, engine, market, owner.id, 300 * USDC, agent_id="second")
    reports = make_reports(engine, chains)

    view = reports.wallet_view(BASE, first.address, by_eoa=False)
    assert view.wallet == stored(engine, first.address)
    assert [d.amount for d in view.deposits] == [1000 * USDC]
    assert [w.amount for w in view.withdrawals] == [100 * USDC]

    by_eoa = reports.wallet_view(BASE, EOA, by_eoa=True)
    assert by_eoa.wallet.address == latest.address
    assert by_eoa.wallet == stored(engine, latest.address)
    assert [d.amount for d in by_eoa.deposits] == [300 * USDC]
    assert by_eoa.withdrawals == []

    with pytest.raises(NotFound, match="not found"):
        reports.wallet_view(BASE, OTHER_EOA, by_eoa=True)
    with pytest.raises(NotFound, match="not found"):
        reports.wallet_view(BASE, OTHER_EOA, by_eoa=False)
    with pytest.raises(NotFound, match="not supported"):
        reports.wallet_view(999, first.address, by_eoa=False)


# -- history pages --------------------------------------------------------------------------


async def test_transaction_pages(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 250_000 * USDC)
    for _ in range(2):
        market.advance(DAY)
        await lifecycle.withdraw(owner.id, BASE, wallet.address, 1000 * USDC)
    everything = all_transactions(engine, wallet.id)
    total = len(everything)
    assert total >= 9  # deposit, 2+ supplies, and per withdrawal: withdraw, transfer, fee
    reports = make_reports(engine, chains)

    oldest, first_page = reports.transactions(
        owner.id, BASE, wallet.address, PageRequest(1, 4, False)
    )
    assert oldest == everything[:4]
    assert first_page == Pagination(total, -(-total // 4), 1, 4)
    second, _ = reports.transactions(owner.id, BASE, wallet.address, PageRequest(2, 4, False))
    assert second == everything[4:8]
    newest, _ = reports.transactions(owner.id, BASE, wallet.address, PageRequest(1, 3, True))
    assert newest == everything[::-1][:3]
    assert newest[0].action in {"transfer", "fee_transfer"}
    beyond, page = reports.transactions(owner.id, BASE, wallet.address, PageRequest(99, 4, True))
    assert beyond == []
    assert page == Pagination(total, -(-total // 4), 99, 4)


async def test_reward_pages_and_staking(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(
        lifecycle, engine, market, owner.id, 1000 * USDC, protocols=("moonwell",)
    )
    reports = make_reports(engine, chains)
    assert reports.rewards(owner.id, BASE, wallet.address, PageRequest(1, 10, True)) == (
        [],
        Pagination(0, 0, 1, 10),
    )
    assert reports.reward_staking(owner.id, BASE, wallet.address) is False
    market.advance(7 * DAY)
    (first,) = await lifecycle.claim_rewards(owner.id, BASE, wallet.address)
    await lifecycle.set_reward_staking(owner.id, BASE, wallet.address, True)
    assert reports.reward_staking(owner.id, BASE, wallet.address) is True
    market.advance(7 * DAY)
    (second,) = await lifecycle.claim_rewards(owner.id, BASE, wallet.address)

    newest, page = reports.rewards(owner.id, BASE, wallet.address, PageRequest(1, 1, True))
    assert page == Pagination(2, 2, 1, 1)
    assert [(r.amount, r.is_staked) for r in newest] == [(second.amount, True)]
    oldest, _ = reports.rewards(owner.id, BASE, wallet.address, PageRequest(1, 1, False))
    assert [(r.amount, r.is_staked) for r in oldest] == [(first.amount, False)]
    assert oldest[0].date + timedelta(days=7) == newest[0].date


async def test_another_partner_may_not_read_the_wallet(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: PartnerKey,
    partners: PartnerStore,
) -> None:
    owner, _ = partner
    other, _ = partners.create("other", PERMISSIONS)
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 1000 * USDC)
    reports = make_reports(engine, chains)
    page = PageRequest(1, 10, True)

    with pytest.raises(AccessDenied):
        reports.transactions(other.id, BASE, wallet.address, page)
    with pytest.raises(AccessDenied):
        reports.rewards(other.id, BASE, wallet.address, page)
    with pytest.raises(AccessDenied):
        reports.reward_staking(other.id, BASE, wallet.address)
    with pytest.raises(AccessDenied):
        await reports.apr(other.id, BASE, wallet.address, None, None, False)
    with pytest.raises(NotFound):
        reports.transactions(owner.id, 999, wallet.address, page)
    assert reports.reward_staking(owner.id, BASE, wallet.address) is False


# -- APR ------------------------------------------------------------------------------------


async def test_apr_over_one_sub_period(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    wallet = await activated(make_lifecycle(engine, chains), engine, market, owner.id, 1000 * USDC)
    market.advance(30 * DAY)
    value = chain_value(market, wallet.address)

    result = await make_reports(engine, chains).apr(
        owner.id, BASE, wallet.address, None, None, False
    )

    (period,) = result.sub_periods
    assert (period.start, period.end) == (wallet.activation_date, moment_of(market.now()))
    assert (period.initial_value, period.final_value) == (1000 * USDC, value)
    assert result.apr > 0
    assert result.apr == pytest.approx(_annualized(value / (1000 * USDC), timedelta(days=30)))


async def test_apr_chains_the_sub_periods_around_a_top_up(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 1000 * USDC)
    market.advance(15 * DAY)
    tx = top_up_deposit(market, wallet.address, 500 * USDC)
    await lifecycle.top_up(owner.id, BASE, wallet.address, tx)
    market.advance(15 * DAY)
    live = chain_value(market, wallet.address)

    result = await make_reports(engine, chains).apr(
        owner.id, BASE, wallet.address, None, None, False
    )

    start, top_up = WalletStore(engine).points(wallet.id)
    assert start == PerformancePoint(wallet.activation_date, 0, 1000 * USDC)
    assert top_up.at == wallet.activation_date + timedelta(days=15)
    assert top_up.flow == 500 * USDC
    assert [(p.initial_value, p.final_value) for p in result.sub_periods] == [
        (start.after, top_up.value),
        (top_up.after, live),
    ]
    growth = (top_up.value / start.after) * (live / top_up.after)
    assert result.apr > 0
    assert result.apr == pytest.approx(_annualized(growth, timedelta(days=30)), rel=1e-12)


async def test_apr_up_to_a_past_end_date(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 1000 * USDC)
    for _ in range(2):
        market.advance(10 * DAY)
        assert await lifecycle.refresh(BASE) == 1
    market.advance(10 * DAY)
    start, ten, twenty = WalletStore(engine).points(wallet.id)
    end = wallet.activation_date + timedelta(days=15)
    reports = make_reports(engine, chains)

    stored_end = await reports.apr(owner.id, BASE, wallet.address, None, end, False)
    (period,) = stored_end.sub_periods
    assert (period.start, period.end) == (start.at, ten.at)
    assert (period.initial_value, period.final_value) == (1000 * USDC, ten.value)
    assert stored_end.apr == pytest.approx(_annualized(ten.value / start.after, ten.at - start.at))

    exact_end = await reports.apr(owner.id, BASE, wallet.address, None, end, True)
    (period,) = exact_end.sub_periods
    fraction = (end - ten.at).total_seconds() / (twenty.at - ten.at).total_seconds()
    interpolated = int(ten.after * (twenty.value / ten.after) ** fraction)
    assert (period.start, period.end) == (start.at, end)
    assert period.final_value == interpolated
    assert ten.value < interpolated < twenty.value
    assert exact_end.apr == pytest.approx(
        _annualized(interpolated / start.after, end - start.at), rel=1e-12
    )
    assert exact_end.apr > 0
    assert stored_end.apr > 0


# -- statistics -----------------------------------------------------------------------------


async def test_statistics(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    big = await activated(lifecycle, engine, market, owner.id, 250_000 * USDC, agent_id="big")
    small = await activated(lifecycle, engine, market, owner.id, 1000 * USDC, eoa=OTHER_EOA)
    gone = await activated(lifecycle, engine, market, owner.id, 100_000 * USDC, agent_id="gone")
    frozen = await activated(lifecycle, engine, market, owner.id, 50_000 * USDC, agent_id="ice")
    market.advance(5 * DAY)
    await lifecycle.deactivate(owner.id, BASE, gone.address, transfer=True)
    await lifecycle.operate(BASE, frozen.address, "block")
    wallets = [stored(engine, w.address) for w in (big, small, gone, frozen)]
    held = [w for w in wallets if w.status != WalletStatus.DEACTIVATED]
    active = [w for w in wallets if w.status in ACTIVE]
    assert len(held) == 3
    assert len(active) == 2

    stats = make_reports(engine, chains).statistics(BASE)

    balance = sum(w.idle + sum(w.positions.values()) for w in held)
    assert stats.total_balance_usd == pytest.approx(balance / USDC)
    assert stats.total_deposits_usd == pytest.approx(401_000.0)
    assert stats.total_users == 2
    assert stats.total_transactions == sum(len(all_transactions(engine, w.id)) for w in wallets)
    assert stats.total_apr == pytest.approx(sum(w.current_apr for w in active) / 2)
    assert stats.initial_deposits == [Share("USDC", 401_000.0, 100.0)]
    assert stats.current_tokens == [Share("USDC", pytest.approx(balance / USDC), 100.0)]  # type: ignore[arg-type]

    by_protocol: dict[str, int] = {}
    for wallet in held:
        for protocol, amount in wallet.positions.items():
            by_protocol[protocol] = by_protocol.get(protocol, 0) + amount
    assert [p.protocol for p in stats.protocols] == sorted(by_protocol)
    assert len(stats.protocols) >= 2
    assert _hundred([p.percentage for p in stats.protocols]) == Decimal(100)
    placed = sum(by_protocol.values())
    for share in stats.protocols:
        assert share.percentage == pytest.approx(
            100 * by_protocol[share.protocol] / placed, abs=0.01
        )
        (balance_share,) = share.balances
        assert balance_share.token == "USDC"
        assert balance_share.amount == pytest.approx(by_protocol[share.protocol] / USDC)
        assert _hundred([b.percentage for b in share.balances]) == Decimal(100)

    with pytest.raises(NotFound):
        make_reports(engine, chains).statistics(999)
