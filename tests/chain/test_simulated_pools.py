"""The simulated pools: exact accounting, rate impact, accrual, rewards, determinism."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.genesis import genesis_pool, genesis_pools
from yieldagent.chain.simulated.pools import (
    STEP_SECONDS,
    accrue,
    advance,
    catch_up,
    copy_pool,
    deposit,
    first_step_after,
    quote_of,
    rewards_owed,
    supply_rate,
    take_step,
    value_of,
    withdraw,
)
from yieldagent.domain.market.rate_models import (
    MAX_RATE_AT_TARGET,
    MIN_RATE_AT_TARGET,
    RAY,
    SECONDS_PER_YEAR,
    AaveV3,
    apr_percent,
    model_for,
    percent,
    ray_div,
)
from yieldagent.simulated_world.state import MarketError, MarketState, PoolState

GENESIS = 1_767_225_600  # 2026-01-01T00:00:00Z, a step boundary
SEED = 7
BASE = 8453
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
WELL = "0xA88594D404727625A9437C3f886C7643872296AE"
UNIT = 10**6  # one USDC
DAY = 86_400
YEAR_RAY = RAY * SECONDS_PER_YEAR
NEVER = 10**12  # a step number no test reaches: borrow demand never moves
CATALOG = load_catalog()
BASE_PROTOCOLS = ("aave", "compound", "moonwell", "morpho_gauntlet_usdc_prime")


def _genesis(protocol: str, seed: int = SEED) -> PoolState:
    token = CATALOG.token(BASE, USDC)
    info = token.protocol(protocol)
    assert info is not None
    return genesis_pool(BASE, token, info, seed, GENESIS)


def _pool(
    kind: str,
    markets: list[tuple[int, int]],
    *,
    fee: int = 0,
    index: int = RAY,
    reward_rate: int = 0,
) -> PoolState:
    """A pool whose markets' (supply, borrows) are given and whose borrow demand never moves."""
    model = model_for(kind)
    return PoolState(
        chain_id=BASE,
        protocol="test",
        token=USDC,
        kind=kind,
        fee=fee,
        liquidity_index=index,
        scaled_supply=0,
        markets=[
            MarketState(f"market {i}", supply, borrows, model.initial_rate_at_target(), 0.8, 0.8)
            for i, (supply, borrows) in enumerate(markets)
        ],
        updated_at=GENESIS,
        next_step=NEVER,
        reward_token=WELL if reward_rate else None,
        reward_rate=reward_rate,
    )


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


# -- deposits and withdrawals -------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(index=st.integers(min_value=RAY, max_value=2 * RAY), amount=st.integers(1, 10**15))
def test_deposit_then_withdraw_never_gains_and_loses_at_most_one_scaled_unit(
    index: int, amount: int
) -> None:
    pool = _pool("aave_v3", [(10**16, 5 * 10**15)], index=index)
    before = copy_pool(pool)
    scaled = deposit(pool, amount)
    assert scaled == amount * RAY // index
    value = value_of(pool, scaled)
    assert value <= amount  # rounding favours the pool
    # A scaled unit is worth index/RAY token units: that is all the holder can lose.
    assert amount - value <= _ceil_div(index, RAY)
    if value > 0:
        assert withdraw(pool, value, scaled) == scaled  # no dust left behind
    assert pool.scaled_supply == before.scaled_supply
    assert pool.total_supply() == before.total_supply() + (amount - value)
    assert pool.liquidity_index == index


@given(amount=st.integers(1, 10**15))
def test_at_index_one_a_round_trip_is_exact(amount: int) -> None:
    pool = _pool("aave_v3", [(10**16, 5 * 10**15)])
    scaled = deposit(pool, amount)
    assert scaled == amount
    assert value_of(pool, scaled) == amount
    assert withdraw(pool, amount, scaled) == scaled


def test_above_index_one_a_round_trip_can_lose_two_units() -> None:
    # Hand-computed: at index 1.09, 13 units mint floor(13 / 1.09) = 11 scaled units,
    # worth floor(11 * 1.09) = floor(11.99) = 11: two units stay in the pool.
    pool = _pool("aave_v3", [(10**16, 5 * 10**15)], index=RAY * 109 // 100)
    scaled = deposit(pool, 13)
    assert scaled == 11
    assert value_of(pool, scaled) == 11


@pytest.mark.parametrize("amount", [0, -1])
def test_non_positive_amounts_are_refused(amount: int) -> None:
    pool = _pool("aave_v3", [(1_000 * UNIT, 500 * UNIT)])
    scaled = deposit(pool, 100 * UNIT)
    before = copy_pool(pool)
    with pytest.raises(MarketError, match="positive"):
        deposit(pool, amount)
    with pytest.raises(MarketError, match="positive"):
        withdraw(pool, amount, scaled)
    assert pool == before


def test_withdrawing_beyond_the_position_raises_and_changes_nothing() -> None:
    pool = _pool("aave_v3", [(1_000 * UNIT, 500 * UNIT)])
    scaled = deposit(pool, 100 * UNIT)
    accrue(pool, GENESIS + 30 * DAY)
    value = value_of(pool, scaled)
    assert value > 100 * UNIT
    before = copy_pool(pool)
    with pytest.raises(MarketError, match="position"):
        withdraw(pool, value + 1, scaled)
    assert pool == before
    assert withdraw(pool, value, scaled) == scaled
    assert pool.scaled_supply == 0


def test_withdrawing_beyond_the_pools_cash_raises_and_changes_nothing() -> None:
    pool = _pool("aave_v3", [(1_000 * UNIT, 1_000 * UNIT)])  # everything lent out
    scaled = deposit(pool, 100 * UNIT)
    pool.markets[0].borrows += 60 * UNIT  # someone borrows most of it
    assert pool.cash() == 40 * UNIT
    before = copy_pool(pool)
    with pytest.raises(MarketError, match="liquidity"):
        withdraw(pool, 40 * UNIT + 1, scaled)
    assert pool == before
    withdraw(pool, 40 * UNIT, scaled)
    assert pool.cash() == 0
    assert value_of(pool, pool.scaled_supply) == 60 * UNIT


def test_a_vault_withdrawal_takes_from_its_markets_pro_rata() -> None:
    pool = _pool(
        "morpho_blue",
        [(100 * UNIT, 100 * UNIT), (100 * UNIT, 50 * UNIT), (100 * UNIT, 80 * UNIT)],
        fee=RAY // 10,
    )
    scaled = deposit(pool, 90 * UNIT)  # 30 to each market
    assert [m.supply for m in pool.markets] == [130 * UNIT] * 3
    assert [m.cash() for m in pool.markets] == [30 * UNIT, 80 * UNIT, 50 * UNIT]
    withdraw(pool, 85 * UNIT, scaled)
    taken = [130 * UNIT - m.supply for m in pool.markets]
    assert sum(taken) == 85 * UNIT
    assert max(taken) - min(taken) <= len(taken) - 1  # a third each, to the rounding


def test_a_vault_withdrawal_beyond_a_markets_cash_is_made_up_by_the_others() -> None:
    pool = _pool(
        "morpho_blue",
        [(100 * UNIT, 100 * UNIT), (100 * UNIT, 50 * UNIT), (100 * UNIT, 80 * UNIT)],
        fee=RAY // 10,
    )
    scaled = deposit(pool, 300 * UNIT)  # 100 to each market: cash 100, 150, 120
    pool.markets[0].borrows += 60 * UNIT  # someone borrows from market 0: cash 40
    assert pool.cash() == 310 * UNIT
    withdraw(pool, 300 * UNIT, scaled)
    # Pro rata is 100 from each, but market 0 holds only 40: the first market with cash
    # left (1, with 50) gives 50 more, and market 2 the last 10.
    assert [m.cash() for m in pool.markets] == [0, 0, 10 * UNIT]
    assert sum(200 * UNIT - m.supply for m in pool.markets) == 300 * UNIT
    assert all(m.borrows <= m.supply for m in pool.markets)


# -- rate impact --------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", BASE_PROTOCOLS)
def test_supplying_lowers_the_quoted_apr(protocol: str) -> None:
    pool = _genesis(protocol)
    before = copy_pool(pool)
    quote = quote_of(pool)
    deltas = [0, 10**9, 10**11, 10**13, 10**14]
    aprs = [quote.apr(delta) for delta in deltas]
    assert aprs == sorted(aprs, reverse=True)
    assert len(set(aprs)) == len(aprs)  # strictly decreasing
    assert quote.apr(-(10**12)) > quote.apr(0)  # removing supply raises it
    assert quote.rate(0) == supply_rate(pool)
    assert quote.apr(0) == apr_percent(supply_rate(pool))
    assert 0 < quote.apr(0) < 20
    assert quote.total_supply == pool.total_supply()
    assert quote.cash == pool.cash()
    assert pool == before  # quoting changes nothing


def test_a_vault_fee_is_taken_from_the_gross_rate() -> None:
    markets = [(100 * UNIT, 90 * UNIT), (200 * UNIT, 150 * UNIT)]
    gross = supply_rate(_pool("morpho_blue", markets))
    net = supply_rate(_pool("morpho_blue", markets, fee=RAY // 10))
    assert net == gross * (RAY - RAY // 10) // RAY


@settings(max_examples=200, deadline=None)
@given(amount=st.integers(1, 10**16))
def test_a_vault_deposit_spreads_over_its_markets_pro_rata(amount: int) -> None:
    pool = _genesis("morpho_gauntlet_usdc_prime")
    assert len(pool.markets) == 3
    supplies = [m.supply for m in pool.markets]
    total = sum(supplies)
    deposit(pool, amount)
    parts = [m.supply - s for m, s in zip(pool.markets, supplies, strict=True)]
    assert sum(parts) == amount
    exact = [Fraction(amount * s, total) for s in supplies]
    assert parts[1:] == [int(e) for e in exact[1:]]  # floor of the exact share
    assert 0 <= parts[0] - exact[0] < len(parts)  # the first absorbs the rounding


def test_a_vault_deposit_lowers_every_markets_rate() -> None:
    pool = _genesis("morpho_gauntlet_usdc_prime")
    before = copy_pool(pool)
    deposit(pool, 5_000_000 * UNIT)
    for old, new in zip(before.markets, pool.markets, strict=True):
        old_rate = pool.model.rates(old.supply, old.borrows, old.rate_at_target).supply
        new_rate = pool.model.rates(new.supply, new.borrows, new.rate_at_target).supply
        assert new_rate < old_rate
    assert supply_rate(pool) == quote_of(before).rate(5_000_000 * UNIT)


@pytest.mark.parametrize("protocol", BASE_PROTOCOLS)
def test_the_rate_bends_where_a_market_reaches_a_kink_or_fills_up(protocol: str) -> None:
    """The optimizer looks at these changes of position: each puts some market of the pool
    at a kink of its rate model (or full), to within a unit's rounding."""
    pool = _genesis(protocol)
    deltas = quote_of(pool).kinks()
    total = pool.total_supply()
    kinks = [Fraction(k, RAY) for k in pool.model.kinks]
    assert len(deltas) >= len(kinks)
    for delta in deltas:
        utilizations = [
            Fraction(m.borrows, m.supply + delta * m.supply // total) for m in pool.markets
        ]
        closest = min(abs(u - k) for u in utilizations for k in kinks)
        assert closest < Fraction(1, 10**9), (delta, closest)


# -- accrual ------------------------------------------------------------------------------


def test_accrual_over_a_year_of_days_is_exact_to_the_unit() -> None:
    """An Aave pool accrued 365 times, against an independent integer recomputation."""
    pool = _pool("aave_v3", [(100_000_000 * UNIT, 80_000_000 * UNIT)])
    model = AaveV3.base_usdc()
    amount = 1_000_000 * UNIT
    scaled = deposit(pool, amount)
    supply, borrows, index = 101_000_000 * UNIT, 80_000_000 * UNIT, RAY
    for day in range(1, 366):
        rates = model.rates(supply, borrows, 0)
        index += index * rates.supply * DAY // YEAR_RAY
        supply += supply * rates.supply * DAY // YEAR_RAY
        borrows += borrows * rates.borrow * DAY // YEAR_RAY
        accrue(pool, GENESIS + day * DAY)
        assert pool.liquidity_index == index
        assert (pool.markets[0].supply, pool.markets[0].borrows) == (supply, borrows)
    assert pool.updated_at == GENESIS + 365 * DAY
    assert value_of(pool, scaled) == amount * index // RAY
    assert 1.02 < value_of(pool, scaled) / amount < 1.06  # some 3-5% in a year


def test_vault_accrual_over_irregular_spans_is_exact_to_the_unit() -> None:
    """A Morpho vault (three adaptive markets, a fee) accrued over two years of odd spans."""
    pool = _pool(
        "morpho_blue",
        [
            (25_000_000 * UNIT, 23_000_000 * UNIT),
            (20_000_000 * UNIT, 17_000_000 * UNIT),
            (10_000_000 * UNIT, 8_000_000 * UNIT),
        ],
        fee=RAY // 10,
    )
    amount = 123_456_789_012
    scaled = deposit(pool, amount)
    spans = random.Random(1).choices([1, 59, 3_600, 86_399, 86_400, 7 * DAY, 31 * DAY], k=200)
    index, moment = RAY, GENESIS
    for seconds in spans:
        rate = supply_rate(pool)  # the rate in force during the span, fixed at its start
        index += index * rate * seconds // YEAR_RAY
        moment += seconds
        accrue(pool, moment)
        assert pool.liquidity_index == index
    assert moment - GENESIS > 2 * SECONDS_PER_YEAR
    assert value_of(pool, scaled) == scaled * index // RAY
    assert value_of(pool, scaled) > amount


def test_a_year_at_a_fixed_rate_matches_the_closed_form() -> None:
    # Fully borrowed (borrows above supply keep utilization at 100%, as they grow faster),
    # the rate is constant: a vault fee then brings it to about 5% a year.
    model = model_for("compound_v3")
    gross = model.rates(1, 2, 0).supply
    fee = RAY - ray_div(percent("0.05"), gross)
    pool = _pool("compound_v3", [(50_000_000 * UNIT, 60_000_000 * UNIT)], fee=fee)
    amount = 1_000_000 * UNIT
    scaled = deposit(pool, amount)
    rate = supply_rate(pool)
    assert abs(apr_percent(rate) - 5.0) < 1e-9
    for day in range(1, 366):
        assert supply_rate(pool) == rate
        accrue(pool, GENESIS + day * DAY)
    factor = (1 + Fraction(rate * DAY, YEAR_RAY)) ** 365
    closed_index = RAY * factor
    assert pool.liquidity_index <= closed_index  # every accrual rounds down
    assert (closed_index - pool.liquidity_index) / closed_index < Fraction(1, 10**24)
    value = value_of(pool, scaled)
    assert amount * factor - 1 <= value <= amount * factor
    assert round(value / amount, 5) == 1.05127  # (1 + 5%/365)^365


def test_accruing_is_a_no_op_for_past_or_present_times() -> None:
    pool = _pool("aave_v3", [(1_000 * UNIT, 800 * UNIT)])
    accrue(pool, GENESIS + DAY)
    before = copy_pool(pool)
    accrue(pool, GENESIS + DAY)
    accrue(pool, GENESIS)
    assert pool == before


# -- rewards ------------------------------------------------------------------------------


def test_rewards_accrue_pro_rata_to_scaled_balances() -> None:
    rate = 475_646_879_756_468_800  # WELL units a second
    pool = _pool("moonwell", [(30_000_000 * UNIT, 22_000_000 * UNIT)], reward_rate=rate)
    first, first_snapshot = deposit(pool, 1_000 * UNIT), pool.reward_index
    second, second_snapshot = deposit(pool, 3_000 * UNIT), pool.reward_index
    assert second == 3 * first
    moment = GENESIS
    for seconds in (1, 59, 3_600, 86_399, 7 * DAY, 30 * DAY, 12_345):
        moment += seconds
        accrue(pool, moment)
    owed_first = rewards_owed(pool, first, first_snapshot)
    owed_second = rewards_owed(pool, second, second_snapshot)
    assert owed_first > 0
    assert 0 <= owed_second - 3 * owed_first <= 2  # each rounds down once
    # The emission goes to the pool's whole supply: the two hold 4,000 of 30,004,000 USDC.
    emitted = rate * (moment - GENESIS)
    # Their share of the supply stays 4,000/30,004,000 as everyone earns the same rate, so
    # they collect exactly that share, up to integer rounding.
    assert owed_first + owed_second == pytest.approx(emitted * 4_000 / 30_004_000, rel=1e-9)


def test_a_holder_of_the_whole_pool_collects_the_whole_emission() -> None:
    rate = 10**18
    pool = _pool("moonwell", [(0, 0)], reward_rate=rate)
    scaled = deposit(pool, 1_000 * UNIT)
    moment = GENESIS
    for seconds in (1, 3_599, DAY, 7 * DAY):
        moment += seconds
        accrue(pool, moment)
    emitted = rate * (moment - GENESIS)
    assert emitted - 4 <= rewards_owed(pool, scaled, 0) <= emitted


def test_a_later_supplier_earns_rewards_only_from_then_on() -> None:
    rate = 10**18
    pool = _pool("moonwell", [(30_000_000 * UNIT, 22_000_000 * UNIT)], reward_rate=rate)
    early, early_snapshot = deposit(pool, 1_000 * UNIT), pool.reward_index
    accrue(pool, GENESIS + DAY)
    on_day_one = rewards_owed(pool, early, early_snapshot)
    late, late_snapshot = deposit(pool, 1_000 * UNIT), pool.reward_index
    assert rewards_owed(pool, late, late_snapshot) == 0
    accrue(pool, GENESIS + 2 * DAY)
    owed_early = rewards_owed(pool, early, early_snapshot)
    owed_late = rewards_owed(pool, late, late_snapshot)
    assert late < early  # the index has grown: the same amount buys fewer scaled units
    assert on_day_one == pytest.approx(rate * DAY * 1_000 / 30_001_000, rel=1e-3)
    assert owed_late == pytest.approx(rate * DAY * 1_000 / 30_002_000, rel=1e-3)
    assert owed_early - on_day_one == pytest.approx(owed_late * early / late, rel=1e-9)


def test_emissions_before_anyone_of_ours_supplies_go_to_the_other_suppliers() -> None:
    pool = _pool("moonwell", [(30_000_000 * UNIT, 22_000_000 * UNIT)], reward_rate=10**18)
    accrue(pool, GENESIS + DAY)
    assert pool.reward_index > 0
    scaled, snapshot = deposit(pool, 1_000 * UNIT), pool.reward_index
    assert rewards_owed(pool, scaled, snapshot) == 0


# -- determinism and borrow demand ----------------------------------------------------------


def test_genesis_is_a_function_of_the_seed() -> None:
    assert genesis_pools(CATALOG, SEED, GENESIS) == genesis_pools(CATALOG, SEED, GENESIS)
    assert genesis_pools(CATALOG, SEED, GENESIS) != genesis_pools(CATALOG, SEED + 1, GENESIS)


@pytest.mark.parametrize("protocol", BASE_PROTOCOLS)
def test_the_same_seed_gives_the_same_market_and_another_seed_another(protocol: str) -> None:
    until = GENESIS + 5 * STEP_SECONDS + 17
    same, again, other = _genesis(protocol), _genesis(protocol), _genesis(protocol)
    advance(same, until, SEED)
    advance(again, until, SEED)
    advance(other, until, SEED + 1)
    assert same == again
    assert [m.borrows for m in same.markets] != [m.borrows for m in other.markets]
    assert same.next_step == other.next_step == first_step_after(until)


def test_advancing_in_chunks_at_step_boundaries_matches_one_call() -> None:
    until = GENESIS + 3 * DAY
    for protocol in BASE_PROTOCOLS:
        whole, chunked = _genesis(protocol), _genesis(protocol)
        advance(whole, until, SEED)
        moment = GENESIS
        for steps in (1, 5, 2, 20, 44):
            moment += steps * STEP_SECONDS
            advance(chunked, moment, SEED)
        assert moment == until
        assert chunked == whole


def test_catching_up_in_irregular_chunks_matches_one_call() -> None:
    """What a store keeps (catch_up at arbitrary moments) does not depend on the moments;
    projecting to T from it gives what one advance to T gives."""
    until = GENESIS + 3 * DAY + 1_234
    chunks = random.Random(3)
    for protocol in BASE_PROTOCOLS:
        whole, chunked = _genesis(protocol), _genesis(protocol)
        advance(whole, until, SEED)
        moment = GENESIS
        while moment < until:
            moment = min(until, moment + chunks.randint(1, 5 * STEP_SECONDS))
            catch_up(chunked, moment, SEED)
        advance(chunked, until, SEED)
        assert chunked.next_step == whole.next_step
        assert chunked == whole, protocol


@pytest.mark.parametrize("protocol", BASE_PROTOCOLS)
def test_borrow_demand_stays_within_bounds_for_thousands_of_steps(protocol: str) -> None:
    pool = _genesis(protocol)
    for _ in range(2_000):
        index = pool.liquidity_index
        take_step(pool, SEED)
        assert pool.liquidity_index >= index
        for market in pool.markets:
            assert 0 <= market.borrows <= market.supply
            assert 0.30 <= market.target_utilization <= 0.97
            assert 0.29 < market.borrows / market.supply < 0.98
            if pool.kind == "morpho_blue":
                assert MIN_RATE_AT_TARGET <= market.rate_at_target <= MAX_RATE_AT_TARGET
    assert pool.updated_at == GENESIS + 2_000 * STEP_SECONDS
    assert pool.liquidity_index > RAY
