"""A leaked partner key against the money limits, through the real edge: withdrawals below
the minimum are refused and move nothing, and the eleventh money call on a wallet in a
minute is refused with ``Retry-After``, whichever of the two serving processes (replicas on
one database) answers it.

One service of its own per backend, with two serving processes behind its Envoy and the
limits at their defaults (10 USD, 10 calls a minute).
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator

import pytest
from eth_utils.address import to_checksum_address
from sqlalchemy import Engine

from support.books import assert_books_balance
from support.databases import BACKENDS, temporary_database
from support.funded import USDC, Funded
from support.service import RunningService, running_service
from support.wallet_setup import FEE
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.storage.db import create_db_engine
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.simulation import SimulationStore
from yieldagent.storage.wallets import WalletStore

LIMITS = {
    "YIELDAGENT_WALLET_MONEY_CALLS_PER_MINUTE": "10",
    "YIELDAGENT_MIN_WITHDRAW_USD": "10",
    "YIELDAGENT_GRPC_PROCESSES": "2",
    "YIELDAGENT_FEE_COLLECTOR": FEE,
}
MINIMUM = (
    "is below the minimum withdrawal of 10 USD (10000000 in USDC's smallest unit); a "
    "smaller balance leaves with the wallet's deactivation"
)
_names = itertools.count()
_eoas = itertools.count(0xB0B0)


@pytest.fixture(scope="module", params=BACKENDS)
def limited(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningService]:
    directory = tmp_path_factory.mktemp(f"money-limits-{request.param}")
    with (
        temporary_database(request.param, directory) as url,
        running_service(url, directory, LIMITS) as service,
    ):
        yield service


@pytest.fixture(scope="module")
def engine(limited: RunningService) -> Iterator[Engine]:
    engine = create_db_engine(limited.database_url)
    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def market(engine: Engine) -> SimulatedMarket:
    market = SimulatedMarket(SimulationStore(engine), load_catalog(), 7, speed=0.0)
    market.start(set_speed=False)
    return market


def _activated(service: RunningService, engine: Engine, market: SimulatedMarket) -> Funded:
    """A fresh partner's wallet with 1,000 USDC, activated: its first money call."""
    name = f"leaked-{next(_names)}"
    _, key = PartnerStore(engine).create(name, PERMISSIONS)
    headers = {"X-Partner-Name": name, "X-Partner-API-Key": key}
    eoa = to_checksum_address(f"0x{next(_eoas):040x}")
    created = service.request(
        "POST", "/api/v1/proxy/zerodev/smart-accounts", {"eoa": eoa, "chain": 8453}, headers
    )
    assert created.status == 200, created.body
    wallet = created.json()["smartAccount"]
    transfer = market.deposit_from(8453, USDC, eoa, wallet, 1_000 * 10**6)
    funded = Funded(eoa, wallet, transfer.tx_hash, headers)
    answer = service.request("POST", "/api/v1/8453/wallets", funded.activation(), headers)
    assert answer.status == 201, answer.body
    return funded


def test_tiny_withdrawals_are_refused_and_move_nothing(
    limited: RunningService, engine: Engine, market: SimulatedMarket
) -> None:
    funded = _activated(limited, engine, market)
    path = f"/api/v1/8453/wallets/{funded.wallet}"
    before = limited.request("GET", path).json()
    eoa_before = market.balance(8453, USDC, funded.eoa)
    mined_before = market.history(8453, funded.wallet, 0)

    statuses = []
    for amount in (1, 1, 2, 999_999, 9_999_999, 1, 1, 1, 1, 1, 1, 1):
        answer = limited.request(
            "POST", f"{path}:withdraw", {"amount": str(amount)}, funded.headers
        )
        statuses.append(answer.status)
        if answer.status == 400:
            assert answer.json()["detail"] == f"Amount {amount} {MINIMUM}"
        else:  # the wallet's money calls for the minute are spent: refused before anything
            assert answer.status == 429, answer.body
            assert int(answer.headers["retry-after"]) >= 1
    # The activation was the first money call of the minute, the nine tiny ones the rest.
    assert statuses == [400] * 9 + [429] * 3

    after = limited.request("GET", path).json()
    assert after["withdraws"] == before["withdraws"] == []
    assert market.balance(8453, USDC, funded.eoa) == eoa_before
    assert market.history(8453, funded.wallet, 0) == mined_before  # no gas spent


def test_the_eleventh_money_call_in_a_minute_is_refused(
    limited: RunningService, engine: Engine, market: SimulatedMarket
) -> None:
    funded = _activated(limited, engine, market)  # the first money call
    path = f"/api/v1/8453/wallets/{funded.wallet}"
    first_key = {**funded.headers, "Idempotency-Key": uuid.uuid4().hex}
    withdrawn = limited.request("POST", f"{path}:withdraw", {"amount": str(10 * 10**6)}, first_key)
    assert withdrawn.status == 200, withdrawn.body  # exactly the minimum passes
    for _ in range(8):
        ran = limited.request(
            "POST", f"{path}:run", headers={**funded.headers, "Idempotency-Key": uuid.uuid4().hex}
        )
        assert ran.status == 200, ran.body

    refused = limited.request(
        "POST", f"{path}:run", headers={**funded.headers, "Idempotency-Key": uuid.uuid4().hex}
    )
    assert refused.status == 429, refused.body
    assert refused.json()["detail"] == (
        f"Too many money calls on wallet {funded.wallet}: at most 10 a minute; retry later"
    )
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    others = (f"{path}:top-up?tx_hash=0x{'0' * 64}", f"{path}:claim-rewards", f"{path}:deactivate")
    for call in others:
        assert limited.request("POST", call, headers=funded.headers).status == 429

    # A client that lost the first withdrawal's reply gets it again: a replay moves
    # nothing, so it is not counted.
    replayed = limited.request("POST", f"{path}:withdraw", {"amount": str(10 * 10**6)}, first_key)
    assert replayed.status == 200
    assert replayed.json() == withdrawn.json()
    assert replayed.headers.get("idempotent-replayed") == "true"

    wallet = WalletStore(engine).get(8453, funded.wallet)
    assert wallet is not None
    assert_books_balance(engine, market, [wallet])
