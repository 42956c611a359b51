"""Chain totals (``domain.books.aggregates``, ``storage.aggregates``): after any sequence of
commits they equal a full recomputation, exactly; the statistics read from them equal the
slow computation over every wallet; the migration's backfill and the repair agree with
what the commits kept; concurrent commits from two engines keep them exact."""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from itertools import count
from typing import Any

import pytest
from alembic import command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from support.books import recomputed_totals, total_disagreements
from support.wallet_setup import committing
from yieldagent.catalog import load_catalog
from yieldagent.domain.books.aggregates import STRIPES, Totals, apr_units, mean_apr
from yieldagent.domain.books.effects import recompute
from yieldagent.domain.books.history import (
    ProtocolShare,
    Share,
    Statistics,
    percentages,
    statistics,
)
from yieldagent.domain.books.wallet_states import ACTIVE, WalletStatus
from yieldagent.domain.books.wallets import DepositRecord, Journal, TransactionRecord, Wallet
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.errors import Conflict
from yieldagent.domain.partners.smart_accounts import smart_account_address
from yieldagent.domain.ports.credentials import Partner
from yieldagent.storage.aggregates import replace_totals, wallet_facts
from yieldagent.storage.db import alembic_config, create_db_engine
from yieldagent.storage.tables import ChainTotalsRow
from yieldagent.storage.wallets import WalletStore

BASE = 8453
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
WELL = "0xA88594D404727625A9437C3f886C7643872296AE"  # not a catalog token of Base
T0 = datetime(2026, 1, 1, tzinfo=UTC)
PROTOCOLS = ("aave", "compound", "moonwell", "morpho_gauntlet_usdc_prime")
_serial = count()


def _new_wallet(partner_id: int, token: str = USDC) -> Wallet:
    n = next(_serial)
    return Wallet(
        id=0,
        chain_id=BASE,
        address=smart_account_address(f"0x{n + 1:040x}", "aggregates"),
        eoa=f"0x{n + 1:040x}",
        partner_id=partner_id,
        status=WalletStatus.ACTIVATING,
        token=token,
        selected_protocols=PROTOCOLS,
        constraints=Constraints(),
        principal=0,
        positions={},
        idle=0,
        current_apr=0.0,
        valued_at=T0,
        is_staked=False,
        activation_date=T0,
        last_deactivation_date=None,
        last_reactivation_date=None,
    )


def _tx() -> str:
    return f"0x{next(_serial):064x}"


amounts = st.one_of(st.integers(0, 10**12), st.integers(0, 2**200))
aprs = st.one_of(
    st.floats(0, 1_000, allow_nan=False, allow_infinity=False),
    st.sampled_from([1e-30, 5e-324, 0.1, 2.5, 7.000000000000001]),
)
steps = st.fixed_dictionaries(
    {
        "wallet": st.integers(0, 3),
        "status": st.sampled_from(list(WalletStatus)),
        "idle": amounts,
        "allocation": st.dictionaries(st.sampled_from(PROTOCOLS), amounts, max_size=3),
        "apr": aprs,
        "deposits": st.lists(
            st.tuples(
                st.integers(1, 2**100), st.integers(-3, 3), st.sampled_from([USDC, USDC, WELL])
            ),
            max_size=2,
        ),
        "transactions": st.integers(0, 3),
    }
)


def _journal(wallet: Wallet, step: dict[str, Any]) -> Journal:
    wallet.status = step["status"]
    wallet.idle = step["idle"]
    wallet.positions = dict(step["allocation"])
    wallet.current_apr = step["apr"]
    return Journal(
        wallet,
        deposits=[
            DepositRecord(amount, token, _tx(), 1, T0 + timedelta(days=days))
            for amount, days, token in step["deposits"]
        ],
        transactions=[
            TransactionRecord("deposit", wallet.token, 1, _tx(), T0)
            for _ in range(step["transactions"])
        ],
    )


def _slow_statistics(store: WalletStore, chain_id: int) -> Statistics:
    """The statistics as they were computed before the totals: every wallet and deposit."""
    chain = load_catalog().chain(chain_id)
    tokens = {t.address: t for t in chain.tokens}
    wallets = [w for w in store.wallets(chain_id) if w.token in tokens]
    active = [w for w in wallets if w.status in ACTIVE]

    def whole(address: str, amount: int) -> float:
        return float(Decimal(amount) / 10 ** tokens[address].decimals)

    def usd(address: str, amount: int) -> float:
        return whole(address, amount) * tokens[address].price_usd

    held = [w for w in wallets if w.status != WalletStatus.DEACTIVATED]
    all_deposits = store.all_deposits(chain_id)
    first: dict[int, DepositRecord] = {}
    for wallet_id, deposit in all_deposits:
        first.setdefault(wallet_id, deposit)
    first_deposits: dict[str, int] = defaultdict(int)
    for deposit in first.values():
        if deposit.token in tokens:
            first_deposits[deposit.token] += deposit.amount
    current: dict[str, int] = defaultdict(int)
    by_protocol: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for wallet in held:
        current[wallet.token] += wallet.idle + sum(wallet.positions.values())
        for protocol, amount in wallet.positions.items():
            by_protocol[protocol][wallet.token] += amount

    def shares(amounts: dict[str, int]) -> list[Share]:
        names = sorted(amounts)
        values = [usd(t, amounts[t]) for t in names]
        return [
            Share(tokens[t].symbol, whole(t, amounts[t]), pct)
            for t, pct in zip(names, percentages(values), strict=True)
        ]

    names = sorted(by_protocol)
    protocol_usd = [sum(usd(t, a) for t, a in by_protocol[p].items()) for p in names]
    return Statistics(
        total_balance_usd=sum(usd(t, a) for t, a in current.items()),
        total_deposits_usd=sum(
            usd(d.token, d.amount) for _, d in all_deposits if d.token in tokens
        ),
        total_users=len(active),
        total_transactions=store.count_transactions(chain_id),
        total_apr=sum(w.current_apr for w in active) / len(active) if active else 0.0,
        initial_deposits=shares(first_deposits),
        current_tokens=shares(current),
        protocols=[
            ProtocolShare(name, shares(by_protocol[name]), pct)
            for name, pct in zip(names, percentages(protocol_usd), strict=True)
        ],
    )


def _same_statistics(fast: Statistics, slow: Statistics) -> None:
    """Every figure equal; the two float sums equal to rounding (the totals add exact
    integers and price the sum, the slow way priced each deposit, each APR)."""
    assert fast.total_balance_usd == slow.total_balance_usd
    assert fast.total_deposits_usd == pytest.approx(slow.total_deposits_usd, rel=1e-12)
    assert fast.total_users == slow.total_users
    assert fast.total_transactions == slow.total_transactions
    assert fast.total_apr == pytest.approx(slow.total_apr, rel=1e-12)
    assert fast.initial_deposits == slow.initial_deposits
    assert fast.current_tokens == slow.current_tokens
    assert fast.protocols == slow.protocols


def _stripes(engine: Engine) -> dict[Any, Any]:
    """Every stored stripe, without all-zero rows, comparable with ==."""
    stored: dict[Any, Any] = {}
    with engine.connect() as connection:
        for row in connection.execute(ChainTotalsRow.__table__.select()):  # type: ignore[attr-defined]
            values = dict(row._mapping)
            figures = {k: v for k, v in values.items() if k not in _KEYS}
            if any(figures.values()):
                stored[tuple(values[k] for k in _KEYS)] = figures
    return stored


_KEYS = ("chain_id", "token", "protocol", "stripe")


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(program=st.lists(steps, min_size=1, max_size=12))
def test_totals_equal_a_recomputation_after_any_commits(
    engine: Engine, partner: tuple[Partner, str], program: list[dict[str, Any]]
) -> None:
    store = WalletStore(engine)
    owner = partner[0].id
    wallets: dict[int, Wallet] = {}
    for step in program:
        index = step["wallet"]
        if index not in wallets:
            token = WELL if index == 3 else USDC
            wallets[index] = committing(engine).create(_journal(_new_wallet(owner, token), step))
        else:
            committing(engine).commit(_journal(wallets[index], step))
        assert total_disagreements(store, BASE) == []
    _same_statistics(
        statistics(load_catalog().chain(BASE), store.totals(BASE)), _slow_statistics(store, BASE)
    )
    kept = _stripes(engine)
    with engine.begin() as connection:
        replace_totals(connection, recompute(wallet_facts(connection)))
    assert _stripes(engine) == kept


def test_the_first_deposit_is_the_earliest_then_the_first_booked(
    engine: Engine, partner: tuple[Partner, str]
) -> None:
    store = WalletStore(engine)
    wallet = _new_wallet(partner[0].id)
    committing(engine).create(Journal(wallet, deposits=[DepositRecord(5, USDC, _tx(), 1, T0)]))
    committing(engine).commit(
        Journal(wallet, deposits=[DepositRecord(7, USDC, _tx(), 1, T0)])
    )  # a tie
    assert store.totals(BASE).tokens[USDC].first_deposited == 5
    earlier = T0 - timedelta(microseconds=1)
    committing(engine).commit(
        Journal(wallet, deposits=[DepositRecord(11, USDC, _tx(), 1, earlier)])
    )
    totals = store.totals(BASE).tokens[USDC]
    assert (totals.first_wallets, totals.first_deposited, totals.deposited) == (1, 11, 23)
    assert total_disagreements(store, BASE) == []


def test_apr_sums_are_exact_and_their_mean_is_the_average() -> None:
    aprs = [0.1, 0.2, 0.3, 1e-30, 123.456]
    units = sum(apr_units(a) for a in aprs)
    assert units - apr_units(0.2) - apr_units(1e-30) == sum(
        apr_units(a) for a in (0.1, 0.3, 123.456)
    )
    assert mean_apr(units, len(aprs)) == pytest.approx(sum(aprs) / len(aprs), rel=1e-15)
    assert mean_apr(apr_units(2.5) * 2, 2) == 2.5
    assert mean_apr(0, 0) == 0.0
    assert apr_units(float("nan")) == 0


def test_the_migration_backfills_what_the_commits_keep(
    engine: Engine, partner: tuple[Partner, str]
) -> None:
    store = WalletStore(engine)
    owner = partner[0].id
    for n in range(STRIPES + 3):
        wallet = _new_wallet(owner)
        committing(engine).create(
            Journal(wallet, deposits=[DepositRecord(10**6 * (n + 1), USDC, _tx(), 1, T0)])
        )
        wallet.status = WalletStatus.DEACTIVATED if n % 4 == 0 else WalletStatus.ACTIVATED
        wallet.positions = {"aave": 10**6 * n, "compound": 0}
        wallet.current_apr = 4.2 + n / 7
        committing(engine).commit(
            Journal(wallet, transactions=[TransactionRecord("deposit", USDC, 1, _tx(), T0)])
        )
    kept = _stripes(engine)
    assert kept
    config = alembic_config(engine)
    command.downgrade(config, "0009")
    command.upgrade(config, "head")
    assert _stripes(engine) == kept
    assert total_disagreements(store, BASE) == []


def test_concurrent_commits_from_two_engines_keep_the_totals_exact(
    database_url: str, engine: Engine, partner: tuple[Partner, str]
) -> None:
    """Two engines (two replicas' pools), two threads each, committing wallets that share
    stripes: every change lands exactly once."""
    owner = partner[0].id
    engines = [create_db_engine(database_url) for _ in range(2)]
    setup = WalletStore(engine)
    ids = []
    for _ in range(2 * STRIPES):
        wallet = _new_wallet(owner)
        wallet.status = WalletStatus.ACTIVATED
        ids.append(committing(engine).create(Journal(wallet)).id)
    errors: list[BaseException] = []

    def work(store_engine: Engine, mine: list[int], seed: int) -> None:
        store = WalletStore(store_engine)
        try:
            for round_ in range(6):
                for wallet_id in mine:
                    while True:
                        wallet = store.get_by_id(wallet_id)
                        assert wallet is not None
                        wallet.idle += 2**70 + seed
                        wallet.positions = {"aave": round_ * 1000 + seed, "moonwell": 1}
                        wallet.current_apr = 0.1 * (round_ + seed)
                        journal = Journal(
                            wallet,
                            deposits=[DepositRecord(2**80 + round_, USDC, _tx(), 1, T0)],
                            transactions=[TransactionRecord("deposit", USDC, 1, _tx(), T0)],
                        )
                        try:
                            committing(store_engine).commit(journal)
                            break
                        except Conflict:
                            continue
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=work, args=(engines[n % 2], ids[n::4], n)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for other in engines:
        other.dispose()
    assert errors == []
    assert total_disagreements(setup, BASE) == []
    totals = setup.totals(BASE)
    assert totals.tokens[USDC].transactions == 6 * len(ids)
    assert totals.tokens[USDC].deposited == sum(2**80 + r for r in range(6)) * len(ids)
    assert recomputed_totals(setup, BASE).tokens == {
        k: replace(v, transactions=0) for k, v in totals.tokens.items()
    }
    assert isinstance(totals, Totals)
