"""Batches of the agent's writes (``WalletStore.commit_many``, ``booked_many``,
``OperationStore.open_on_many``), on SQLite and on PostgreSQL: a batch stores exactly what
its journals committed one by one store, and the batch reads answer what the single ones
answer.

Each example builds two mirrored sets of wallets on two chains (same addresses, same
stripes of the chain totals), commits a list of journals on one set with ``commit_many``
and the mirrored list on the other with ``commit``, one by one, and compares every table.
As on a chain, a chain event belongs to one wallet: a journal may repeat one its wallet
booked, never another wallet's (one event in two wallets' journals has its own test). The
events are compared in each wallet's order: a wallet retried after the batch records its
events after the batch's.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from itertools import count
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, select

from support.wallet_setup import committing
from yieldagent.domain.books.accounting import WithdrawalSplit
from yieldagent.domain.books.aggregates import STRIPES
from yieldagent.domain.books.apr import PerformancePoint
from yieldagent.domain.books.operations import (
    Operation,
    OperationKind,
    OperationStatus,
    Step,
    StepAction,
)
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.books.wallets import (
    DepositRecord,
    Journal,
    TransactionRecord,
    Wallet,
    WithdrawalRecord,
)
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.errors import Conflict
from yieldagent.domain.partners.smart_accounts import smart_account_address
from yieldagent.domain.ports.credentials import Partner
from yieldagent.storage.operations import OperationStore
from yieldagent.storage.tables import (
    ChainTotalsRow,
    DepositRow,
    OperationRow,
    PerformancePointRow,
    RewardRow,
    TransactionRow,
    WalletEventRow,
    WalletRow,
    WebhookDeliveryRow,
    WithdrawalRow,
)
from yieldagent.storage.wallets import WalletStore
from yieldagent.storage.webhooks import WebhookStore

BATCHED, SINGLY, FILLER = 8453, 42161, 10
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
WELL = "0xA88594D404727625A9437C3f886C7643872296AE"
PROTOCOLS = ("aave", "compound", "moonwell")
AGENT = "agent"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
_serial = count(1)


def _wallet(partner_id: int, chain_id: int, n: int, status: WalletStatus) -> Wallet:
    return Wallet(
        id=0,
        chain_id=chain_id,
        address=smart_account_address(f"0x{n:040x}", "batches"),
        eoa=f"0x{n:040x}",
        partner_id=partner_id,
        status=status,
        token=USDC,
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


def _tx(example: int, n: int) -> str:
    return f"0x{example:032x}{n:032x}"


def _event(example: int, wallet: int, k: int) -> str:
    """The hash of the wallet's ``k``-th chain event: no other wallet's."""
    return _tx(example, 1_000 * (wallet + 1) + k)


def _operation(wallet: Wallet, name: str, status: str, done: int) -> Operation:
    steps = tuple(
        Step(
            StepAction.DEPOSIT,
            USDC,
            1_000 + i,
            protocol=PROTOCOLS[i],
            apr=2.5,
            tx_hash=f"0x{i + 1:064x}" if i < done else None,
            block_number=100 + i if i < done else None,
        )
        for i in range(2)
    )
    return Operation(
        id=name,
        wallet_id=wallet.id,
        chain_id=wallet.chain_id,
        kind=OperationKind.RUN,
        status=OperationStatus(status),
        steps=steps,
        start_block=99,
        owner=AGENT,
        params={"reason": "idle"},
        result=None
        if status in (OperationStatus.EXECUTING, OperationStatus.WAITING)
        else {"moved": "2001"},
        retry_at=5.0 if status == OperationStatus.WAITING else None,
    )


amounts = st.one_of(st.integers(0, 10**6), st.integers(0, 2**200))
journal_steps = st.fixed_dictionaries(
    {
        "wallet": st.integers(0, 3),
        "version": st.sampled_from([0, 0, 0, 0, 1, -1]),
        "owner": st.sampled_from([AGENT, AGENT, AGENT, None, "someone else"]),
        "status": st.sampled_from(
            [WalletStatus.RUNNING, WalletStatus.ACTIVATED, WalletStatus.DEACTIVATED]
        ),
        "idle": amounts,
        "allocation": st.dictionaries(st.sampled_from(PROTOCOLS), amounts, max_size=2),
        "apr": st.floats(0, 100, allow_nan=False),
        # the wallet's events from a small pool: some journals repeat one it booked
        "deposits": st.lists(
            st.tuples(st.integers(0, 7), st.integers(1, 10**9), st.integers(-2, 2)), max_size=2
        ),
        "withdrawals": st.lists(st.integers(0, 7), max_size=1),
        "transactions": st.integers(0, 2),
        "points": st.integers(0, 2),
        "operation": st.one_of(
            st.none(),
            st.tuples(
                st.integers(0, 1),
                st.sampled_from(
                    [
                        OperationStatus.EXECUTING,
                        OperationStatus.WAITING,
                        OperationStatus.COMPLETED,
                        OperationStatus.FAILED,
                    ]
                ),
                st.integers(0, 2),
            ),
        ),
    }
)
examples = st.fixed_dictionaries(
    {
        "wallets": st.lists(
            st.tuples(
                st.sampled_from([WalletStatus.ACTIVATED, WalletStatus.RUNNING]),
                st.lists(st.tuples(st.integers(0, 2), st.integers(-2, 2)), max_size=1),
            ),
            min_size=4,
            max_size=4,
        ),
        "journals": st.lists(journal_steps, max_size=8),
    }
)


class Side:
    """One of the two mirrored sets of wallets: its chain, and its wallets as stored."""

    def __init__(self, store: WalletStore, chain_id: int, example: int) -> None:
        self.store = store
        self.chain_id = chain_id
        self.example = example
        self.wallets: list[Wallet] = []

    def create(self, partner_id: int, setup: list[Any]) -> None:
        for n, (status, deposits) in enumerate(setup):
            wallet = _wallet(partner_id, self.chain_id, self.example * 10 + n, status)
            booked = [
                DepositRecord(5_000, USDC, _event(self.example, n, k), 50, T0 + timedelta(days=d))
                for k, d in deposits
            ]
            self.wallets.append(
                committing(self.store._engine).create(
                    Journal(wallet, deposits=booked, owner=AGENT), 2e9
                )
            )

    def journals(self, steps: list[dict[str, Any]]) -> list[Journal]:
        """A journal per step; each at the version its wallet has once the wallet's
        earlier journals are written (give or take the step's ``version``)."""
        earlier = [0] * len(self.wallets)
        made = []
        for step in steps:
            made.append(self._journal(step, earlier[step["wallet"]]))
            earlier[step["wallet"]] += 1
        return made

    def _journal(self, step: dict[str, Any], earlier: int) -> Journal:
        stored = self.wallets[step["wallet"]]
        wallet = replace(
            stored,
            status=step["status"],
            idle=step["idle"],
            positions=dict(step["allocation"]),
            current_apr=step["apr"],
            version=stored.version + earlier + step["version"],
        )
        at = T0 + timedelta(days=3)

        def events(k: int) -> str:
            return _event(self.example, step["wallet"], k)

        operation = None
        if step["operation"] is not None:
            n, status, done = step["operation"]
            name = f"{self.chain_id}-{self.example}-{step['wallet']}-{n}"
            operation = _operation(wallet, name, status, done)
        return Journal(
            wallet,
            deposits=[
                DepositRecord(amount, USDC, events(k), 60, at + timedelta(days=d))
                for k, amount, d in step["deposits"]
            ],
            withdrawals=[
                WithdrawalRecord(USDC, WithdrawalSplit(7, 5, 2, 0), 7.0, 7.0, events(k), 61, at)
                for k in step["withdrawals"]
            ],
            transactions=[
                TransactionRecord("deposit", USDC, 10 + i, _tx(self.example, 100 + i), at)
                for i in range(step["transactions"])
            ],
            points=[PerformancePoint(at, 1_000 + i, i) for i in range(step["points"])],
            operation=operation,
            owner=step["owner"],
        )


def _fill_to(store: WalletStore, partner_id: int, stripe: int) -> None:
    """Stores wallets on another chain until the next id falls on ``stripe``."""
    while True:
        made = committing(store._engine).create(
            Journal(_wallet(partner_id, FILLER, next(_serial) + 10**9, WalletStatus.ACTIVATING))
        )
        if (made.id + 1) % STRIPES == stripe:
            return


_LEFT_OUT = {
    "id",
    "chain_id",
    "created_at",
    "updated_at",
    "started_at",
    "finished_at",
    "next_attempt_at",
}


def _stored(engine: Engine, side: Side) -> dict[str, Any]:
    """Everything stored of the side's wallets, with what differs between the sides (ids,
    chain, the moment of writing) replaced by positions."""
    ids = [w.id for w in side.wallets]
    position = {wallet_id: n for n, wallet_id in enumerate(ids)}
    found: dict[str, Any] = {}
    with engine.connect() as connection:

        def rows(table: Any, *where: Any) -> list[dict[str, Any]]:
            listed = connection.execute(select(table).where(*where).order_by(table.c.id))
            return [dict(row._mapping) for row in listed]

        def by_wallet(table: Any) -> list[dict[str, Any]]:
            """The table's rows of the side's wallets, wallet by wallet, each in order."""
            listed = rows(table, table.c.wallet_id.in_(ids))
            return sorted(listed, key=lambda row: (position[row["wallet_id"]], row["id"]))

        def plain(row: dict[str, Any]) -> dict[str, Any]:
            kept = {k: v for k, v in row.items() if k not in _LEFT_OUT}
            if "wallet_id" in kept:
                kept["wallet_id"] = position[kept["wallet_id"]]
            return kept

        for row_type in (DepositRow, WithdrawalRow, TransactionRow, RewardRow):
            table = row_type.__table__  # type: ignore[union-attr]
            found[table.name] = [plain(row) for row in by_wallet(table)]
        points = PerformancePointRow.__table__  # type: ignore[attr-defined]
        found["points"] = [plain(row) for row in by_wallet(points)]
        wallets = WalletRow.__table__  # type: ignore[attr-defined]
        found["wallets"] = [plain(r) for r in rows(wallets, wallets.c.id.in_(ids))]
        operations = OperationRow.__table__  # type: ignore[attr-defined]
        found["operations"] = sorted(
            (
                plain(r) | {"name": r["id"].split("-", 1)[1]}
                for r in rows(operations, operations.c.wallet_id.in_(ids))
            ),
            key=lambda r: r["name"],
        )
        events = WalletEventRow.__table__  # type: ignore[attr-defined]
        listed = by_wallet(events)
        order = {row["id"]: n for n, row in enumerate(listed)}
        run_ids = f'"{side.chain_id}-'  # a run's id names its side
        found["events"] = [
            plain(row | {"data": row["data"].replace(run_ids, '"')}) for row in listed
        ]
        deliveries = WebhookDeliveryRow.__table__  # type: ignore[attr-defined]
        found["deliveries"] = sorted(
            (
                plain(row) | {"event_id": order[row["event_id"]]}
                for row in rows(deliveries, deliveries.c.wallet_id.in_(ids))
            ),
            key=lambda row: row["event_id"],
        )
        totals = ChainTotalsRow.__table__  # type: ignore[attr-defined]
        found["chain_totals"] = sorted(
            (
                {k: v for k, v in row._mapping.items() if k != "chain_id"}
                for row in connection.execute(
                    select(totals).where(totals.c.chain_id == side.chain_id)
                )
            ),
            key=lambda r: (r["token"], r["protocol"], r["stripe"]),
        )
    found["totals"] = side.store.totals(side.chain_id)
    return found


@pytest.fixture
def store(engine: Engine) -> WalletStore:
    return WalletStore(engine)


@pytest.fixture
def owner(engine: Engine, partner: tuple[Partner, str]) -> int:
    """A partner with a webhook (so events get their deliveries)."""
    WebhookStore(engine).set(partner[0].id, "https://partner.test/hook", "sealed")
    return partner[0].id


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(example=examples)
def test_a_batch_stores_what_its_journals_committed_one_by_one_store(
    engine: Engine, store: WalletStore, owner: int, example: dict[str, Any]
) -> None:
    n = next(_serial)
    batched, singly = Side(store, BATCHED, n), Side(store, SINGLY, n)
    batched.create(owner, example["wallets"])
    _fill_to(store, owner, batched.wallets[0].id % STRIPES)
    singly.create(owner, example["wallets"])
    assert [w.id % STRIPES for w in singly.wallets] == [w.id % STRIPES for w in batched.wallets]

    journals = batched.journals(example["journals"])
    answers = committing(store._engine).commit_many(journals)
    one_by_one = []
    mirrored = singly.journals(example["journals"])
    for journal in mirrored:
        try:
            committing(store._engine).commit(journal)
        except Conflict:
            one_by_one.append(False)
        else:
            one_by_one.append(True)

    event(f"{sum(answers)} of {len(answers)} written")
    assert answers == one_by_one
    assert [j.wallet.version for j in journals] == [j.wallet.version for j in mirrored]
    assert _stored(engine, batched) == _stored(engine, singly)


def _stored_wallets(store: WalletStore, owner: int, count_: int) -> list[Wallet]:
    n = next(_serial)
    return [
        committing(store._engine).create(
            Journal(_wallet(owner, BATCHED, n * 10 + i, WalletStatus.ACTIVATED))
        )
        for i in range(count_)
    ]


def test_a_chain_event_already_booked_sinks_only_its_own_journal(
    store: WalletStore, owner: int
) -> None:
    first, second, third = _stored_wallets(store, owner, 3)
    booked = DepositRecord(10, USDC, _tx(0, 1), 5, T0)
    committing(store._engine).commit(Journal(first, deposits=[booked]))
    journals = [
        Journal(replace(first, idle=1), deposits=[replace(booked, tx_hash=_tx(0, 2))]),
        Journal(replace(second, idle=2), deposits=[booked]),  # booked by the first wallet
        Journal(replace(third, idle=3), deposits=[replace(booked, tx_hash=_tx(0, 3))]),
    ]

    assert committing(store._engine).commit_many(journals) == [True, False, True]

    assert [j.wallet.version for j in journals] == [2, 0, 1]
    assert [store.get_by_id(w.id).idle for w in (first, second, third)] == [1, 0, 3]  # type: ignore[union-attr]
    assert [d.tx_hash for d in store.deposits(first.id)] == [_tx(0, 1), _tx(0, 2)]
    assert store.deposits(second.id) == []
    assert [d.tx_hash for d in store.deposits(third.id)] == [_tx(0, 3)]
    assert store.totals(BATCHED).tokens[USDC].deposited == 30


def test_one_chain_event_in_two_wallets_journals_is_booked_once(
    store: WalletStore, owner: int
) -> None:
    first, second = _stored_wallets(store, owner, 2)
    withdrawn = WithdrawalRecord(USDC, WithdrawalSplit(7, 5, 2, 0), 7.0, 7.0, _tx(0, 9), 3, T0)
    journals = [
        Journal(replace(first, idle=1), withdrawals=[withdrawn]),
        Journal(replace(second, idle=2), withdrawals=[withdrawn]),
    ]

    assert committing(store._engine).commit_many(journals) == [True, False]

    assert [store.get_by_id(w.id).idle for w in (first, second)] == [1, 0]  # type: ignore[union-attr]
    assert [w.tx_hash for w in store.withdrawals(first.id)] == [_tx(0, 9)]
    assert store.withdrawals(second.id) == []


def test_a_batch_of_nothing_writes_nothing(store: WalletStore) -> None:
    assert committing(store._engine).commit_many([]) == []


def test_booked_many_answers_what_booked_answers(store: WalletStore, owner: int) -> None:
    wallets = _stored_wallets(store, owner, 3)
    for n, wallet in enumerate(wallets):
        committing(store._engine).commit(
            Journal(
                replace(wallet),
                deposits=[DepositRecord(1, USDC, _tx(n, 1), 10 * n, T0)],
                withdrawals=[
                    WithdrawalRecord(USDC, WithdrawalSplit(1, 1, 0, 0), 1.0, 1.0, _tx(n, 2), 20, T0)
                ],
                transactions=[
                    TransactionRecord("deposit", USDC, 1, _tx(n, 3), T0, block_number=30),
                    TransactionRecord("deposit", USDC, 1, _tx(n, 4), T0),  # no block known
                ],
            )
        )
    since = {wallets[0].id: 0, wallets[1].id: 15, wallets[2].id: 31, 10**9: 0}

    found = store.booked_many(since)

    assert found == {wallet_id: store.booked(wallet_id, s) for wallet_id, s in since.items()}
    assert found[wallets[1].id] == {(_tx(1, 2), 0), (_tx(1, 3), 0), (_tx(1, 4), 0)}
    assert found[wallets[2].id] == {(_tx(2, 4), 0)}
    assert found[10**9] == set()
    assert store.booked_many({}) == {}


def test_open_on_many_answers_what_open_on_answers(
    engine: Engine, store: WalletStore, owner: int
) -> None:
    operations = OperationStore(engine)
    wallets = _stored_wallets(store, owner, 3)
    for n, status in enumerate(
        (
            OperationStatus.EXECUTING,
            OperationStatus.WAITING,
            OperationStatus.COMPLETED,
            OperationStatus.EXECUTING,
        )
    ):
        wallet = wallets[n % 2]
        operations.start(_operation(wallet, f"op-{next(_serial)}-{n}", status, 0))
    ids = [w.id for w in wallets] + [10**9]

    found = operations.open_on_many(ids)

    assert found == {wallet_id: operations.open_on(wallet_id) for wallet_id in ids}
    assert [len(found[w.id]) for w in wallets] == [1, 2, 0]
    assert found[10**9] == []
    assert operations.open_on_many([]) == {}
