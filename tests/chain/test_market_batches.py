"""Batched writes and reads of the simulated market are the single ones, at once.

Two worlds start identical; one takes the sends one by one through the chain port, the
other in one ``send_many``. They must end identical (every simulated table) and give the
same receipts and refusals; ``histories`` must be ``history`` of each holder.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, delete
from sqlmodel import Session, col, select

from support.agent_setup import one_by_one
from support.databases import temporary_database
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.chain import SimulatedChain
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.ports.chain import ChainKind, Send, TxReceipt
from yieldagent.simulated_world.state import MarketError
from yieldagent.storage import simulation
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.simulation import SimulationStore
from yieldagent.storage.tables import (
    SimBalanceRow,
    SimClockRow,
    SimPoolRow,
    SimPositionRow,
    SimTransactionRow,
)

GENESIS_WALL = 1_767_225_600.0
SEED = 7
BASE = 8453
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
OTHER_TOKEN = "0x" + "0d" * 20
USER = "0x" + "ee" * 20
HOLDERS = ("0x" + "a1" * 20, "0x" + "b2" * 20, "0x" + "c3" * 20)
STRANGER = "0x" + "5e" * 20
PROTOCOLS = ("aave", "compound", "moonwell", "morpho_gauntlet_usdc_prime")
UNIT = 10**6
DAY = 86_400

T = TypeVar("T")


def _mostly(usual: st.SearchStrategy[T], odd: st.SearchStrategy[T]) -> st.SearchStrategy[T]:
    """``usual`` nine times in ten, ``odd`` (something the market refuses) otherwise."""
    return st.integers(0, 9).flatmap(lambda n: odd if n == 9 else usual)


@st.composite
def sends(draw: st.DrawFn) -> Send:
    """A supply or a withdrawal (a third of them whole), now and then one to refuse."""
    action = draw(st.sampled_from(("supply", "withdraw")))
    usual = st.integers(1, (1_500 if action == "supply" else 300) * UNIT)
    return Send(
        ChainKind(action),
        draw(_mostly(st.sampled_from(HOLDERS), st.just(STRANGER))),
        draw(_mostly(st.sampled_from(PROTOCOLS), st.just("nowhere"))),
        draw(_mostly(st.just(USDC), st.just(OTHER_TOKEN))),
        draw(_mostly(usual, st.integers(-UNIT, 0))),
        whole=action == "withdraw" and draw(st.sampled_from((False, False, True))),
    )


opening = st.lists(
    st.tuples(st.sampled_from(HOLDERS), st.sampled_from(PROTOCOLS), st.integers(1, 3_000 * UNIT)),
    min_size=2,
    max_size=10,
)


@pytest.fixture
def engines(database_url: str, tmp_path: Path) -> Iterator[tuple[Engine, Engine]]:
    """Two migrated databases of the same backend."""
    backend = "sqlite" if database_url.startswith("sqlite") else "postgres"
    (tmp_path / "twin").mkdir()
    with temporary_database(backend, tmp_path / "twin") as twin_url:
        pair = (create_db_engine(database_url), create_db_engine(twin_url))
        for engine in pair:
            migrate(engine)
        yield pair
        for engine in pair:
            engine.dispose()


def _fresh(engine: Engine) -> SimulatedMarket:
    """The world at genesis, with time standing still (any earlier world removed)."""
    with Session(engine) as session:
        for table in (SimPositionRow, SimTransactionRow, SimBalanceRow, SimPoolRow, SimClockRow):
            session.exec(delete(table))
        session.commit()
    market = SimulatedMarket(
        SimulationStore(engine), load_catalog(), SEED, speed=0.0, wall=lambda: GENESIS_WALL
    )
    market.start()
    return market


def _world(engine: Engine) -> tuple[object, ...]:
    """Every simulated table, pools named by what they are rather than by their ids."""
    with Session(engine) as session:
        clock = session.get(SimClockRow, 1)
        assert clock is not None
        pools = {row.id: row for row in session.exec(select(SimPoolRow))}
        return (
            clock.model_dump(),
            sorted(tuple(sorted(row.model_dump(exclude={"id"}).items())) for row in pools.values()),
            sorted(
                (
                    pools[row.pool_id].protocol,
                    pools[row.pool_id].token,
                    row.holder,
                    row.scaled,
                    row.reward_snapshot,
                    row.rewards_owed,
                )
                for row in session.exec(select(SimPositionRow))
            ),
            sorted(
                (row.chain_id, row.token, row.holder, row.amount)
                for row in session.exec(select(SimBalanceRow))
            ),
            [
                row.model_dump()
                for row in session.exec(
                    select(SimTransactionRow).order_by(col(SimTransactionRow.sequence))
                )
            ],
        )


def _outcome(result: TxReceipt | Exception) -> object:
    """A receipt, or a refusal as its type and message (exceptions do not compare)."""
    if isinstance(result, Exception):
        return type(result), str(result)
    return result


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    deposits=st.lists(
        _mostly(st.integers(100 * UNIT, 10_000 * UNIT), st.just(0)),
        min_size=len(HOLDERS),
        max_size=len(HOLDERS),
    ),
    supplied=opening,
    waited=st.integers(0, 3 * DAY),
    batch=st.lists(sends(), min_size=3, max_size=40),
    since=st.integers(-2, 2),
)
def test_send_many_is_the_single_sends_one_after_another(
    engines: tuple[Engine, Engine],
    monkeypatch: pytest.MonkeyPatch,
    deposits: list[int],
    supplied: list[tuple[str, str, int]],
    waited: int,
    batch: list[Send],
    since: int,
) -> None:
    monkeypatch.setattr(simulation, "CHUNK", 2)  # bulk reads in several queries
    markets = [_fresh(engine) for engine in engines]
    for market in markets:
        for holder, amount in zip(HOLDERS, deposits, strict=True):
            if amount:
                market.deposit_from(BASE, USDC, USER, holder, amount)
        for holder, protocol, amount in supplied:
            if amount <= market.balance(BASE, USDC, holder):
                market.supply(BASE, holder, protocol, USDC, amount)
        market.advance(waited)
    single, batched = (SimulatedChain(market, BASE) for market in markets)
    assert _world(engines[0]) == _world(engines[1])
    before = [market.holdings(BASE, USDC, HOLDERS) for market in markets]  # projections cached
    assert before[0] == before[1]

    expected = asyncio.run(one_by_one(single, batch))
    got = asyncio.run(batched.send_many(batch))

    assert [_outcome(r) for r in got] == [_outcome(r) for r in expected]
    mined = [send for send, r in zip(batch, got, strict=True) if isinstance(r, TxReceipt)]
    event(f"sends mined: {min(len(mined), 10)}{'+' if len(mined) >= 10 else ''}")
    event(f"whole withdrawals mined: {sum(s.whole and s.action == 'withdraw' for s in mined)}")
    assert _world(engines[1]) == _world(engines[0])
    after = markets[1].holdings(BASE, USDC, HOLDERS)  # sees the batch: no stale projection
    assert after == markets[0].holdings(BASE, USDC, HOLDERS)

    everyone = [USER, *HOLDERS, STRANGER]
    head, _ = markets[1].head(BASE)
    histories = asyncio.run(batched.histories(everyone, head + since))
    assert list(histories) == everyone
    for holder in everyone:
        assert histories[holder] == asyncio.run(batched.history(holder, head + since))


def test_histories_of_no_holders_and_sends_of_nothing(market: SimulatedMarket) -> None:
    assert market.histories(BASE, [], 0) == {}
    assert market.send_many(BASE, []) == []


def test_an_unknown_action_is_a_mistake_not_a_refusal(market: SimulatedMarket) -> None:
    with pytest.raises(ValueError, match="unknown action"):
        market.send_many(BASE, [Send("borrow", HOLDERS[0], "aave", USDC, UNIT)])  # type: ignore[arg-type]


async def test_a_batch_supplies_then_withdraws_whole_what_it_supplied(
    market: SimulatedMarket,
) -> None:
    holder, chain = HOLDERS[0], SimulatedChain(market, BASE)
    market.deposit_from(BASE, USDC, USER, holder, 100 * UNIT)
    supply = Send(ChainKind.SUPPLY, holder, "aave", USDC, 40 * UNIT)
    whole = Send(ChainKind.WITHDRAW, holder, "aave", USDC, 0, whole=True)

    supplied, withdrawn, nothing_left = await chain.send_many([supply, whole, whole])

    assert isinstance(supplied, TxReceipt) and supplied.amount is None
    assert isinstance(withdrawn, TxReceipt) and withdrawn.amount is not None
    assert 40 * UNIT - 1 <= withdrawn.amount <= 40 * UNIT  # scaled units round down
    assert supplied.tx_hash != withdrawn.tx_hash
    assert (withdrawn.block_number, withdrawn.timestamp) == (
        supplied.block_number,
        supplied.timestamp,
    )
    assert isinstance(nothing_left, MarketError)
    assert market.balance(BASE, USDC, holder) == 60 * UNIT + withdrawn.amount
    assert market.positions(BASE, USDC, holder) == []
    history = await chain.history(holder, 0)
    assert [tx.kind for tx in history] == ["transfer", "supply", "withdraw"]
