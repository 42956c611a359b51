"""The wallet schedule (``storage.schedule``): a commit writes only under a lease its owner
still holds, ``active`` follows the wallet's status through every kind of commit, a batch's
end (``RunStore.finish``) notes what ran and gives back only its own leases, and the
migration that moved the schedule and the lease off the wallets row keeps both."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from alembic import command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, text

from support.agent_setup import schedule_row
from support.wallet_setup import committing
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.books.wallets import Journal, Wallet
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.errors import Conflict
from yieldagent.domain.partners.smart_accounts import smart_account_address
from yieldagent.domain.ports.credentials import Partner
from yieldagent.domain.ports.storage import RunEnd
from yieldagent.storage.db import alembic_config
from yieldagent.storage.runs import RunStore
from yieldagent.storage.wallets import WalletStore

BASE = 8453
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
EOA = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
_made = iter(range(10**6))


def _new(store: WalletStore, partner_id: int, status: WalletStatus) -> Wallet:
    wallet = Wallet(
        id=0,
        chain_id=BASE,
        address=smart_account_address(EOA, f"bot-{next(_made)}"),
        eoa=EOA,
        partner_id=partner_id,
        status=status,
        token=USDC,
        selected_protocols=("aave", "compound"),
        constraints=Constraints(),
        principal=10**9,
        positions={"aave": 10**9},
        idle=0,
        current_apr=3.0,
        valued_at=T0,
        is_staked=False,
        activation_date=T0,
        last_deactivation_date=None,
        last_reactivation_date=None,
    )
    return store.create(Journal(wallet))


@pytest.fixture
def store(engine: Engine) -> WalletStore:
    return WalletStore(engine)


@pytest.fixture
def owner(partner: tuple[Partner, str]) -> int:
    assert partner[0].id is not None
    return partner[0].id


# -- the lease a commit must hold -----------------------------------------------------------


def test_a_commit_under_a_lease_taken_over_changes_nothing(
    store: WalletStore, owner: int, engine: Engine
) -> None:
    wallet = _new(store, owner, WalletStatus.ACTIVATED)
    assert store.acquire_lease(wallet.id, "a", until=100.0, now=50.0)
    assert store.acquire_lease(wallet.id, "b", until=300.0, now=150.0)  # a's lapsed

    with pytest.raises(Conflict):
        store.commit(Journal(replace(wallet, idle=9), owner="a"))

    assert store.get_by_id(wallet.id) == wallet
    assert schedule_row(engine, wallet.id).lease_owner == "b"
    store.commit(Journal(replace(wallet, idle=9), owner="b"))
    stored = store.get_by_id(wallet.id)
    assert stored is not None and stored.idle == 9
    lease = schedule_row(engine, wallet.id)
    assert (lease.lease_owner, lease.lease_until) == ("b", 300.0)


def test_a_batch_writes_the_journals_whose_lease_is_held_and_skips_the_others(
    store: WalletStore, owner: int
) -> None:
    kept, lost, free = (_new(store, owner, WalletStatus.ACTIVATED) for _ in range(3))
    for wallet in (kept, lost):
        assert store.acquire_lease(wallet.id, "agent", until=100.0, now=50.0)
    assert store.acquire_lease(lost.id, "other", until=300.0, now=150.0)
    journals = [
        Journal(replace(kept, idle=1), owner="agent"),
        Journal(replace(lost, idle=2), owner="agent"),
        Journal(replace(free, idle=3)),
    ]

    assert store.commit_many(journals) == [True, False, True]

    assert [w.idle for w in store.get_many([kept.id, lost.id, free.id])] == [1, 0, 3]


# -- active follows the status --------------------------------------------------------------

_STATUSES = st.sampled_from(list(WalletStatus))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(first=_STATUSES, changes=st.lists(st.lists(_STATUSES, min_size=1, max_size=3), max_size=4))
def test_the_schedule_is_active_exactly_while_the_wallet_is_activated(
    store: WalletStore,
    owner: int,
    engine: Engine,
    first: WalletStatus,
    changes: list[list[WalletStatus]],
) -> None:
    """Created in any status, then changed by single commits and by batches (several
    journals of one wallet in a batch among them): ``active`` is always the status's."""
    wallet = _new(store, owner, first)
    other = _new(store, owner, WalletStatus.ACTIVATED)
    assert schedule_row(engine, wallet.id).active == (first == WalletStatus.ACTIVATED)
    for statuses in changes:
        if len(statuses) == 1:
            wallet = replace(wallet, status=statuses[0])
            committing(engine).commit(Journal(wallet))
        else:
            journals = []
            for n, status in enumerate(statuses):
                journals.append(Journal(replace(wallet, status=status, version=wallet.version + n)))
            journals.append(Journal(replace(other, status=statuses[-1])))
            assert committing(engine).commit_many(journals) == [True] * len(journals)
            wallet = replace(wallet, status=statuses[-1], version=wallet.version + len(statuses))
            other = replace(other, status=statuses[-1], version=other.version + 1)
        stored = store.get_by_id(wallet.id)
        assert stored is not None and stored.status == wallet.status
        assert schedule_row(engine, wallet.id).active == (wallet.status == WalletStatus.ACTIVATED)
        assert schedule_row(engine, other.id).active == (other.status == WalletStatus.ACTIVATED)


# -- a batch's end ---------------------------------------------------------------------------


def test_a_batch_end_notes_what_ran_reschedules_all_and_releases_only_its_own_leases(
    store: WalletStore, owner: int, engine: Engine
) -> None:
    wallets = [_new(store, owner, WalletStatus.ACTIVATED).id for _ in range(3)]
    runs = RunStore(engine)
    assert runs.claim_due(1e9, "agent", 1e9 + 60, 10) == dict.fromkeys(wallets)
    assert store.acquire_lease(wallets[2], "other", until=2e9 + 1, now=1e9 + 61)  # lapsed

    ends = [
        RunEnd(wallets[0], "no_action", "settled"),
        RunEnd(wallets[1]),  # not run
        RunEnd(wallets[2], "failed", "no gas price"),
    ]
    runs.finish(ends, "agent", 2e9, 1.5e9)
    runs.finish([RunEnd(wallets[0], "completed", "moved")], "agent", 3e9, 1.6e9)

    rows = [schedule_row(engine, w) for w in wallets]
    assert [
        (r.next_run_at, r.lease_owner, r.runs, r.last_run_at, r.last_outcome, r.last_reason)
        for r in rows
    ] == [
        (3e9, None, 2, 1.6e9, "completed", "moved"),
        (2e9, None, 0, None, "", ""),
        (2e9, "other", 1, 1.5e9, "failed", "no gas price"),
    ]
    # the next claim tells when each wallet last moved funds: only the completed run did
    assert runs.claim_due(4e9, "agent", 4e9 + 60, 10) == {
        wallets[0]: 1.6e9,
        wallets[1]: None,
        wallets[2]: None,
    }


def test_hasten_makes_due_now_the_activated_wallets_holding_an_exited_pool(
    store: WalletStore, owner: int, engine: Engine
) -> None:
    aave, compound, both = (_new(store, owner, WalletStatus.ACTIVATED) for _ in range(3))
    blocked = _new(store, owner, WalletStatus.BLOCKED)  # in aave, as every one made here
    commits = committing(engine)
    commits.commit(Journal(replace(compound, positions={"compound": 5})))
    commits.commit(Journal(replace(both, positions={"aave": 1, "compound": 2})))
    runs = RunStore(engine)
    for wallet in (aave, compound, both, blocked):
        runs.schedule(wallet.id, 5e9)
    runs.schedule(both.id, 1e9)  # due already: left as it is

    assert runs.hasten(BASE, USDC, ["compound"], 2e9) == 1
    assert runs.hasten(BASE, USDC, ["aave"], 3e9) == 1  # not the blocked one: it does not run
    assert [schedule_row(engine, w.id).next_run_at for w in (aave, compound, both, blocked)] == [
        3e9,
        2e9,
        1e9,
        5e9,
    ]
    assert runs.hasten(BASE, USDC, ["aave", "compound"], 3e9) == 0  # all due already
    assert runs.hasten(BASE, "0x" + "11" * 20, ["aave"], 1.0) == 0  # another token


def test_hasten_of_failed_runs_only_makes_due_the_holders_whose_last_run_failed(
    store: WalletStore, owner: int, engine: Engine
) -> None:
    failed, fine, never = (_new(store, owner, WalletStatus.ACTIVATED) for _ in range(3))
    runs = RunStore(engine)
    runs.note(RunEnd(failed.id, "failed", "the node failed"), 1e9)
    runs.note(RunEnd(fine.id, "no_action", "nothing to move"), 1e9)
    for wallet in (failed, fine, never):
        runs.schedule(wallet.id, 5e9)

    assert runs.hasten(BASE, USDC, ["aave"], 2e9, failed_only=True) == 1
    assert [schedule_row(engine, w.id).next_run_at for w in (failed, fine, never)] == [
        2e9,
        5e9,
        5e9,
    ]


# -- the migration ------------------------------------------------------------------------


def test_the_migration_moves_the_schedule_and_the_lease_off_the_wallets_row(
    store: WalletStore, owner: int, engine: Engine
) -> None:
    on = _new(store, owner, WalletStatus.ACTIVATED)
    off = _new(store, owner, WalletStatus.DEACTIVATED)
    assert store.acquire_lease(on.id, "agent", until=123.5, now=50.0)
    with engine.begin() as connection:
        connection.execute(text("UPDATE wallet_schedule SET next_run_at = 77.25"))
    config = alembic_config(engine)

    command.downgrade(config, "0011")
    with engine.connect() as connection:
        moved_back = connection.execute(
            text("SELECT id, next_run_at, lease_owner, lease_until FROM wallets ORDER BY id")
        ).all()
    assert [tuple(r) for r in moved_back] == [
        (on.id, 77.25, "agent", 123.5),
        (off.id, 77.25, None, None),
    ]
    command.upgrade(config, "head")

    assert [
        (r.active, r.next_run_at, r.lease_owner, r.lease_until)
        for r in (
            schedule_row(engine, on.id),
            schedule_row(engine, off.id),
        )
    ] == [(True, 77.25, "agent", 123.5), (False, 77.25, None, None)]
    assert not store.acquire_lease(on.id, "other", until=200.0, now=100.0)
