"""Deposits count only with their confirmations: one that a reorganisation undoes before
then is never credited (anvil's snapshot and revert stand in for the reorganisation)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.devnet import Devnet
from support.devnet_service import OPERATOR_KEY, SAFE_ACCOUNTS, devnet_env, partner
from support.service import RunningService, running_service
from yieldagent.devnet import actions
from yieldagent.devnet.anvil import rpc
from yieldagent.storage.db import create_db_engine
from yieldagent.storage.wallets import WalletStore

pytestmark = pytest.mark.evm

EOA = "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc"
CONFIRMATIONS = 3
UNIT = 10**6


@pytest.fixture(scope="module")
def confirming(
    devnet: Devnet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningService]:
    """The service on the devnet, counting a deposit after three blocks."""
    directory = tmp_path_factory.mktemp("confirming")
    env = devnet_env(devnet, directory, OPERATOR_KEY, YIELDAGENT_CONFIRMATIONS=str(CONFIRMATIONS))
    with running_service(f"sqlite:///{directory / 'test.db'}", directory, env) as service:
        yield service


def test_a_deposit_undone_before_its_confirmations_is_never_credited(
    confirming: RunningService, devnet: Devnet
) -> None:
    api = confirming
    engine = create_db_engine(api.database_url)
    keyed = partner(engine, "confirming")
    created = api.request("POST", SAFE_ACCOUNTS, {"eoa": EOA, "chain": 8453}, keyed)
    wallet = created.json()["smartAccount"]

    def activate(tx_hash: str) -> tuple[int, dict[str, object]]:
        body = {
            "wallet": wallet,
            "eoa": EOA,
            "initial_token": devnet.usdc,
            "selected_protocols": ["aave"],
            "tx_hash": tx_hash,
        }
        answer = api.request("POST", "/api/v1/8453/wallets", body, keyed)
        return answer.status, answer.json()

    # A deposit in the newest block waits for its confirmations: 409 with Retry-After.
    before = rpc(devnet.url, "evm_snapshot")
    doomed = actions.deposit(devnet.url, devnet.usdc, EOA, wallet, 1_000 * UNIT)
    status, body = activate(doomed["tx_hash"])
    assert status == 409, body
    assert "confirmation" in str(body["detail"])

    # A reorganisation takes it away; the chain grows past where it was.
    assert rpc(devnet.url, "evm_revert", [before]) is True
    rpc(devnet.url, "anvil_mine", [hex(CONFIRMATIONS + 2)])
    status, body = activate(doomed["tx_hash"])
    assert status == 400, body  # no such transaction any more
    assert WalletStore(engine).get(8453, wallet) is None

    # A deposit that gets its confirmations is credited once.
    kept = actions.deposit(devnet.url, devnet.usdc, EOA, wallet, 700 * UNIT)
    rpc(devnet.url, "anvil_mine", [hex(CONFIRMATIONS - 1)])
    status, body = activate(kept["tx_hash"])
    assert status == 201, body
    record = api.request("GET", f"/api/v1/8453/wallets/{wallet}").json()
    assert [d["amount"] for d in record["deposits"]] == [700 * UNIT]
    assert doomed["tx_hash"] not in str(record)
    engine.dispose()
