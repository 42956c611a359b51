"""Idempotency keys over REST, through the real Envoy in front of the real service.

This module runs a service of its own, with a short wait bound
(``YIELDAGENT_IDEMPOTENCY_WAIT_SECONDS``), so that a retry's 409 comes quickly. Another
replica is played by writing to the key store directly.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from eth_utils.address import to_checksum_address
from sqlalchemy import Engine

from support.databases import BACKENDS, temporary_database
from support.funded import Funded
from support.service import Response, RunningService, running_service
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.servicers.idempotency import fingerprint
from yieldagent.storage.db import create_db_engine
from yieldagent.storage.idempotency import IdempotencyStore
from yieldagent.storage.simulation import SimulationStore
from yieldagent.storage.smart_accounts import SmartAccountStore
from yieldagent.v1 import smart_accounts_pb2

WAIT_SECONDS = 3
ACCOUNTS = "/api/v1/proxy/zerodev/smart-accounts"
CREATE = "/yieldagent.v1.SmartAccountService/CreateSmartAccount"
REPLAYED = "idempotent-replayed"
_eoas = itertools.count(1)


def _account(**fields: Any) -> dict[str, Any]:
    """A smart-account request for an EOA no other test uses."""
    eoa = to_checksum_address(f"0x{0x1DE4 << 128 | next(_eoas):040x}")
    return {"eoa": eoa, "chain": 8453, **fields}


@pytest.fixture(scope="module", params=BACKENDS)
def api(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningService]:
    """This module's service, reached through its REST edge."""
    directory = tmp_path_factory.mktemp(f"idempotency-{request.param}")
    settings = {"YIELDAGENT_IDEMPOTENCY_WAIT_SECONDS": str(WAIT_SECONDS)}
    with (
        temporary_database(request.param, directory) as url,
        running_service(url, directory, settings) as service,
    ):
        yield service


@pytest.fixture(scope="module")
def api_engine(api: RunningService) -> Iterator[Engine]:
    engine = create_db_engine(api.database_url)
    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def world(api_engine: Engine) -> SimulatedMarket:
    market = SimulatedMarket(SimulationStore(api_engine), load_catalog(), 7, speed=0.0)
    market.start(set_speed=False)
    return market


@pytest.fixture
def keys(api_engine: Engine) -> IdempotencyStore:
    return IdempotencyStore(api_engine)


def _partner_id(api_engine: Engine, headers: dict[str, str]) -> int:
    from yieldagent.storage.partners import PartnerStore

    credentials = PartnerStore(api_engine).credentials(headers["X-Partner-Name"])
    assert credentials is not None and credentials.partner.id is not None
    return credentials.partner.id


def _with_key(headers: dict[str, str], key: str) -> dict[str, str]:
    return {**headers, "Idempotency-Key": key}


def _wallet_url(funded: Funded, suffix: str = "") -> str:
    return f"/api/v1/8453/wallets/{funded.wallet}{suffix}"


def _wallet(api: RunningService, funded: Funded) -> dict[str, Any]:
    response = api.request("GET", _wallet_url(funded))
    assert response.status == 200, response.body
    body: dict[str, Any] = response.json()
    return body


def _same_answer(first: Response, again: Response) -> None:
    """The same status and body; an error body names each request's own id."""
    if first.status < 400:
        assert (again.status, again.body) == (first.status, first.body)
    else:
        assert (again.status, again.error()) == (first.status, first.error())
    assert REPLAYED not in first.headers
    assert again.headers.get(REPLAYED) == "true"


def test_an_activation_is_replayed_not_repeated(api: RunningService, fund: Any) -> None:
    funded = fund()
    headers = _with_key(funded.headers, "activate-1")
    first = api.request("POST", "/api/v1/8453/wallets", funded.activation(), headers)
    assert first.status == 201, first.body
    again = api.request("POST", "/api/v1/8453/wallets", funded.activation(), headers)
    _same_answer(first, again)
    assert len(_wallet(api, funded)["deposits"]) == 1
    # Without a key nothing changes: a second activation executes, and is refused.
    unkeyed = api.request("POST", "/api/v1/8453/wallets", funded.activation(), funded.headers)
    assert unkeyed.status == 409 and REPLAYED not in unkeyed.headers


def test_a_smart_account_creation_is_replayed(api: RunningService, keyed: dict[str, str]) -> None:
    body = _account()
    first = api.request("POST", ACCOUNTS, body, _with_key(keyed, "account-1"))
    assert first.status == 200, first.body
    _same_answer(first, api.request("POST", ACCOUNTS, body, _with_key(keyed, "account-1")))


def test_a_withdrawal_is_replayed_not_repeated(api: RunningService, activated: Funded) -> None:
    headers = _with_key(activated.headers, "withdraw-1")
    url = _wallet_url(activated, ":withdraw")
    first = api.request("POST", url, {"amount": 100 * 10**6}, headers)
    assert first.status == 200, first.body
    _same_answer(first, api.request("POST", url, {"amount": 100 * 10**6}, headers))
    assert len(_wallet(api, activated)["withdraws"]) == 1


def test_the_same_key_with_another_request_is_422(api: RunningService, activated: Funded) -> None:
    headers = _with_key(activated.headers, "withdraw-2")
    url = _wallet_url(activated, ":withdraw")
    assert api.request("POST", url, {"amount": 10 * 10**6}, headers).status == 200
    for method, path, body in [
        ("POST", url, {"amount": 11 * 10**6}),
        ("POST", _wallet_url(activated, ":run"), None),
    ]:
        refused = api.request(method, path, body, headers)
        assert refused.status == 422
        assert refused.error() == {
            "detail": [
                {
                    "loc": ["header", "Idempotency-Key"],
                    "msg": "This key was already used with a different request",
                    "type": "idempotency_key_reused",
                }
            ]
        }
    assert len(_wallet(api, activated)["withdraws"]) == 1


def test_concurrent_duplicates_execute_once(api: RunningService, fund: Any) -> None:
    funded = fund()
    headers = _with_key(funded.headers, "activate-concurrently")
    start = threading.Barrier(6)

    def activate(_: int) -> Response:
        start.wait()
        return api.request("POST", "/api/v1/8453/wallets", funded.activation(), headers)

    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(activate, range(6)))
    assert {(a.status, a.body) for a in answers} == {(answers[0].status, answers[0].body)}
    assert answers[0].status == 201
    assert sum(a.headers.get(REPLAYED) == "true" for a in answers) == 5
    assert len(_wallet(api, funded)["deposits"]) == 1


def _held_by_another_replica(
    keys: IdempotencyStore, partner_id: int, key: str, body: dict[str, Any], lease: float
) -> str:
    """Marks ``key`` as executing on another replica; returns that replica's owner id."""
    request = smart_accounts_pb2.CreateSmartAccountRequest(**body)
    assert (
        keys.claim(partner_id, key, CREATE, fingerprint(CREATE, request), "replica-b", lease)
        is None
    )
    return "replica-b"


def test_a_retry_waits_for_the_call_in_flight_then_replays(
    api: RunningService, api_engine: Engine, keyed: dict[str, str], keys: IdempotencyStore
) -> None:
    body = _account()
    partner_id = _partner_id(api_engine, keyed)
    owner = _held_by_another_replica(keys, partner_id, "in-flight", body, 30)
    answer = smart_accounts_pb2.CreateSmartAccountResponse(
        smartAccount="0x" + "ab" * 20, backendWallet="0x" + "cd" * 20
    )

    def finish_elsewhere() -> None:
        time.sleep(0.5)
        keys.complete(partner_id, "in-flight", owner, answer.SerializeToString())

    finisher = threading.Thread(target=finish_elsewhere)
    started = time.monotonic()
    finisher.start()
    retry = api.request("POST", ACCOUNTS, body, _with_key(keyed, "in-flight"))
    finisher.join()
    assert time.monotonic() - started >= 0.5
    assert retry.status == 200 and retry.headers.get(REPLAYED) == "true"
    assert retry.json() == {"smartAccount": "0x" + "ab" * 20, "backendWallet": "0x" + "cd" * 20}


def test_past_the_wait_bound_a_retry_is_409_with_retry_after(
    api: RunningService, api_engine: Engine, keyed: dict[str, str], keys: IdempotencyStore
) -> None:
    body = _account()
    _held_by_another_replica(keys, _partner_id(api_engine, keyed), "stuck", body, 60)
    started = time.monotonic()
    refused = api.request("POST", ACCOUNTS, body, _with_key(keyed, "stuck"))
    assert time.monotonic() - started >= WAIT_SECONDS
    assert refused.status == 409
    assert refused.error() == {
        "detail": "A request with this Idempotency-Key is still in progress; retry later"
    }
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert not [name for name in refused.headers if name.startswith(("grpc-", "x-yieldagent"))]


def test_a_crashed_attempt_is_taken_over(
    api: RunningService, api_engine: Engine, keyed: dict[str, str], keys: IdempotencyStore
) -> None:
    body = _account()
    _held_by_another_replica(keys, _partner_id(api_engine, keyed), "crashed", body, -1)
    taken_over = api.request("POST", ACCOUNTS, body, _with_key(keyed, "crashed"))
    assert taken_over.status == 200 and REPLAYED not in taken_over.headers
    assert taken_over.json()["smartAccount"].startswith("0x")
    stored = keys.get(_partner_id(api_engine, keyed), "crashed")
    assert stored is not None and stored.owner != "replica-b" and stored.response is not None


def test_a_refusal_is_replayed(api: RunningService, activated: Funded) -> None:
    headers = _with_key(activated.headers, "too-much")
    url = _wallet_url(activated, ":withdraw")
    first = api.request("POST", url, {"amount": 10**15}, headers)
    assert first.status == 400 and "exceeds the withdrawable balance" in first.json()["detail"]
    _same_answer(first, api.request("POST", url, {"amount": 10**15}, headers))


def test_a_server_error_is_not_kept(
    api: RunningService,
    api_engine: Engine,
    keyed: dict[str, str],
    keys: IdempotencyStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    record = SmartAccountStore.record
    failures = [RuntimeError("the database went away")]

    def flaky(self: SmartAccountStore, account: Any) -> Any:
        if failures:
            raise failures.pop()
        return record(self, account)

    monkeypatch.setattr(SmartAccountStore, "record", flaky)
    body = _account()
    headers = _with_key(keyed, "flaky")
    failed = api.request("POST", ACCOUNTS, body, headers)
    assert failed.status == 500 and failed.error() == {"detail": "Internal server error"}
    assert keys.get(_partner_id(api_engine, keyed), "flaky") is None
    retried = api.request("POST", ACCOUNTS, body, headers)
    assert retried.status == 200 and REPLAYED not in retried.headers


def test_keys_of_two_partners_do_not_collide(api: RunningService, make_partner: Any) -> None:
    first, second = make_partner(), make_partner()
    mine = api.request("POST", ACCOUNTS, _account(), _with_key(first, "k"))
    theirs = api.request("POST", ACCOUNTS, _account(), _with_key(second, "k"))
    assert mine.status == theirs.status == 200
    assert REPLAYED not in theirs.headers
    assert mine.json()["smartAccount"] != theirs.json()["smartAccount"]


@pytest.mark.parametrize("key", ["", "k" * 256, "clé"], ids=["empty", "too long", "not ascii"])
def test_a_malformed_key_is_422(api: RunningService, keyed: dict[str, str], key: str) -> None:
    refused = api.request("POST", ACCOUNTS, _account(), _with_key(keyed, key))
    assert refused.status == 422
    [item] = refused.json()["detail"]
    assert item["loc"] == ["header", "Idempotency-Key"]
    assert item["type"] == "value_error.idempotency_key"
