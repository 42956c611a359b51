"""The simulated market on a database: genesis, time, balances, positions, rewards, errors."""

from __future__ import annotations

import re
from collections.abc import Callable
from fractions import Fraction

import pytest
from sqlalchemy import Engine
from sqlmodel import Session, func, select

from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.genesis import REWARD_TOKENS, TIMING, genesis_pools
from yieldagent.chain.simulated.market import FAUCET, SimulatedMarket
from yieldagent.chain.simulated.pools import advance, value_of
from yieldagent.domain.market.rate_models import RAY
from yieldagent.simulated_world.state import MarketError, PoolState
from yieldagent.storage.simulation import SimulationStore
from yieldagent.storage.tables import (
    SimBalanceRow,
    SimClockRow,
    SimPoolRow,
    SimPositionRow,
    SimTransactionRow,
)

GENESIS_WALL = 1_767_225_600.0
GENESIS = 1_767_225_600
SEED = 7
BASE = 8453
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
WELL = REWARD_TOKENS[(BASE, "WELL")].address
MORPHO = REWARD_TOKENS[(BASE, "MORPHO")].address
USER = "0x" + "ee" * 20
ALICE = "0x" + "a1" * 20
BOB = "0x" + "b0" * 20
UNIT = 10**6
DAY = 86_400
TX_HASH = re.compile(r"0x[0-9a-f]{64}")


def _snapshot(engine: Engine) -> tuple[object, ...]:
    """Everything the simulated world stores."""
    with Session(engine) as session:
        clock = session.get(SimClockRow, 1)
        assert clock is not None
        return (
            (clock.anchor, clock.anchor_wall, clock.speed, clock.sequence),
            sorted(
                (r.id or 0, r.liquidity_index, r.scaled_supply, r.markets, r.updated_at)
                for r in session.exec(select(SimPoolRow))
            ),
            sorted(
                (r.pool_id, r.holder, r.scaled, r.reward_snapshot, r.rewards_owed)
                for r in session.exec(select(SimPositionRow))
            ),
            sorted(
                (r.chain_id, r.token, r.holder, r.amount)
                for r in session.exec(select(SimBalanceRow))
            ),
            sorted(r.tx_hash for r in session.exec(select(SimTransactionRow))),
        )


def _transactions(engine: Engine) -> list[SimTransactionRow]:
    with Session(engine) as session:
        return list(session.exec(select(SimTransactionRow)))


def _fund(market: SimulatedMarket, holder: str, amount: int) -> None:
    market.deposit_from(BASE, USDC, USER, holder, amount)


def _second(engine: Engine, seed: int = SEED) -> SimulatedMarket:
    other = SimulatedMarket(
        SimulationStore(engine), load_catalog(), seed, speed=0.0, wall=lambda: GENESIS_WALL
    )
    other.start()
    return other


def _value(market: SimulatedMarket, holder: str, protocol: str) -> int:
    return dict(market.positions(BASE, USDC, holder)).get(protocol, 0)


# -- genesis and the clock ------------------------------------------------------------------


def test_genesis_creates_one_pool_per_catalog_protocol_once(
    market: SimulatedMarket, engine: Engine
) -> None:
    catalog = load_catalog()
    expected = sorted(
        (chain_id, token.address, protocol.name)
        for chain_id in catalog.chain_ids()
        for token in catalog.chain(chain_id).tokens
        for protocol in token.protocols
    )
    with Session(engine) as session:
        stored = sorted((r.chain_id, r.token, r.protocol) for r in session.exec(select(SimPoolRow)))
    assert stored == expected
    assert market.now() == GENESIS
    before = _snapshot(engine)
    market.start()
    _second(engine, seed=99).start()
    assert _snapshot(engine) == before


def test_the_stored_pools_are_the_genesis_pools(market: SimulatedMarket) -> None:
    pools = genesis_pools(load_catalog(), SEED, GENESIS)
    assert market.pools_now(BASE) == [p for p in pools if p.chain_id == BASE]
    assert market.pools_now(BASE, USDC) == market.pools_now(BASE)
    assert market.pools_now(BASE, "0x" + "00" * 20) == []


def test_advance_moves_time_and_accrues(market: SimulatedMarket) -> None:
    _fund(market, ALICE, 1_000_000 * UNIT)
    market.supply(BASE, ALICE, "aave", USDC, 1_000_000 * UNIT)
    number, _ = market.head(BASE)
    assert market.advance(DAY) == GENESIS + DAY
    assert market.now() == GENESIS + DAY
    assert market.head(BASE) == (number + DAY // 2, GENESIS + DAY)  # Base: 2 s blocks
    value = _value(market, ALICE, "aave")
    (pool,) = [p for p in market.pools_now(BASE, USDC) if p.protocol == "aave"]
    assert pool.updated_at == GENESIS + DAY
    assert value == 1_000_000 * UNIT * pool.liquidity_index // RAY  # scaled 1:1 at genesis
    assert 1_000_000 * UNIT < value < 1_000_000 * UNIT * (1 + 0.2 / 365)
    assert market.advance(0) == GENESIS + DAY


def test_the_worlds_pools_follow_the_engine_when_advanced_hour_by_hour(
    market: SimulatedMarket,
) -> None:
    for _ in range(6):
        market.advance(3_600)
    market.settle()
    expected = [p for p in genesis_pools(load_catalog(), SEED, GENESIS) if p.chain_id == BASE]
    for pool in expected:
        advance(pool, GENESIS + 6 * 3_600, SEED)
    assert market.pools_now(BASE) == expected


def test_the_world_does_not_depend_on_how_time_was_advanced(market: SimulatedMarket) -> None:
    market.advance(5_000)
    market.settle()
    market.pools_now(BASE)  # reads project on a copy
    market.advance(1)
    market.advance(DAY - 5_001)
    expected = [p for p in genesis_pools(load_catalog(), SEED, GENESIS) if p.chain_id == BASE]
    for pool in expected:
        advance(pool, GENESIS + DAY, SEED)
    assert market.pools_now(BASE) == expected


# -- deposits, transfers, supply and withdrawal --------------------------------------------


def test_deposit_from_mints_then_transfers(market: SimulatedMarket, engine: Engine) -> None:
    tx = market.deposit_from(BASE, USDC, USER, ALICE, 250 * UNIT)
    assert (tx.kind, tx.token, tx.sender, tx.recipient, tx.amount) == (
        "transfer",
        USDC,
        USER,
        ALICE,
        250 * UNIT,
    )
    assert (tx.block_number, tx.timestamp) == market.head(BASE)
    assert tx.block_number == TIMING[BASE].genesis_block
    assert market.balance(BASE, USDC, ALICE) == 250 * UNIT
    assert market.balance(BASE, USDC, USER) == 0
    assert market.transaction(tx.tx_hash) == tx
    rows = sorted(
        (r.kind, r.chain_id, r.token, r.sender, r.recipient, r.amount)
        for r in _transactions(engine)
    )
    assert rows == [
        ("mint", BASE, USDC, FAUCET, USER, 250 * UNIT),
        ("transfer", BASE, USDC, USER, ALICE, 250 * UNIT),
    ]


def test_supply_and_withdraw_move_exact_amounts(market: SimulatedMarket) -> None:
    _fund(market, ALICE, 1_000 * UNIT)
    (before,) = [p for p in market.pools_now(BASE, USDC) if p.protocol == "compound"]
    tx = market.supply(BASE, ALICE, "compound", USDC, 400 * UNIT)
    assert (tx.kind, tx.sender, tx.recipient, tx.amount) == (
        "supply",
        ALICE,
        "compound",
        400 * UNIT,
    )
    assert market.balance(BASE, USDC, ALICE) == 600 * UNIT
    assert market.positions(BASE, USDC, ALICE) == [("compound", 400 * UNIT)]
    (after,) = [p for p in market.pools_now(BASE, USDC) if p.protocol == "compound"]
    assert after.total_supply() == before.total_supply() + 400 * UNIT
    assert after.scaled_supply == 400 * UNIT
    tx = market.withdraw(BASE, ALICE, "compound", USDC, 150 * UNIT)
    assert (tx.kind, tx.sender, tx.recipient, tx.amount) == (
        "withdraw",
        "compound",
        ALICE,
        150 * UNIT,
    )
    assert market.balance(BASE, USDC, ALICE) == 750 * UNIT
    assert market.positions(BASE, USDC, ALICE) == [("compound", 250 * UNIT)]
    market.withdraw(BASE, ALICE, "compound", USDC, 250 * UNIT)
    assert market.positions(BASE, USDC, ALICE) == []
    assert market.balance(BASE, USDC, ALICE) == 1_000 * UNIT


def test_a_position_grows_and_can_be_withdrawn_whole(market: SimulatedMarket) -> None:
    _fund(market, ALICE, 10_000 * UNIT)
    market.supply(BASE, ALICE, "morpho_gauntlet_usdc_prime", USDC, 10_000 * UNIT)
    market.advance(30 * DAY)
    value = _value(market, ALICE, "morpho_gauntlet_usdc_prime")
    assert value > 10_000 * UNIT
    market.withdraw(BASE, ALICE, "morpho_gauntlet_usdc_prime", USDC, value)
    assert market.balance(BASE, USDC, ALICE) == value
    assert market.positions(BASE, USDC, ALICE) == []


def test_transfer_moves_exact_amounts(market: SimulatedMarket) -> None:
    _fund(market, ALICE, 100 * UNIT)
    tx = market.transfer(BASE, USDC, ALICE, BOB, 30 * UNIT)
    assert (tx.kind, tx.sender, tx.recipient, tx.amount) == ("transfer", ALICE, BOB, 30 * UNIT)
    assert market.balance(BASE, USDC, ALICE) == 70 * UNIT
    assert market.balance(BASE, USDC, BOB) == 30 * UNIT
    market.transfer(BASE, USDC, ALICE, ALICE, 70 * UNIT)  # to oneself: nothing moves
    assert market.balance(BASE, USDC, ALICE) == 70 * UNIT


def test_swap_gives_the_quote_at_price_less_the_fee(market: SimulatedMarket) -> None:
    _fund(market, ALICE, 100 * UNIT)
    quote = market.quote_swap(BASE, USDC, WELL, 10 * UNIT)
    # 10 USDC at $1, less 0.3%, in WELL at $0.03 with 18 decimals: 332.333... WELL.
    assert quote == int(Fraction(10) * Fraction(997, 1000) / Fraction(3, 100) * 10**18)
    tx = market.swap(BASE, ALICE, USDC, WELL, 10 * UNIT, min_out=quote)
    assert (tx.kind, tx.token, tx.amount, tx.token_out, tx.amount_out) == (
        "swap",
        USDC,
        10 * UNIT,
        WELL,
        quote,
    )
    assert market.balance(BASE, USDC, ALICE) == 90 * UNIT
    assert market.balance(BASE, WELL, ALICE) == quote
    back = market.swap(BASE, ALICE, WELL, USDC, quote, min_out=0)
    assert back.amount_out == market.quote_swap(BASE, WELL, USDC, quote)
    # 332.333333333333333333 WELL at $0.03, less 0.3%: 9.940089999... USDC, rounded down.
    assert back.amount_out == 9_940_089
    assert market.balance(BASE, WELL, ALICE) == 0
    assert market.balance(BASE, USDC, ALICE) == 90 * UNIT + 9_940_089


# -- rewards ----------------------------------------------------------------------------


def test_rewards_accrue_and_are_claimed_exactly(market: SimulatedMarket) -> None:
    _fund(market, ALICE, 1_000 * UNIT)
    market.supply(BASE, ALICE, "moonwell", USDC, 1_000 * UNIT)
    assert market.accrued_rewards(BASE, ALICE) == {}
    market.advance(7 * DAY)
    accrued = market.accrued_rewards(BASE, ALICE)
    assert set(accrued) == {WELL}
    assert accrued[WELL] > 0
    (claim,) = market.claim_rewards(BASE, ALICE)
    assert (claim.kind, claim.token, claim.sender, claim.recipient, claim.amount) == (
        "claim",
        WELL,
        FAUCET,
        ALICE,
        accrued[WELL],
    )
    assert market.balance(BASE, WELL, ALICE) == accrued[WELL]
    assert market.accrued_rewards(BASE, ALICE) == {}
    assert market.claim_rewards(BASE, ALICE) == []
    assert market.accrued_rewards(BASE, BOB) == {}


def test_rewards_earned_before_a_withdrawal_stay_claimable(market: SimulatedMarket) -> None:
    _fund(market, ALICE, 1_000 * UNIT)
    market.supply(BASE, ALICE, "morpho_gauntlet_usdc_prime", USDC, 1_000 * UNIT)
    market.advance(DAY)
    accrued = market.accrued_rewards(BASE, ALICE)
    market.withdraw(
        BASE,
        ALICE,
        "morpho_gauntlet_usdc_prime",
        USDC,
        _value(market, ALICE, "morpho_gauntlet_usdc_prime"),
    )
    market.advance(DAY)
    assert market.accrued_rewards(BASE, ALICE) == accrued
    assert set(accrued) == {MORPHO}
    (claim,) = market.claim_rewards(BASE, ALICE)
    assert claim.amount == accrued[MORPHO] == market.balance(BASE, MORPHO, ALICE)


def test_reward_yield_is_the_pools_emission_share(market: SimulatedMarket) -> None:
    _fund(market, ALICE, 1_000 * UNIT)
    market.supply(BASE, ALICE, "moonwell", USDC, 1_000 * UNIT)
    market.advance(7 * DAY)
    well = REWARD_TOKENS[(BASE, "WELL")]
    usd = market.accrued_rewards(BASE, ALICE)[WELL] / 10**well.decimals * well.price_usd
    # Genesis sizes Moonwell's emission at 1.5% of its supply a year, shared by all of it.
    assert usd == pytest.approx(1_000 * 0.015 * 7 / 365, rel=0.01)


# -- errors ----------------------------------------------------------------------------


def _refused(market: SimulatedMarket, engine: Engine, action: Callable[[], object]) -> None:
    before = _snapshot(engine)
    with pytest.raises(MarketError):
        action()
    assert _snapshot(engine) == before


def test_refused_actions_change_nothing(market: SimulatedMarket, engine: Engine) -> None:
    _fund(market, ALICE, 100 * UNIT)
    market.supply(BASE, ALICE, "aave", USDC, 60 * UNIT)
    market.advance(DAY)
    value = _value(market, ALICE, "aave")
    actions: list[Callable[[], object]] = [
        lambda: market.supply(BASE, ALICE, "aave", USDC, 40 * UNIT + 1),
        lambda: market.supply(BASE, ALICE, "aave", USDC, 0),
        lambda: market.supply(BASE, ALICE, "aave", USDC, -1),
        lambda: market.supply(BASE, ALICE, "nope", USDC, 1),
        lambda: market.supply(BASE, ALICE, "aave", WELL, 1),
        lambda: market.supply(BASE, BOB, "aave", USDC, 1),
        lambda: market.withdraw(BASE, ALICE, "aave", USDC, value + 1),
        lambda: market.withdraw(BASE, ALICE, "aave", USDC, 0),
        lambda: market.withdraw(BASE, ALICE, "nope", USDC, 1),
        lambda: market.withdraw(BASE, BOB, "aave", USDC, 1),
        lambda: market.transfer(BASE, USDC, ALICE, BOB, 40 * UNIT + 1),
        lambda: market.transfer(BASE, USDC, ALICE, BOB, 0),
        lambda: market.transfer(BASE, USDC, BOB, ALICE, 1),
        lambda: market.swap(BASE, ALICE, USDC, WELL, 40 * UNIT + 1, min_out=0),
        lambda: market.swap(BASE, ALICE, USDC, WELL, 0, min_out=0),
        lambda: market.swap(BASE, ALICE, USDC, "0x" + "00" * 20, UNIT, min_out=0),
        lambda: market.swap(
            BASE, ALICE, USDC, WELL, UNIT, min_out=market.quote_swap(BASE, USDC, WELL, UNIT) + 1
        ),
        lambda: market.deposit_from(BASE, USDC, USER, ALICE, 0),
    ]
    for action in actions:
        _refused(market, engine, action)
    assert market.balance(BASE, USDC, ALICE) == 40 * UNIT
    assert market.positions(BASE, USDC, ALICE) == [("aave", value)]


def test_transaction_hashes_are_unique_and_well_formed(
    market: SimulatedMarket, engine: Engine
) -> None:
    hashes = [market.deposit_from(BASE, USDC, USER, ALICE, UNIT).tx_hash for _ in range(3)]
    hashes.append(market.supply(BASE, ALICE, "aave", USDC, UNIT).tx_hash)
    hashes.append(market.transfer(BASE, USDC, ALICE, BOB, UNIT).tx_hash)
    hashes.append(market.swap(BASE, ALICE, USDC, WELL, UNIT, min_out=0).tx_hash)
    assert all(TX_HASH.fullmatch(h) for h in hashes)
    stored = [row.tx_hash for row in _transactions(engine)]
    assert len(stored) == len(set(stored)) == 9  # three deposits are a mint and a transfer each
    assert set(hashes) <= set(stored)
    assert market.transaction("0x" + "00" * 32) is None


# -- persistence ---------------------------------------------------------------------------


def test_a_second_market_on_the_same_database_sees_the_same_world(
    market: SimulatedMarket, engine: Engine
) -> None:
    _fund(market, ALICE, 1_000 * UNIT)
    market.supply(BASE, ALICE, "moonwell", USDC, 600 * UNIT)
    swap = market.swap(BASE, ALICE, USDC, WELL, 100 * UNIT, min_out=0)
    market.advance(2 * DAY + 1_800)
    other = _second(engine, seed=99)  # the stored seed wins
    assert other.now() == market.now() == GENESIS + 2 * DAY + 1_800
    assert other.head(BASE) == market.head(BASE)
    assert other.pools_now(BASE) == market.pools_now(BASE)
    assert other.positions(BASE, USDC, ALICE) == market.positions(BASE, USDC, ALICE)
    assert other.accrued_rewards(BASE, ALICE) == market.accrued_rewards(BASE, ALICE)
    for token in (USDC, WELL):
        assert other.balance(BASE, token, ALICE) == market.balance(BASE, token, ALICE)
    assert other.transaction(swap.tx_hash) == swap
    with Session(engine) as session:
        assert session.exec(select(func.count()).select_from(SimClockRow)).one() == 1
    other.advance(DAY)
    assert market.now() == GENESIS + 3 * DAY + 1_800
    assert market.pools_now(BASE) == other.pools_now(BASE)
    assert _value(market, ALICE, "moonwell") > 600 * UNIT


def test_pools_are_read_as_stored_in_the_engines_terms(market: SimulatedMarket) -> None:
    _fund(market, ALICE, 5_000 * UNIT)
    market.supply(BASE, ALICE, "aave", USDC, 5_000 * UNIT)
    market.advance(10 * DAY)
    pools: list[PoolState] = market.pools_now(BASE, USDC)
    (aave,) = [p for p in pools if p.protocol == "aave"]
    assert _value(market, ALICE, "aave") == value_of(aave, aave.scaled_supply)
    assert all(m.borrows <= m.supply for p in pools for m in p.markets)
