"""What an amount earns in one pool: a candidate's rates and yields after the wallet's own
change of position, and the optimizer's rates against the quotes' own. Pools are Base USDC's
at genesis (seed 7)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.genesis import genesis_pool
from yieldagent.chain.simulated.pools import quote_of
from yieldagent.chain.web3.protocols.onchain_models import CometModel
from yieldagent.domain.market.curves import Candidate, Yields, rate_function, weighted_apr
from yieldagent.domain.market.rate_models import CompoundV3

BASE = 8453
SEED = 7
GENESIS = 1_767_225_600
UNIT = 10**6  # one USDC
TOKEN = load_catalog().chain(BASE).tokens[0]
PROTOCOLS = tuple(p.name for p in TOKEN.protocols)


def _candidate(name: str, current: int = 0) -> Candidate:
    info = TOKEN.protocol(name)
    assert info is not None
    pool = genesis_pool(BASE, TOKEN, info, SEED, GENESIS)
    return Candidate(name, quote_of(pool), current)


CANDIDATES = tuple(_candidate(name) for name in PROTOCOLS)
BY_NAME = {c.protocol: c for c in CANDIDATES}


def test_what_the_wallet_already_holds_is_priced_without_its_own_impact() -> None:
    held = 50_000_000 * UNIT
    holder = _candidate("aave", current=held)
    assert holder.apr(held) == holder.quote.apr(0)
    assert holder.apr(0) == holder.quote.apr(-held) > holder.apr(held)
    assert holder.yearly_yield(0) == 0.0
    assert holder.yearly_yield(held) == pytest.approx(held * holder.quote.apr(0) / 100)


def test_weighted_apr() -> None:
    assert weighted_apr({}, CANDIDATES) == 0.0
    a, b = 300 * UNIT, 700 * UNIT
    expected = (a * BY_NAME["aave"].apr(a) + b * BY_NAME["compound"].apr(b)) / (a + b)
    assert weighted_apr({"aave": a, "compound": b}, CANDIDATES) == pytest.approx(expected)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(PROTOCOLS),
    st.sampled_from([0, 1, 10**12, 10**14]),
    st.lists(st.integers(0, 10**15), min_size=1, max_size=8),
)
def test_remembered_yields_are_the_candidates_own_floats(
    name: str, current: int, amounts: list[int]
) -> None:
    """``Yields`` reads a candidate's curves as ``Candidate`` does, the same floats, whichever
    of yield and APR is asked first."""
    candidate = _candidate(name, current)
    yields = Yields({name: candidate})
    for amount in [*amounts, *candidate.bends(), current]:
        assert yields(name, amount) == candidate.yearly_yield(amount)
        assert yields.apr(name, amount + 1) == candidate.apr(amount + 1)
        assert yields(name, amount + 1) == candidate.yearly_yield(amount + 1)
    assert yields.bends(name) == candidate.bends()


# -- the optimizer's rates ------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(PROTOCOLS),
    st.sampled_from([0.0, 0.5, 0.9, 1.0, 1.05, 1.2, 2.0]),
    st.one_of(
        st.integers(-(10**15), 10**16), st.integers(-(10**7), 10**7), st.sampled_from([0, 1, -1])
    ),
)
def test_the_optimizers_rates_are_the_quotes_own(name: str, scale: float, delta: int) -> None:
    """``rate_function`` gives exactly ``PoolQuote.rate``'s integers, across kinks, full and
    empty markets, and past what the pool holds."""
    quote = BY_NAME[name].quote
    markets = tuple(dataclasses.replace(m, borrows=int(m.borrows * scale)) for m in quote.markets)
    scaled = dataclasses.replace(quote, markets=markets)
    rate = rate_function(scaled)
    for offset in (0, *scaled.kinks()):
        assert rate(delta + offset) == scaled.rate(delta + offset)


def test_the_optimizers_rates_keep_a_models_own_arithmetic() -> None:
    """A model subclass with other arithmetic (an on-chain one) keeps its ``rates``."""
    quote = BY_NAME["compound"].quote
    assert isinstance(quote.model, CompoundV3)
    onchain = dataclasses.replace(quote, model=CometModel(*dataclasses.astuple(quote.model)))
    rate = rate_function(onchain)
    for delta in (0, 10**12, -(10**12), *onchain.kinks()):
        assert rate(delta) == onchain.rate(delta)
