"""Rate quotes from what a chain can tell: a pool's markets, what it holds in each, and its
own rate impact."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from yieldagent.domain.market.quotes import MarketQuote, PoolQuote, spread
from yieldagent.domain.market.rate_models import RAY, AaveV3, MorphoBlue, percent

UNIT = 10**6
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
MORPHO = MorphoBlue.base_usdc()


def _vault(*markets: tuple[int, int, int], fee: int = 0) -> PoolQuote:
    """A vault holding ``held`` of each (supply, borrows, held) market."""
    quotes = tuple(
        MarketQuote(f"m{i}", supply * UNIT, borrows * UNIT, percent("0.04"), held * UNIT)
        for i, (supply, borrows, held) in enumerate(markets)
    )
    return PoolQuote("vault", USDC, MORPHO, quotes, fee)


def test_a_single_market_pool_holds_the_whole_market_by_default() -> None:
    market = MarketQuote("usdc", 100 * UNIT, 80 * UNIT)
    assert market.held == 100 * UNIT
    quote = PoolQuote("aave", USDC, AaveV3.base_usdc(), (market,))
    assert quote.total_supply == 100 * UNIT
    assert quote.cash == 20 * UNIT
    rate = AaveV3.base_usdc().rates(150 * UNIT, 80 * UNIT, 0).supply
    assert quote.rate(50 * UNIT) == rate


def test_a_vault_is_worth_what_it_holds_and_can_pay_within_each_markets_cash() -> None:
    quote = _vault((1_000, 900, 100), (500, 450, 400))
    assert quote.total_supply == 500 * UNIT
    assert quote.cash == (100 + 50) * UNIT  # all of market 0's share; market 1 has 50 of cash


def test_a_vault_rate_weighs_each_market_by_the_vaults_holding_not_its_size() -> None:
    quote = _vault((1_000, 900, 100), (500, 250, 400))
    rates = [MORPHO.rates(m.supply, m.borrows, m.rate_at_target).supply for m in quote.markets]
    assert quote.rate() == (100 * rates[0] + 400 * rates[1]) // 500


def test_a_deposit_lands_in_proportion_to_holdings_and_moves_each_markets_rate() -> None:
    quote = _vault((1_000, 900, 100), (500, 250, 400))
    x = 50 * UNIT
    parts = spread(quote.markets, x)
    assert parts == [10 * UNIT, 40 * UNIT]
    rates = [
        MORPHO.rates(m.supply + d, m.borrows, m.rate_at_target).supply
        for m, d in zip(quote.markets, parts, strict=True)
    ]
    assert quote.rate(x) == (110 * rates[0] + 440 * rates[1]) // 550


def test_a_vault_fee_comes_off_the_gross_rate() -> None:
    gross = _vault((1_000, 900, 100), (500, 250, 400)).rate()
    net = _vault((1_000, 900, 100), (500, 250, 400), fee=RAY // 10).rate()
    assert net == gross * 9 // 10


def test_a_vault_holding_nothing_puts_a_deposit_in_its_first_market() -> None:
    quote = _vault((1_000, 900, 0), (500, 250, 0))
    assert spread(quote.markets, 7) == [7, 0]
    assert quote.rate() == 0
    assert quote.rate(10 * UNIT) == MORPHO.rates(1_010 * UNIT, 900 * UNIT, percent("0.04")).supply


@settings(max_examples=200, deadline=None)
@given(
    held=st.lists(st.integers(0, 10**15), min_size=1, max_size=5),
    amount=st.integers(-(10**15), 10**15),
)
def test_spreading_splits_exactly_and_in_proportion(held: list[int], amount: int) -> None:
    markets = [MarketQuote(f"m{i}", h + 1, 0, 0, h) for i, h in enumerate(held)]
    parts = spread(markets, amount)
    assert sum(parts) == amount
    total = sum(held)
    if total:
        exact = [Fraction(amount * h, total) for h in held]
        assert all(abs(p - e) < len(held) for p, e in zip(parts, exact, strict=True))


def test_kinks_are_where_a_market_reaches_its_kink_under_the_vaults_spread() -> None:
    quote = _vault((1_000, 800, 100), (500, 250, 400))
    for delta in quote.kinks():
        parts = spread(quote.markets, delta)
        utilizations = [
            Fraction(m.borrows, m.supply + d) for m, d in zip(quote.markets, parts, strict=True)
        ]
        assert min(abs(u - Fraction(k, RAY)) for u in utilizations for k in MORPHO.kinks) < (
            Fraction(1, 10**6)
        )
