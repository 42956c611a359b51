"""A partner's whole REST flow reaches its webhook: the real service (Envoy, gRPC server,
worker, delivery job) posts to a receiver on 127.0.0.1 that first fails; the service is
stopped with deliveries still owed, and a new one on the same database delivers every
event, in order, signed with the secret the CLI printed."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from support.funded import USDC
from support.service import RunningService, running_service
from support.webhook_receiver import Receiver
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.cli import main
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.events import EventStore
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.simulation import SimulationStore
from yieldagent.storage.wallets import WalletStore

pytestmark = pytest.mark.rest

EOA = "0x00000000000000000000000000000000000E0E0E"
FAST = {
    "YIELDAGENT_WEBHOOK_INTERVAL_SECONDS": "0.1",
    "YIELDAGENT_WEBHOOK_MAX_BACKOFF_SECONDS": "0.2",
    "YIELDAGENT_WEBHOOK_TIMEOUT_SECONDS": "2",
    "YIELDAGENT_WEBHOOK_ALLOW_LOOPBACK": "1",  # the receiver runs on 127.0.0.1
}


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main(list(argv)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def eventually(check: Callable[[], Any], timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def flow(api: RunningService, market: SimulatedMarket, headers: dict[str, str]) -> str:
    """Smart account, deposit, activation, withdrawal, deactivation: all through REST."""
    created = api.request(
        "POST", "/api/v1/proxy/zerodev/smart-accounts", {"eoa": EOA, "chain": 8453}, headers
    )
    assert created.status == 200, created.body
    wallet: str = created.json()["smartAccount"]
    deposit = market.deposit_from(8453, USDC, EOA, wallet, 800 * 10**6)
    body = {
        "wallet": wallet,
        "eoa": EOA,
        "initial_token": USDC,
        "selected_protocols": ["aave", "moonwell"],
        "tx_hash": deposit.tx_hash,
    }
    for method, path, payload, status in [
        ("POST", "/api/v1/8453/wallets", body, 201),
        ("POST", f"/api/v1/8453/wallets/{wallet}:withdraw", {"amount": 100 * 10**6}, 200),
        ("POST", f"/api/v1/8453/wallets/{wallet}:deactivate", None, 200),
    ]:
        response = api.request(method, path, payload, headers)
        assert response.status == status, response.body
    return wallet


def test_a_rest_flow_arrives_at_the_webhook_in_order_across_a_restart(
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    engine: Engine = create_db_engine(database_url)
    migrate(engine)
    monkeypatch.setenv("YIELDAGENT_DATABASE_URL", database_url)
    monkeypatch.setenv("YIELDAGENT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("YIELDAGENT_WEBHOOK_ALLOW_LOOPBACK", "1")
    _, key = PartnerStore(engine).create("hooked", PERMISSIONS)
    headers = {"X-Partner-Name": "hooked", "X-Partner-API-Key": key}
    receiver = Receiver().start()
    receiver.script.extend([500] * 10_000)  # failing until the restart
    hook = cli(capsys, "partner", "webhook", "hooked", "--url", receiver.url)
    assert set(hook) == {"name", "url", "secret"} and hook["url"] == receiver.url
    try:
        with running_service(database_url, tmp_path, FAST) as api:
            market = SimulatedMarket(SimulationStore(engine), load_catalog(), 7, speed=0.0)
            market.start(set_speed=False)
            address = flow(api, market, headers)
            retried = eventually(
                lambda: [
                    d
                    for d in cli(capsys, "partner", "deliveries", "hooked")["deliveries"]
                    if d["attempt"] >= 2
                ]
            )
            assert retried and all(d["status_code"] == 500 for d in retried)
        owed = cli(capsys, "partner", "deliveries", "hooked", "--limit", "1")
        assert owed["pending"] == 5 and len(owed["deliveries"]) == 1
        receiver.script.clear()

        with running_service(database_url, tmp_path, FAST):
            accepted = receiver.wait_for(5)

        wallet = WalletStore(engine).get(8453, address)
        assert wallet is not None
        stored = [event.body() for event in EventStore(engine).after(wallet.id, 0, 100)]
        assert [r.json() for r in accepted] == stored
        assert [body["type"] for body in stored] == [
            "deposit_credited",
            "activated",
            "withdrawn",
            "withdrawn",
            "deactivated",
        ]
        assert all(r.signed_by(hook["secret"], time.time()) for r in accepted)
        assert all(r.json()["id"] > 0 for r in receiver.received)  # failed posts were real
        log = cli(capsys, "partner", "deliveries", "hooked")
        assert log["pending"] == 0
        assert all(entry["delivered_at"] for entry in log["deliveries"])
        assert log["deliveries"][-1]["attempt"] >= 2  # the first event was retried
    finally:
        receiver.stop()
        engine.dispose()


def test_the_webhook_command_refuses_bad_input(
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("YIELDAGENT_DATABASE_URL", database_url)
    monkeypatch.setenv("YIELDAGENT_DATA_DIR", str(tmp_path))
    assert main(["partner", "webhook", "nobody", "--url", "https://example.com/h"]) == 1
    assert "No partner named" in capsys.readouterr().err
    assert main(["partner", "webhook", "nobody", "--url", "ftp://example.com/h"]) == 1
    assert "http or https" in capsys.readouterr().err
    assert main(["partner", "deliveries", "nobody", "--limit", "0"]) == 1
    assert "from 1 to 1000" in capsys.readouterr().err
