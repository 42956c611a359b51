"""The idempotency key store: who executes a keyed call, what it answered, for how long.

Runs on SQLite and, when configured, PostgreSQL. Time is a settable clock.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine

from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.domain.ports.credentials import Partner
from yieldagent.domain.ports.storage import COMPLETED, IN_PROGRESS, KeyRecord, StoredError
from yieldagent.storage.idempotency import IdempotencyStore
from yieldagent.storage.partners import PartnerStore

T0 = 1_800_000_000.0
DAY = 86_400.0
METHOD = "/yieldagent.v1.WalletService/Withdraw"
OTHER_METHOD = "/yieldagent.v1.WalletService/TopUp"
PRINT = "a" * 64
OTHER_PRINT = "b" * 64
REFUSAL = StoredError(9, "Agent not active", b"\x08\x09", 409, '{"detail":"Agent not active"}')


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(engine: Engine, clock: Clock) -> IdempotencyStore:
    return IdempotencyStore(engine, ttl_seconds=DAY, clock=clock)


@pytest.fixture
def acme(partner: tuple[Partner, str]) -> int:
    assert partner[0].id is not None
    return partner[0].id


def test_the_first_claim_holds_the_key_and_the_next_reads_it(
    store: IdempotencyStore, acme: int
) -> None:
    assert store.claim(acme, "k1", METHOD, PRINT, "first", 20) is None
    held = store.claim(acme, "k1", METHOD, PRINT, "second", 20)
    assert held is not None
    assert (held.state, held.owner, held.lease_until) == (IN_PROGRESS, "first", T0 + 20)
    assert (held.method, held.fingerprint, held.response, held.error) == (
        METHOD,
        PRINT,
        None,
        None,
    )
    assert held.created_at == datetime.fromtimestamp(T0, UTC)


def test_a_completed_key_keeps_its_response(store: IdempotencyStore, acme: int) -> None:
    store.claim(acme, "k1", METHOD, PRINT, "first", 20)
    assert store.complete(acme, "k1", "first", b"\x0a\x03abc")
    stored = store.claim(acme, "k1", METHOD, PRINT, "second", 20)
    assert stored is not None
    assert (stored.state, stored.response, stored.error) == (COMPLETED, b"\x0a\x03abc", None)
    assert store.get(acme, "k1") == stored


def test_an_empty_response_is_a_response(store: IdempotencyStore, acme: int) -> None:
    store.claim(acme, "k1", METHOD, PRINT, "first", 20)
    store.complete(acme, "k1", "first", b"")
    stored = store.get(acme, "k1")
    assert stored is not None and stored.response == b"" and stored.error is None


def test_a_refusal_is_kept_whole(store: IdempotencyStore, acme: int) -> None:
    store.claim(acme, "k1", METHOD, PRINT, "first", 20)
    assert store.fail(acme, "k1", "first", REFUSAL)
    stored = store.get(acme, "k1")
    assert stored is not None
    assert (stored.state, stored.response, stored.error) == (COMPLETED, None, REFUSAL)


def test_a_released_key_is_free_again(store: IdempotencyStore, acme: int) -> None:
    store.claim(acme, "k1", METHOD, PRINT, "first", 20)
    assert store.release(acme, "k1", "first")
    assert store.get(acme, "k1") is None
    assert store.claim(acme, "k1", METHOD, OTHER_PRINT, "second", 20) is None


def test_a_lapsed_lease_is_taken_over_by_the_same_request_only(
    store: IdempotencyStore, acme: int, clock: Clock
) -> None:
    store.claim(acme, "k1", METHOD, PRINT, "dead", 20)
    clock.now += 19
    live = store.claim(acme, "k1", METHOD, PRINT, "retry", 20)
    assert live is not None and live.owner == "dead" and not live.lapsed(clock.now)
    clock.now += 2
    other = store.claim(acme, "k1", METHOD, OTHER_PRINT, "retry", 20)
    assert other is not None and other.owner == "dead" and other.lapsed(clock.now)
    assert store.claim(acme, "k1", OTHER_METHOD, PRINT, "retry", 20) is not None
    assert store.claim(acme, "k1", METHOD, PRINT, "retry", 20) is None
    taken = store.get(acme, "k1")
    assert taken is not None
    assert (taken.owner, taken.lease_until) == ("retry", clock.now + 20)
    assert taken.created_at == datetime.fromtimestamp(T0, UTC)  # still counts from first use


def test_the_displaced_attempt_changes_nothing(
    store: IdempotencyStore, acme: int, clock: Clock
) -> None:
    store.claim(acme, "k1", METHOD, PRINT, "slow", 20)
    clock.now += 21
    store.claim(acme, "k1", METHOD, PRINT, "retry", 20)
    assert not store.renew(acme, "k1", "slow", 20)
    assert not store.complete(acme, "k1", "slow", b"late")
    assert not store.fail(acme, "k1", "slow", REFUSAL)
    assert not store.release(acme, "k1", "slow")
    held = store.get(acme, "k1")
    assert held is not None and (held.owner, held.state, held.response) == (
        "retry",
        IN_PROGRESS,
        None,
    )


def test_renewing_keeps_the_key(store: IdempotencyStore, acme: int, clock: Clock) -> None:
    store.claim(acme, "k1", METHOD, PRINT, "owner", 20)
    clock.now += 15
    assert store.renew(acme, "k1", "owner", 20)
    clock.now += 15
    assert store.claim(acme, "k1", METHOD, PRINT, "retry", 20) is not None
    held = store.get(acme, "k1")
    assert held is not None and held.owner == "owner"


def test_a_completed_key_is_never_taken_over(
    store: IdempotencyStore, acme: int, clock: Clock
) -> None:
    store.claim(acme, "k1", METHOD, PRINT, "first", 20)
    store.complete(acme, "k1", "first", b"done")
    clock.now += DAY - 1
    stored = store.claim(acme, "k1", METHOD, PRINT, "retry", 20)
    assert stored is not None and stored.response == b"done"
    assert not store.complete(acme, "k1", "first", b"again")


def test_keys_are_per_partner(store: IdempotencyStore, acme: int, partners: PartnerStore) -> None:
    other, _ = partners.create("globex", PERMISSIONS)
    assert other.id is not None
    assert store.claim(acme, "shared", METHOD, PRINT, "acme", 20) is None
    assert store.claim(other.id, "shared", METHOD, OTHER_PRINT, "globex", 20) is None
    store.complete(acme, "shared", "acme", b"acme")
    store.complete(other.id, "shared", "globex", b"globex")
    mine, theirs = store.get(acme, "shared"), store.get(other.id, "shared")
    assert mine is not None and theirs is not None
    assert (mine.response, theirs.response) == (b"acme", b"globex")


def test_a_key_past_its_ttl_is_free_for_any_request(
    store: IdempotencyStore, acme: int, clock: Clock
) -> None:
    store.claim(acme, "k1", METHOD, PRINT, "first", 20)
    store.fail(acme, "k1", "first", REFUSAL)
    clock.now += DAY + 1
    assert store.claim(acme, "k1", OTHER_METHOD, OTHER_PRINT, "later", 20) is None
    fresh = store.get(acme, "k1")
    assert fresh is not None
    assert (fresh.method, fresh.fingerprint, fresh.state, fresh.error, fresh.response) == (
        OTHER_METHOD,
        OTHER_PRINT,
        IN_PROGRESS,
        None,
        None,
    )
    assert fresh.created_at == datetime.fromtimestamp(clock.now, UTC)


def test_purge_deletes_expired_keys_nobody_executes(
    store: IdempotencyStore, acme: int, clock: Clock
) -> None:
    store.claim(acme, "done", METHOD, PRINT, "a", 20)
    store.complete(acme, "done", "a", b"")
    store.claim(acme, "dead", METHOD, PRINT, "b", 20)
    store.claim(acme, "running", METHOD, PRINT, "c", 2 * DAY)
    clock.now += DAY / 2
    store.claim(acme, "recent", METHOD, PRINT, "d", 20)
    store.complete(acme, "recent", "d", b"")
    clock.now += DAY / 2 + 1
    assert store.purge() == 2
    assert store.get(acme, "done") is None and store.get(acme, "dead") is None
    assert store.get(acme, "running") is not None and store.get(acme, "recent") is not None


def test_claims_purge_expired_keys_now_and_then(
    store: IdempotencyStore, acme: int, clock: Clock
) -> None:
    store.claim(acme, "old", METHOD, PRINT, "a", 20)
    store.complete(acme, "old", "a", b"")
    clock.now += DAY + 1
    store.claim(acme, "new", METHOD, PRINT, "b", 20)
    assert store.get(acme, "old") is None


@pytest.mark.parametrize("lapsed", [False, True], ids=["new key", "lapsed lease"])
def test_concurrent_claims_let_exactly_one_attempt_execute(
    engine: Engine, acme: int, lapsed: bool
) -> None:
    """Threads with connections of their own race for one key: one wins, the rest read."""
    store = IdempotencyStore(engine, ttl_seconds=DAY)
    if lapsed:
        store.claim(acme, "race", METHOD, PRINT, "dead", -1)
    attempts = 8
    start = threading.Barrier(attempts)
    outcomes: dict[str, KeyRecord | None] = {}

    def attempt(owner: str) -> None:
        start.wait()
        outcomes[owner] = store.claim(acme, "race", METHOD, PRINT, owner, 20)

    threads = [threading.Thread(target=attempt, args=(f"o{i}",)) for i in range(attempts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    winners = [owner for owner, outcome in outcomes.items() if outcome is None]
    assert len(outcomes) == attempts and len(winners) == 1
    held = store.get(acme, "race")
    assert held is not None and held.owner == winners[0]
    assert all(o is None or o.owner == winners[0] for o in outcomes.values())
