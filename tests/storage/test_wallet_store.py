"""WalletStore: wallets and their history, on SQLite and on PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import Engine

from yieldagent.domain.books.accounting import WithdrawalSplit
from yieldagent.domain.books.apr import PerformancePoint
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.books.wallets import (
    DepositRecord,
    Journal,
    RewardRecord,
    TransactionRecord,
    Wallet,
    WithdrawalRecord,
)
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.errors import Conflict
from yieldagent.domain.pagination import PageRequest
from yieldagent.domain.partners.smart_accounts import smart_account_address
from yieldagent.domain.ports.accounts import SmartAccount
from yieldagent.domain.ports.credentials import Partner
from yieldagent.storage.smart_accounts import SmartAccountStore
from yieldagent.storage.wallets import WalletStore

BASE, ARBITRUM = 8453, 42161
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
WELL = "0xA88594D404727625A9437C3f886C7643872296AE"
EOA = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
OTHER_EOA = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
ADDRESS = smart_account_address(EOA, "bot")
OTHER_ADDRESS = smart_account_address(EOA, "other")
THIRD_ADDRESS = smart_account_address(OTHER_EOA, "bot")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
CONSTRAINTS = Constraints(
    min_protocols=2,
    min_fraction=0.1,
    excluded=frozenset({"moonwell"}),
    max_amount={"aave": 2**200},
    max_ratio={"compound": 0.5},
    min_position=2**70,
    min_amount={"aave": 3},
)


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def tx(n: int) -> str:
    return f"0x{n:064x}"


def _wallet(
    partner_id: int,
    *,
    chain_id: int = BASE,
    address: str = ADDRESS,
    eoa: str = EOA,
    status: WalletStatus = WalletStatus.ACTIVATED,
    activation: datetime = T0,
) -> Wallet:
    return Wallet(
        id=0,
        chain_id=chain_id,
        address=address,
        eoa=eoa,
        partner_id=partner_id,
        status=status,
        token=USDC,
        selected_protocols=("aave", "compound", "morpho_gauntlet_usdc_prime"),
        constraints=CONSTRAINTS,
        principal=2**100 + 7,
        positions={"aave": 2**70 + 1, "compound": 5},
        idle=2**65 + 3,
        current_apr=3.25,
        valued_at=T0 + timedelta(hours=1, microseconds=123_456),
        is_staked=True,
        activation_date=activation,
        last_deactivation_date=None,
        last_reactivation_date=day(2),
    )


def _deposit(n: int, date: datetime, amount: int = 1_000) -> DepositRecord:
    return DepositRecord(amount, USDC, tx(n), 24_000_000 + n, date)


def _transaction(n: int, date: datetime, action: str = "deposit") -> TransactionRecord:
    return TransactionRecord(action, USDC, n, tx(n), date, block_number=n)


def _reward(n: int, date: datetime) -> RewardRecord:
    return RewardRecord(WELL, "WELL", 10**18 * n, 18, 0.03 * n, tx(n), n % 2 == 0, date)


@pytest.fixture
def store(engine: Engine) -> WalletStore:
    return WalletStore(engine)


@pytest.fixture
def owner(partner: tuple[Partner, str]) -> int:
    return partner[0].id


@pytest.fixture
def wallet(store: WalletStore, owner: int) -> Wallet:
    """A stored wallet, without history."""
    return store.create(Journal(_wallet(owner)))


def _page(newest_first: bool, page: int = 1, limit: int = 100) -> PageRequest:
    return PageRequest(page, limit, newest_first)


# -- create and get -----------------------------------------------------------------------------


def test_create_then_get_round_trips(store: WalletStore, owner: int) -> None:
    original = _wallet(owner)
    expected = replace(original)
    created = store.create(Journal(original))
    assert created.id > 0
    expected.id = created.id
    assert created == expected
    stored = store.get(BASE, ADDRESS)
    assert stored == expected
    assert store.get_by_eoa(BASE, EOA) == expected
    assert stored is not None
    assert stored.positions == {"aave": 2**70 + 1, "compound": 5}
    assert stored.principal == 2**100 + 7
    assert stored.idle == 2**65 + 3
    assert stored.constraints == CONSTRAINTS
    assert stored.constraints.max_amount["aave"] == 2**200
    assert stored.status is WalletStatus.ACTIVATED
    assert stored.last_deactivation_date is None
    for moment in (stored.valued_at, stored.activation_date, stored.last_reactivation_date):
        assert moment is not None
        assert moment.utcoffset() == timedelta(0)
    assert stored.valued_at.microsecond == 123_456


def test_nothing_is_found_where_nothing_was_stored(store: WalletStore, wallet: Wallet) -> None:
    assert store.get(BASE, OTHER_ADDRESS) is None
    assert store.get(ARBITRUM, ADDRESS) is None
    assert store.get_by_eoa(BASE, OTHER_EOA) is None
    assert store.get_by_eoa(ARBITRUM, EOA) is None


def test_get_by_eoa_gives_the_most_recently_activated_wallet(
    store: WalletStore, owner: int
) -> None:
    store.create(Journal(_wallet(owner, address=ADDRESS, activation=day(1))))
    later = store.create(Journal(_wallet(owner, address=OTHER_ADDRESS, activation=day(5))))
    store.create(Journal(_wallet(owner, address=THIRD_ADDRESS, activation=day(3))))
    store.create(Journal(_wallet(owner, chain_id=ARBITRUM, activation=day(9))))
    found = store.get_by_eoa(BASE, EOA)
    assert found is not None
    assert found.address == later.address
    # activated at the same moment: the one stored last
    tie = store.create(
        Journal(_wallet(owner, address=smart_account_address(EOA, "x"), activation=day(5)))
    )
    found = store.get_by_eoa(BASE, EOA)
    assert found is not None
    assert found.id == tie.id


def test_a_stamp_names_the_wallet_a_view_reads_and_its_version(
    store: WalletStore, owner: int
) -> None:
    first = store.create(Journal(_wallet(owner, address=ADDRESS, activation=day(1))))
    later = store.create(Journal(_wallet(owner, address=OTHER_ADDRESS, activation=day(5))))
    assert store.stamp(BASE, ADDRESS, False) == (first.id, first.version)
    assert store.stamp(BASE, EOA, True) == (later.id, later.version)
    assert store.stamp(BASE, OTHER_EOA, True) is None
    assert store.stamp(ARBITRUM, ADDRESS, False) is None

    store.commit(Journal(replace(first, idle=1), deposits=[_deposit(1, day(6))]))
    stamp = store.stamp(BASE, ADDRESS, False)
    view = store.view(BASE, ADDRESS, False)
    assert view is not None
    assert stamp == (first.id, first.version + 1) == (view[0].id, view[0].version)
    assert view[1] == [_deposit(1, day(6))]


def test_create_refuses_an_address_taken_on_the_chain(store: WalletStore, owner: int) -> None:
    first = store.create(Journal(_wallet(owner)))
    duplicate = _wallet(owner, eoa=OTHER_EOA, status=WalletStatus.ACTIVATING)
    with pytest.raises(Conflict, match="activated concurrently"):
        store.create(Journal(duplicate, deposits=[_deposit(1, T0)]))
    assert store.get(BASE, ADDRESS) == first
    assert not store.deposit_known(BASE, tx(1))
    assert store.wallets(BASE) == [first]
    # the same address on another chain is another wallet
    elsewhere = store.create(Journal(_wallet(owner, chain_id=ARBITRUM)))
    assert elsewhere.id != first.id
    assert store.get(ARBITRUM, ADDRESS) == elsewhere


# -- commit ---------------------------------------------------------------------------------------


def test_commit_stores_the_new_state_and_its_records(store: WalletStore, wallet: Wallet) -> None:
    changed = replace(
        wallet,
        status=WalletStatus.DEACTIVATED,
        principal=0,
        positions={},
        idle=2**90,
        current_apr=0.0,
        is_staked=False,
        constraints=Constraints(),
        selected_protocols=("aave",),
        last_deactivation_date=day(7),
    )
    store.commit(Journal(changed, deposits=[_deposit(1, day(6))]), WalletStatus.ACTIVATED)
    assert store.get(BASE, ADDRESS) == changed
    assert store.deposits(wallet.id) == [_deposit(1, day(6))]
    store.commit(Journal(replace(changed, idle=1)))  # no expectation: always stored
    stored = store.get(BASE, ADDRESS)
    assert stored is not None
    assert stored.idle == 1


def test_commit_refuses_when_the_status_changed_meanwhile(
    store: WalletStore, wallet: Wallet
) -> None:
    stale = replace(wallet, status=WalletStatus.RUNNING, idle=0)
    journal = Journal(
        stale,
        deposits=[_deposit(1, day(1))],
        withdrawals=[
            WithdrawalRecord(USDC, WithdrawalSplit(5, 4, 1, 0), 5e-6, 5e-6, tx(2), 9, day(1))
        ],
        transactions=[_transaction(3, day(1))],
        rewards=[_reward(4, day(1))],
        points=[PerformancePoint(day(1), 10, 5)],
    )
    with pytest.raises(Conflict, match="changed meanwhile"):
        store.commit(journal, expected=WalletStatus.BLOCKED)
    assert store.get(BASE, ADDRESS) == wallet  # nothing changed
    assert store.deposits(wallet.id) == []
    assert store.withdrawals(wallet.id) == []
    assert store.transactions(wallet.id, _page(True)) == ([], 0)
    assert store.rewards(wallet.id, _page(True)) == ([], 0)
    assert store.points(wallet.id) == []
    assert not store.deposit_known(BASE, tx(1))


def test_commit_of_an_unknown_wallet_is_a_conflict(store: WalletStore, wallet: Wallet) -> None:
    with pytest.raises(Conflict):
        store.commit(Journal(replace(wallet, id=wallet.id + 1000)))


def test_records_round_trip_in_order(store: WalletStore, owner: int) -> None:
    deposits = [_deposit(3, day(3), 2**80), _deposit(1, day(1)), _deposit(2, day(1))]
    withdrawals = [
        WithdrawalRecord(
            USDC, WithdrawalSplit(2**70, 2**70 - 9, 9, 1), 1.5e15, 1.5e15, tx(20), 7, day(4)
        ),
        WithdrawalRecord(USDC, WithdrawalSplit(10, 10, 0, 0), 1e-5, 1e-5, None, None, day(2)),
    ]
    transactions = [
        TransactionRecord(
            "swap",
            USDC,
            2**75,
            tx(30),
            day(2),
            status="approved",
            protocol="aave",
            new_token=WELL,
            amount_out=2**90,
            apr=4.5,
            block_number=2**40,
            correlation_id="0b9a5c9e-8d36-4c4b-9a33-8a3f7e6d5c4b",
        ),
        TransactionRecord("deposit", USDC, 1, tx(31), day(1)),
    ]
    rewards = [_reward(40, day(5)), _reward(41, day(4))]
    points = [
        PerformancePoint(day(4), 2**80 + 5, -(2**79)),
        PerformancePoint(T0, 0, 2**80),
        PerformancePoint(day(2), 2**80 + 1),
    ]
    created = store.create(
        Journal(
            _wallet(owner),
            deposits=deposits,
            withdrawals=withdrawals,
            transactions=transactions,
            rewards=rewards,
            points=points,
        )
    )
    by_date_then_insertion = [deposits[1], deposits[2], deposits[0]]
    assert store.deposits(created.id) == by_date_then_insertion
    assert store.withdrawals(created.id) == [withdrawals[1], withdrawals[0]]
    assert store.transactions(created.id, _page(False)) == ([transactions[1], transactions[0]], 2)
    assert store.rewards(created.id, _page(False)) == ([rewards[1], rewards[0]], 2)
    assert store.points(created.id) == [points[1], points[2], points[0]]
    for record in store.deposits(created.id):
        assert record.date.utcoffset() == timedelta(0)
    for point in store.points(created.id):
        assert point.at.utcoffset() == timedelta(0)
    # a later commit appends; nothing is replaced
    store.commit(Journal(created, points=[PerformancePoint(day(9), 7)]))
    assert store.points(created.id)[-1] == PerformancePoint(day(9), 7)
    assert len(store.points(created.id)) == 4


def test_points_at_the_same_moment_keep_their_insertion_order(
    store: WalletStore, wallet: Wallet
) -> None:
    store.commit(Journal(wallet, points=[PerformancePoint(day(1), 5, 1)]))
    store.commit(Journal(wallet, points=[PerformancePoint(day(1), 6, -6)]))
    assert store.points(wallet.id) == [
        PerformancePoint(day(1), 5, 1),
        PerformancePoint(day(1), 6, -6),
    ]


# -- deposits credited once ----------------------------------------------------------------------


def test_deposit_known(store: WalletStore, wallet: Wallet) -> None:
    assert not store.deposit_known(BASE, tx(1))
    store.commit(Journal(wallet, deposits=[_deposit(1, day(1))]))
    assert store.deposit_known(BASE, tx(1))
    assert not store.deposit_known(ARBITRUM, tx(1))
    assert not store.deposit_known(BASE, tx(2))


def test_deposits_found_by_balance_have_no_hash_and_may_repeat(
    store: WalletStore, wallet: Wallet
) -> None:
    unhashed = [
        DepositRecord(5, USDC, None, None, day(1)),
        DepositRecord(6, USDC, None, None, day(2)),
    ]
    store.commit(Journal(wallet, deposits=unhashed[:1]))
    store.commit(Journal(wallet, deposits=unhashed[1:]))
    assert store.deposits(wallet.id) == unhashed


def test_a_transfer_is_credited_once_per_chain(
    store: WalletStore, owner: int, wallet: Wallet
) -> None:
    store.commit(Journal(wallet, deposits=[_deposit(1, day(1))]))
    again = replace(wallet, principal=1, status=WalletStatus.EMERGENCY)
    with pytest.raises(Conflict, match="already booked"):
        store.commit(
            Journal(again, deposits=[_deposit(1, day(2))], points=[PerformancePoint(day(2), 1)])
        )
    # the whole journal was refused: neither the state nor any record changed
    assert store.get(BASE, ADDRESS) == wallet
    assert store.deposits(wallet.id) == [_deposit(1, day(1))]
    assert store.points(wallet.id) == []
    # another wallet cannot be created with it either
    with pytest.raises(Conflict):
        store.create(Journal(_wallet(owner, address=OTHER_ADDRESS), deposits=[_deposit(1, day(3))]))
    assert store.get(BASE, OTHER_ADDRESS) is None
    # on another chain the same hash is another transfer
    elsewhere = store.create(
        Journal(_wallet(owner, chain_id=ARBITRUM), deposits=[_deposit(1, day(3))])
    )
    assert store.deposits(elsewhere.id) == [_deposit(1, day(3))]


def test_a_journal_repeating_one_transfer_is_refused(store: WalletStore, wallet: Wallet) -> None:
    with pytest.raises(Conflict):
        store.commit(Journal(wallet, deposits=[_deposit(1, day(1)), _deposit(1, day(2))]))
    assert store.deposits(wallet.id) == []


# -- history pages --------------------------------------------------------------------------------


def _stored_transactions(store: WalletStore, wallet: Wallet) -> list[TransactionRecord]:
    """Five transactions over two commits; three of them at one moment."""
    first = [_transaction(1, day(3)), _transaction(2, day(2)), _transaction(3, day(1))]
    second = [_transaction(4, day(2)), _transaction(5, day(2))]
    store.commit(Journal(wallet, transactions=first))
    store.commit(Journal(wallet, transactions=second))
    return first + second


def test_transactions_newest_first_ties_by_latest_insertion(
    store: WalletStore, wallet: Wallet
) -> None:
    _stored_transactions(store, wallet)
    items, total = store.transactions(wallet.id, _page(True))
    assert total == 5
    assert [t.amount for t in items] == [1, 5, 4, 2, 3]


def test_transactions_oldest_first_ties_by_insertion(store: WalletStore, wallet: Wallet) -> None:
    stored = _stored_transactions(store, wallet)
    items, total = store.transactions(wallet.id, _page(False))
    assert total == 5
    assert [t.amount for t in items] == [3, 2, 4, 5, 1]
    assert sorted(items, key=lambda t: t.amount) == stored[:5]


@pytest.mark.parametrize("newest_first", [True, False])
def test_transaction_pages_cut_the_listing_in_order(
    store: WalletStore, wallet: Wallet, newest_first: bool
) -> None:
    _stored_transactions(store, wallet)
    everything, _ = store.transactions(wallet.id, _page(newest_first))
    pages = [store.transactions(wallet.id, _page(newest_first, n, 2)) for n in (1, 2, 3, 4)]
    assert [len(items) for items, _ in pages] == [2, 2, 1, 0]
    assert all(total == 5 for _, total in pages)
    assert [t for items, _ in pages for t in items] == everything


def test_transactions_of_other_wallets_are_not_listed(
    store: WalletStore, owner: int, wallet: Wallet
) -> None:
    _stored_transactions(store, wallet)
    other = store.create(
        Journal(_wallet(owner, address=OTHER_ADDRESS), transactions=[_transaction(9, day(9))])
    )
    assert store.transactions(other.id, _page(True)) == ([_transaction(9, day(9))], 1)
    assert store.transactions(wallet.id, _page(True))[1] == 5
    assert store.transactions(wallet.id + other.id + 1, _page(True)) == ([], 0)


def test_reward_pages(store: WalletStore, owner: int, wallet: Wallet) -> None:
    rewards = [_reward(1, day(1)), _reward(2, day(3)), _reward(3, day(3)), _reward(4, day(2))]
    store.commit(Journal(wallet, rewards=rewards[:2]))
    store.commit(Journal(wallet, rewards=rewards[2:]))
    store.create(Journal(_wallet(owner, address=OTHER_ADDRESS), rewards=[_reward(9, day(9))]))
    newest, total = store.rewards(wallet.id, _page(True))
    assert total == 4
    assert newest == [rewards[2], rewards[1], rewards[3], rewards[0]]
    oldest, _ = store.rewards(wallet.id, _page(False))
    assert oldest == [rewards[0], rewards[3], rewards[1], rewards[2]]
    assert store.rewards(wallet.id, _page(True, 2, 3)) == ([rewards[0]], 4)
    assert store.rewards(wallet.id, _page(False, 2, 2)) == ([rewards[1], rewards[2]], 4)
    assert store.rewards(wallet.id, _page(False, 3, 2)) == ([], 4)


# -- leases ---------------------------------------------------------------------------------------


def test_a_live_lease_keeps_others_out(store: WalletStore, wallet: Wallet) -> None:
    assert store.acquire_lease(wallet.id, "a", until=100.0, now=50.0)
    assert not store.acquire_lease(wallet.id, "b", until=200.0, now=60.0)
    assert not store.acquire_lease(wallet.id, "b", until=200.0, now=100.0)  # until is inclusive


def test_an_expired_lease_can_be_taken(store: WalletStore, wallet: Wallet) -> None:
    assert store.acquire_lease(wallet.id, "a", until=100.0, now=50.0)
    assert store.acquire_lease(wallet.id, "b", until=200.0, now=100.5)
    assert not store.acquire_lease(wallet.id, "a", until=300.0, now=150.0)  # b holds it now


def test_only_the_owner_releases_a_lease(store: WalletStore, wallet: Wallet) -> None:
    assert store.acquire_lease(wallet.id, "a", until=100.0, now=50.0)
    store.release_lease(wallet.id, "b")
    assert not store.acquire_lease(wallet.id, "c", until=100.0, now=60.0)
    store.release_lease(wallet.id, "a")
    assert store.acquire_lease(wallet.id, "c", until=100.0, now=60.0)


def test_leases_are_per_wallet(store: WalletStore, owner: int, wallet: Wallet) -> None:
    other = store.create(Journal(_wallet(owner, address=OTHER_ADDRESS)))
    assert store.acquire_lease(wallet.id, "a", until=100.0, now=50.0)
    assert store.acquire_lease(other.id, "b", until=100.0, now=50.0)
    assert not store.acquire_lease(other.id + wallet.id + 1, "a", until=100.0, now=50.0)


def test_a_commit_under_a_lease_keeps_the_lease(store: WalletStore, wallet: Wallet) -> None:
    assert store.acquire_lease(wallet.id, "a", until=100.0, now=50.0)
    store.commit(Journal(replace(wallet, idle=9)), WalletStatus.ACTIVATED)
    assert not store.acquire_lease(wallet.id, "b", until=200.0, now=60.0)


def test_the_holder_may_renew_its_live_lease(store: WalletStore, wallet: Wallet) -> None:
    assert store.acquire_lease(wallet.id, "a", until=100.0, now=50.0)
    assert store.acquire_lease(wallet.id, "a", until=200.0, now=90.0)


# -- chain-wide reads -----------------------------------------------------------------------------


def test_wallets_of_a_chain(store: WalletStore, owner: int) -> None:
    first = store.create(Journal(_wallet(owner)))
    store.create(Journal(_wallet(owner, chain_id=ARBITRUM)))
    second = store.create(Journal(_wallet(owner, address=OTHER_ADDRESS, eoa=OTHER_EOA)))
    assert store.wallets(BASE) == [first, second]
    assert [w.chain_id for w in store.wallets(ARBITRUM)] == [ARBITRUM]
    assert store.wallets(1) == []


def test_all_deposits_of_a_chain_oldest_first_with_their_wallet(
    store: WalletStore, owner: int
) -> None:
    a = store.create(Journal(_wallet(owner), deposits=[_deposit(1, day(5)), _deposit(2, day(1))]))
    b = store.create(Journal(_wallet(owner, address=OTHER_ADDRESS), deposits=[_deposit(3, day(3))]))
    c = store.create(Journal(_wallet(owner, chain_id=ARBITRUM), deposits=[_deposit(4, day(0))]))
    store.commit(Journal(a, deposits=[_deposit(5, day(3))]))
    assert store.all_deposits(BASE) == [
        (a.id, _deposit(2, day(1))),
        (b.id, _deposit(3, day(3))),
        (a.id, _deposit(5, day(3))),
        (a.id, _deposit(1, day(5))),
    ]
    assert store.all_deposits(ARBITRUM) == [(c.id, _deposit(4, day(0)))]
    assert store.all_deposits(1) == []


def test_count_transactions_per_chain(store: WalletStore, owner: int) -> None:
    assert store.count_transactions(BASE) == 0
    store.create(
        Journal(_wallet(owner), transactions=[_transaction(1, day(1)), _transaction(2, day(2))])
    )
    store.create(
        Journal(_wallet(owner, address=OTHER_ADDRESS), transactions=[_transaction(3, day(1))])
    )
    store.create(Journal(_wallet(owner, chain_id=ARBITRUM), transactions=[_transaction(4, day(1))]))
    assert store.count_transactions(BASE) == 3
    assert store.count_transactions(ARBITRUM) == 1
    assert store.count_transactions(1) == 0


def test_smart_account_lookup(engine: Engine, store: WalletStore, owner: int) -> None:
    account = SmartAccount(BASE, EOA, "bot", ADDRESS, owner)
    SmartAccountStore(engine).record(account)
    assert store.smart_account(BASE, ADDRESS) == account
    assert store.smart_account(ARBITRUM, ADDRESS) is None
    assert store.smart_account(BASE, OTHER_ADDRESS) is None


# -- time zones -----------------------------------------------------------------------------------


def test_dates_in_another_time_zone_keep_their_instant(
    engine: Engine, store: WalletStore, owner: int
) -> None:
    paris = timezone(timedelta(hours=2))
    moment = datetime(2026, 1, 1, 12, 0, tzinfo=paris)
    created = store.create(
        Journal(
            replace(_wallet(owner), activation_date=moment, valued_at=moment),
            deposits=[_deposit(1, moment)],
        )
    )
    stored = store.get(BASE, ADDRESS)
    assert stored is not None
    assert stored.activation_date == moment
    assert store.deposits(created.id)[0].date == moment
