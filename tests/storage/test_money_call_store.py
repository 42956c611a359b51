"""The per-wallet limit on money calls over the database: a leaked partner key gets ten
money calls a minute on a wallet, whichever replica it reaches, and a refusal tells it
when to come back."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, func, select

from yieldagent.domain.errors import RateLimited
from yieldagent.domain.partners.money_calls import MoneyCallLimit
from yieldagent.storage.db import create_db_engine
from yieldagent.storage.money_calls import MoneyCallStore
from yieldagent.storage.tables import WalletMoneyCallRow

WALLET = "0x" + "ab" * 20
OTHER = "0x" + "cd" * 20


class Clock:
    """Wall-clock time the test moves."""

    def __init__(self, now: float = 1_767_225_600.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _rows(engine: Engine) -> int:
    with engine.connect() as connection:
        counted = connection.execute(select(func.count()).select_from(WalletMoneyCallRow))
        return int(counted.one()[0])


def test_the_eleventh_money_call_in_a_minute_is_refused(engine: Engine) -> None:
    clock = Clock()
    limit = MoneyCallLimit(MoneyCallStore(engine), 10, clock)
    for _ in range(10):
        clock.now += 1
        limit.check(1, 8453, WALLET)
    with pytest.raises(RateLimited) as refused:
        limit.check(1, 8453, WALLET.upper().replace("0X", "0x"))  # any spelling, one wallet
    assert refused.value.detail == (
        f"Too many money calls on wallet {WALLET.upper().replace('0X', '0x')}: at most 10 a "
        "minute; retry later"
    )
    # The first call was at +1 s, the refusal at +10 s: the window has room at +61 s.
    assert refused.value.retry_after_seconds == 51
    assert _rows(engine) == 10  # the refused call is not kept

    clock.now += 50.5  # not yet: the first call is 59.5 s old
    with pytest.raises(RateLimited):
        limit.check(1, 8453, WALLET)
    clock.now += 0.6
    limit.check(1, 8453, WALLET)  # the first call left the window


def test_the_limit_is_per_partner_and_per_wallet(engine: Engine) -> None:
    clock = Clock()
    limit = MoneyCallLimit(MoneyCallStore(engine), 2, clock)
    limit.check(1, 8453, WALLET)
    limit.check(1, 8453, WALLET)
    with pytest.raises(RateLimited):
        limit.check(1, 8453, WALLET)
    limit.check(1, 8453, OTHER)  # another wallet
    limit.check(1, 1, WALLET)  # the same address on another chain
    # Another partner naming this wallet (a thief's key trying to lock the owner out) is
    # counted on its own: the wallet's partner keeps its calls.
    limit.check(2, 8453, WALLET)
    limit.check(2, 8453, WALLET)
    with pytest.raises(RateLimited):
        limit.check(2, 8453, WALLET)


def test_a_replica_on_the_same_database_sees_the_same_count(
    engine: Engine, database_url: str
) -> None:
    clock = Clock()
    replica_engine = create_db_engine(database_url)
    try:
        here = MoneyCallLimit(MoneyCallStore(engine), 10, clock)
        there = MoneyCallLimit(MoneyCallStore(replica_engine), 10, clock)
        for call in range(10):
            (here if call % 2 else there).check(1, 8453, WALLET)
        for replica in (here, there):
            with pytest.raises(RateLimited):
                replica.check(1, 8453, WALLET)
    finally:
        replica_engine.dispose()


def test_calls_past_the_window_are_deleted(engine: Engine) -> None:
    clock = Clock()
    limit = MoneyCallLimit(MoneyCallStore(engine), 10, clock)
    for wallet in (WALLET, OTHER):
        limit.check(1, 8453, wallet)
    assert _rows(engine) == 2
    clock.now += 61
    limit.check(1, 8453, WALLET)
    assert _rows(engine) == 1  # the table holds a minute of calls, not their history
