"""For any sequence of deposits, top-ups, withdrawals, reward claims and simulated days,
a wallet's numbers agree with its books: the earnings add up to the books' yield to the
unit (and any cut of the range to the whole), the performance series is the books' points
then the chain's value now, the APR by token is the APR read's, and the books balance;
once deactivated, the earnings are its withdrawals' yield and fee."""

from __future__ import annotations

import contextlib
import uuid
from datetime import timedelta

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from support.books import assert_books_balance
from support.wallet_setup import (
    BASE,
    BASE_USDC,
    FEE_BPS,
    OTHER_EOA,
    USDC,
    activated,
    chain_value,
    make_lifecycle,
    make_reports,
    stored,
    top_up_deposit,
)
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.books.numbers import EarningsInterval, Period, WalletNumbers
from yieldagent.domain.errors import InvalidRequest
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.ports.credentials import Partner
from yieldagent.storage.wallets import WalletStore

PartnerKey = tuple[Partner, str]
HOUR = 3600
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("top_up"), st.integers(1, 20_000)),  # announced, whole USDC
        st.tuples(st.just("direct"), st.integers(1, 20_000)),  # sent, booked by the worker
        st.tuples(st.just("withdraw"), st.integers(1, 90)),  # percent of the value
        st.tuples(st.just("claim"), st.integers(0, 1)),  # staked (compounded) or paid out
        st.tuples(st.just("wait"), st.integers(1, 72)),  # simulated hours
    ),
    min_size=1,
    max_size=5,
)


def _books_yield(engine: Engine, address: str) -> tuple[int, int]:
    """The yield and fee the books show: withdrawals' plus what the value holds above
    principal (and the fee due on that)."""
    wallet = stored(engine, address)
    withdrawals = WalletStore(engine).withdrawals(wallet.id)
    accrued = max(wallet.idle + sum(wallet.positions.values()) - wallet.principal, 0)
    return (
        sum(w.yield_ for w in withdrawals) + accrued,
        sum(w.fee for w in withdrawals) + accrued * FEE_BPS // 10_000,
    )


@settings(
    max_examples=8,
    deadline=None,
    report_multiple_bugs=False,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a failing example is slow to shrink
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=STEPS, cut=st.floats(0, 1))
async def test_the_numbers_agree_with_the_books(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: PartnerKey,
    steps: list[tuple[str, int]],
    cut: float,
) -> None:
    """Each example has a smart account of its own in one database."""
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    reports = make_reports(engine, chains)
    numbers = WalletNumbers(WalletStore(engine), chains, load_catalog(), reports, FEE_BPS)
    wallet = await activated(
        lifecycle, engine, market, owner.id, 10_000 * USDC, agent_id=f"numbers-{uuid.uuid4().hex}"
    )
    address = wallet.address
    for action, size in steps:
        if action == "top_up":
            tx = top_up_deposit(market, address, size * USDC)
            await lifecycle.top_up(owner.id, BASE, address, tx)
        elif action == "direct":
            market.deposit_from(BASE, BASE_USDC, OTHER_EOA, address, size * USDC)
            await lifecycle.refresh(BASE)
        elif action == "withdraw":
            amount = chain_value(market, address) * size // 100
            if amount > 0:
                await lifecycle.withdraw(owner.id, BASE, address, amount)
        elif action == "claim":
            await lifecycle.set_reward_staking(owner.id, BASE, address, bool(size))
            with contextlib.suppress(InvalidRequest):  # nothing accrued yet
                await lifecycle.claim_rewards(owner.id, BASE, address)
        else:
            market.advance(size * HOUR)
            await lifecycle.refresh(BASE)

    # the earnings are the books' yield, and any cut of the range adds up to the whole
    whole = numbers.earnings(owner.id, BASE, address, None, None, EarningsInterval.DAY)
    assert (whole.total_yield, whole.total_fee) == _books_yield(engine, address)
    first = whole.items[0].date
    last = whole.items[-1].date + timedelta(days=1)
    middle = first + (last - first) * cut
    if first < middle < last:
        left = numbers.earnings(owner.id, BASE, address, first, middle, EarningsInterval.HOUR)
        right = numbers.earnings(owner.id, BASE, address, middle, last, EarningsInterval.DAY)
        assert left.total_yield + right.total_yield == whole.total_yield
        assert left.total_fee + right.total_fee == whole.total_fee

    # the performance series is the books' points, then the chain's value now
    view = await numbers.performance(owner.id, BASE, address, None)
    assert list(view.points[:-1]) == WalletStore(engine).points(stored(engine, address).id)
    assert view.points[-1].value == chain_value(market, address)
    assert sum(a.amount for a in view.portfolio.values()) <= view.points[-1].value

    # the APR by token is the APR read's, over the same books
    [token] = await numbers.token_aprs(owner.id, BASE, address, Period.ALL)
    apr = await reports.apr(owner.id, BASE, address, None, None, False)
    assert (token.amount, token.apr) == (chain_value(market, address), apr.apr)
    assert_books_balance(engine, market, [stored(engine, address)])

    await lifecycle.deactivate(owner.id, BASE, address, transfer=True)
    final = numbers.earnings(owner.id, BASE, address, None, None, EarningsInterval.DAY)
    withdrawals = WalletStore(engine).withdrawals(stored(engine, address).id)
    assert final.total_yield == sum(w.yield_ for w in withdrawals)
    assert final.total_fee == sum(w.fee for w in withdrawals)
    assert_books_balance(engine, market, [stored(engine, address)])
