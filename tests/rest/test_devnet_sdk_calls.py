"""The production TypeScript client's calls through Envoy on the devnet: a Safe account
activated into the real Aave v3 and Morpho contracts, then every read and update the client
makes, each answering the shape its types declare from what the web3 adapter read."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, NamedTuple

import pytest

from support.devnet import Devnet
from support.devnet_service import OPERATOR_KEY, SAFE_ACCOUNTS, devnet_env, partner
from support.sdk_client import (
    Client,
    check_apr_tokens,
    check_config,
    check_earnings,
    check_execution,
    check_fee,
    check_history,
    check_logs,
    check_pagination,
    check_performance,
    check_rewards,
    check_supply,
)
from support.service import running_service
from yieldagent.devnet.actions import advance, deposit
from yieldagent.devnet.anvil import rpc
from yieldagent.storage.db import create_db_engine

pytestmark = pytest.mark.evm

CHAIN = 8453
USDC_UNIT = 10**6
AMOUNT = 5_000 * USDC_UNIT
PROTOCOLS = ["aave", "morpho_gauntlet_usdc_prime"]
OWNER = 5
"""The anvil account that owns the Safe account: no other devnet test's owner, and not the
operator (account 4), which the module refuses as an owner."""


class Activated(NamedTuple):
    """The wallet activated on the devnet, and the client of its partner."""

    client: Client
    wallet: str
    eoa: str
    tx_hash: str
    token: str


@pytest.fixture(scope="module")
def activated(devnet: Devnet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Activated]:
    """The service with chain 8453 on the devnet, and one Safe account activated there with
    5,000 USDC into Aave and Morpho, a day of interest later."""
    directory = tmp_path_factory.mktemp("devnet-sdk")
    # The worker ticks every second: it books the wallet's value as the chain's time moves.
    env = devnet_env(devnet, directory, OPERATOR_KEY, YIELDAGENT_WORKER_INTERVAL_SECONDS="1")
    # The session's devnet goes back to its state and time before the day moved here, so
    # that the tests after these read the pools as deployed.
    before = rpc(devnet.url, "evm_snapshot")
    with running_service(f"sqlite:///{directory / 'test.db'}", directory, env) as api:
        engine = create_db_engine(api.database_url)
        headers = partner(engine, "sdk-partner")
        engine.dispose()
        eoa = devnet.d.accounts[OWNER]
        created = api.request("POST", SAFE_ACCOUNTS, {"eoa": eoa, "chain": CHAIN}, headers)
        assert created.status == 200, created.body
        wallet = created.json()["smartAccount"]
        sent = deposit(devnet.url, devnet.usdc, eoa, wallet, AMOUNT)
        body = {
            "wallet": wallet,
            "eoa": eoa,
            "initial_token": devnet.usdc,
            "selected_protocols": PROTOCOLS,
            "tx_hash": sent["tx_hash"],
        }
        answer = api.request("POST", f"/api/v1/{CHAIN}/wallets", body, headers)
        assert answer.status == 201, answer.body
        advance(devnet.url, 86_400)
        yield Activated(Client(api, headers, CHAIN), wallet, eoa, sent["tx_hash"], devnet.usdc)
    assert rpc(devnet.url, "evm_revert", [before]) is True


def test_config_and_supply_name_the_devnets_token(activated: Activated) -> None:
    client, token = activated.client, activated.token
    check_config(client.ok("config"), CHAIN, token)
    protocols = check_supply(client.ok(f"{CHAIN}/{token}/protocols/supply"), token, 6)
    assert set(PROTOCOLS) <= set(protocols)
    missing = client.get(f"{CHAIN}/0x{'00' * 20}/protocols/supply")
    assert missing.status == 404, missing.body


def _booked_earnings(client: Client, wallet: str) -> Any:
    """The wallet's earnings by day, once the worker booked the day of interest."""
    deadline = time.monotonic() + 30
    while True:
        earnings = client.ok(client.wallet(wallet, "earnings"), {"interval": "day"})
        if earnings["total_yield_amount"] > 0 or time.monotonic() > deadline:
            assert earnings["total_yield_amount"] > 0, earnings
            return earnings
        time.sleep(0.2)


def test_the_wallets_numbers(activated: Activated) -> None:
    client, wallet = activated.client, activated.wallet
    series = check_performance(client.ok(client.wallet(wallet, "performance")))
    now = series[-1]
    assert set(now["portfolio"]) <= set(PROTOCOLS) and now["portfolio"]
    assert now["value"] > AMOUNT / USDC_UNIT  # a day of interest on top
    # What the pools hold is the value, but for the few units rounding leaves idle.
    held = sum(a["value"] for a in now["portfolio"].values())
    assert now["value"] - 10 / USDC_UNIT <= held <= now["value"]
    for allocation in now["portfolio"].values():
        assert allocation["apy_total"] == allocation["apy_base"] + allocation["apy_rewards"]
    dated = client.ok(client.wallet(wallet, "performance"), {"from_date": "2020-01-01T00:00:00Z"})
    check_performance(dated)
    for period in ("all", "day"):
        apr = client.ok(client.wallet(wallet, "apr/tokens"), {"token_price": 1, "period": period})
        check_apr_tokens(apr, 1.0)
    earnings = _booked_earnings(client, wallet)
    check_earnings(earnings)
    # No withdrawal yet: all of it is accrued, and so is the fee due on it.
    assert earnings["total_fee_amount"] == earnings["total_yield_amount"] * 1000 // 10_000
    check_fee(client.ok(client.wallet(wallet, "fee")), 0.1)
    limit = client.ok(client.wallet(wallet, "limit"), {"eoa": activated.eoa})
    assert isinstance(limit["limit"], int | float) and limit["token"] == activated.token


def test_deposits_executions_and_logs(activated: Activated) -> None:
    client, wallet = activated.client, activated.wallet
    [made] = client.ok(client.wallet(wallet, "deposits"))["deposits"]
    assert made["amount"] == AMOUNT and made["token_type"] == activated.token
    assert made["tx_hash"] == activated.tx_hash and isinstance(made["block_number"], int)

    page = client.ok(
        client.wallet(wallet, "executions"), {"page": 1, "limit": 20, "sort": "date_desc"}
    )
    check_pagination(page, 1, 20)
    [execution] = page["executions"]  # the activation's placement
    check_execution(execution)
    assert execution["execution_type"] == "activate" and execution["status"] == "success"
    moves = execution["execution_plan"]["moves"]
    assert moves and {m["protocol"] for m in moves} <= set(PROTOCOLS)
    assert sum(m["amount"] for m in moves if m["action"] == "deposit") <= AMOUNT
    assert execution["transactions"]  # sent on chain through the operator module

    logs = client.ok(
        client.wallet(wallet, f"executions/{execution['id']}/logs"), {"page": 1, "limit": 50}
    )
    assert check_logs(logs, 1, 50)
    wallet_logs = client.ok(client.wallet(wallet, "logs"), {"page": 1, "limit": 20})
    assert "activated" in check_logs(wallet_logs, 1, 20)


def test_rewards_beside_the_staking_setting(activated: Activated) -> None:
    client, wallet = activated.client, activated.wallet
    query = {"page": 1, "limit": 20, "sort": "date_desc"}
    page = client.ok(f"{CHAIN}/rewards/{wallet}", query)
    check_rewards(page, 1, 20)
    assert page["is_staked"] is False


def test_protocols_constraints_and_whitelist(activated: Activated) -> None:
    client, wallet = activated.client, activated.wallet
    protocols = client.ok(client.wallet(wallet, "protocols"))
    catalog = client.ok(f"{CHAIN}/{activated.token}/protocols")["protocols"]
    assert isinstance(protocols, list)
    assert [p["name"] for p in protocols] == PROTOCOLS
    assert all(set(p) == set(catalog[0]) for p in protocols)

    path = client.wallet(wallet, "constraints")
    assert client.ok(path) == []
    rules = [{"kind": "min_protocols", "params": {"min_protocols": 2}}]
    put = client.put(path, {"constraints": rules})
    assert put.status == 204 and put.body == b"", put.body
    current = client.ok(path)
    assert [(c["kind"], c["params"]["min_protocols"]) for c in current] == [("min_protocols", 2)]

    whitelist = client.ok(client.wallet(wallet, "whitelist"))["whitelist"]
    roles = [(entry["role"], entry["protocol"]) for entry in whitelist]
    assert roles[: len(PROTOCOLS)] == [("protocol", name) for name in PROTOCOLS]
    owner = next(entry for entry in whitelist if entry["role"] == "owner")
    assert owner["address"] == activated.eoa


def _points(client: Client, protocol: str) -> list[Any]:
    """The pool's recorded points, once the worker recorded some (it does at start-up)."""
    deadline = time.monotonic() + 30
    while True:
        points = check_history(client.ok(f"{CHAIN}/protocols/{protocol}/history"))
        if points or time.monotonic() > deadline:
            return points
        time.sleep(0.2)


def test_each_pools_history_as_read_from_the_chain(activated: Activated) -> None:
    for protocol in PROTOCOLS:
        points = _points(activated.client, protocol)
        assert points, protocol
        for point in points:
            assert point["apy_base"] > 0 and point["tvl"] > 0, (protocol, point)
            assert 0 < point["utilization"] < 1, (protocol, point)
