"""SmartAccountStore: one row per (chain, EOA, agent id), the first writer keeps it."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine, insert, text
from sqlalchemy.exc import IntegrityError

from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.domain.partners.smart_accounts import smart_account_address
from yieldagent.domain.ports.accounts import SmartAccount
from yieldagent.domain.ports.credentials import Partner
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.smart_accounts import SmartAccountStore
from yieldagent.storage.tables import SmartAccountRow

OWNER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
OTHER_OWNER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
THREADS = 8
_TABLE = SmartAccountRow.__table__  # type: ignore[attr-defined]


def _account(
    partner_id: int, chain_id: int = 8453, eoa: str = OWNER, agent: str = "bot"
) -> SmartAccount:
    return SmartAccount(chain_id, eoa, agent, smart_account_address(eoa, agent), partner_id)


def _count(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(connection.execute(text("SELECT COUNT(*) FROM smart_accounts")).scalar_one())


@pytest.fixture
def two_partners(partners: PartnerStore) -> tuple[Partner, Partner]:
    return partners.create("p1", PERMISSIONS)[0], partners.create("p2", PERMISSIONS)[0]


@pytest.fixture
def store(engine: Engine) -> SmartAccountStore:
    return SmartAccountStore(engine)


def test_nothing_is_recorded_at_first(store: SmartAccountStore) -> None:
    assert store.get(8453, OWNER, "bot") is None


def test_record_then_get_round_trips(
    store: SmartAccountStore, two_partners: tuple[Partner, Partner]
) -> None:
    account = _account(two_partners[0].id)
    assert store.record(account) == account
    assert store.get(8453, OWNER, "bot") == account


def test_recording_twice_returns_the_first_row(
    engine: Engine, store: SmartAccountStore, two_partners: tuple[Partner, Partner]
) -> None:
    first, second = two_partners
    original = store.record(_account(first.id))
    again = store.record(_account(second.id))
    assert again == original
    assert again.partner_id == first.id
    assert store.get(8453, OWNER, "bot") == original
    assert _count(engine) == 1


def test_the_key_is_chain_eoa_and_agent_id(
    engine: Engine, store: SmartAccountStore, two_partners: tuple[Partner, Partner]
) -> None:
    partner = two_partners[0].id
    accounts = [
        _account(partner),
        _account(partner, chain_id=1),
        _account(partner, eoa=OTHER_OWNER),
        _account(partner, agent="other-bot"),
    ]
    for account in accounts:
        assert store.record(account) == account
    for account in accounts:
        assert store.get(account.chain_id, account.eoa, account.agent_id) == account
    assert _count(engine) == len(accounts)


def test_lookups_are_exact_about_the_eoa_letter_case(
    store: SmartAccountStore, two_partners: tuple[Partner, Partner]
) -> None:
    # The domain checksums EOAs before they reach storage; storage compares as given.
    store.record(_account(two_partners[0].id))
    assert store.get(8453, OWNER.lower(), "bot") is None


def test_the_table_refuses_a_duplicate_key(
    engine: Engine, store: SmartAccountStore, two_partners: tuple[Partner, Partner]
) -> None:
    store.record(_account(two_partners[0].id))
    duplicate = insert(_TABLE).values(
        chain_id=8453,
        eoa=OWNER,
        agent_id="bot",
        address="0x" + "00" * 20,
        partner_id=two_partners[1].id,
        created_at=datetime.now(UTC),
    )
    with engine.connect() as connection, pytest.raises(IntegrityError):
        connection.execute(duplicate)
    assert _count(engine) == 1


def test_concurrent_records_of_one_key_agree_on_a_single_row(
    engine: Engine, store: SmartAccountStore, two_partners: tuple[Partner, Partner]
) -> None:
    partner_ids = [p.id for p in two_partners]
    for round_ in range(3):
        agent = f"bot-{round_}"
        barrier = threading.Barrier(THREADS)

        def record(
            i: int, agent: str = agent, barrier: threading.Barrier = barrier
        ) -> SmartAccount:
            account = _account(partner_ids[i % 2], agent=agent)
            barrier.wait()
            return store.record(account)

        with ThreadPoolExecutor(THREADS) as pool:
            results = list(pool.map(record, range(THREADS)))
        assert len(set(results)) == 1, results
        assert results[0].partner_id in partner_ids
        assert store.get(8453, OWNER, agent) == results[0]
    assert _count(engine) == 3
