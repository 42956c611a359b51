"""The whole partner flow over REST on the devnet: real contracts behind the web3 adapter,
a Safe account deployed through Safe's factory and operated through the operator module,
the user's side driven by the ``yieldagent devnet`` command, and the books checked to the
unit against the chain's own logs and balances. The owner's revocation of the operator (a
Safe transaction signed with the owner's key) blocks the wallet within a worker tick."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from eth_abi.abi import decode
from eth_utils.crypto import keccak

from support.anvil import dev_key
from support.books import assert_books_balance
from support.crash_world import wait_until
from support.devnet import Devnet
from support.devnet_books import devnet_chain_books, positions
from support.devnet_service import OPERATOR_KEY, SAFE_ACCOUNTS, devnet_env, partner, utilization
from support.safe_world import Signer, safe_world
from support.service import RunningService, running_service
from yieldagent.domain.partners.safe_accounts import safe_account_address
from yieldagent.storage.db import create_db_engine
from yieldagent.storage.wallets import WalletStore

pytestmark = pytest.mark.evm

EOA = "0x90F79bf6EB2c4f870365E785982E1f101E93b906"  # anvil's account 3
REVOKER = 7
"""The anvil account whose Safe revokes the operator."""
USDC_UNIT = 10**6
DAY = 86_400
AAVE, MORPHO = "aave", "morpho_gauntlet_usdc_prime"


@pytest.fixture(scope="module")
def on_devnet(devnet: Devnet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningService]:
    """The service with chain 8453 on the devnet (the other chains stay simulated)."""
    directory = tmp_path_factory.mktemp("devnet-service")
    env = devnet_env(devnet, directory, OPERATOR_KEY)
    with running_service(f"sqlite:///{directory / 'test.db'}", directory, env) as service:
        yield service


@pytest.fixture
def ticking(devnet: Devnet, tmp_path: Path) -> Iterator[RunningService]:
    """The service on the devnet with a worker that ticks every second."""
    env = devnet_env(devnet, tmp_path, OPERATOR_KEY, YIELDAGENT_WORKER_INTERVAL_SECONDS="1")
    with running_service(f"sqlite:///{tmp_path / 'test.db'}", tmp_path, env) as service:
        yield service


def _devnet(devnet: Devnet, *args: str) -> dict[str, Any]:
    env = {**os.environ, "YIELDAGENT_RPC_URL_8453": devnet.url}
    done = subprocess.run(
        [sys.executable, "-m", "yieldagent", "devnet", *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _deposit(devnet: Devnet, wallet: str, amount: int) -> dict[str, Any]:
    return _devnet(
        devnet,
        *("deposit", "--chain", "8453", "--token", devnet.usdc, "--from", EOA),
        *("--to", wallet, "--amount", str(amount)),
    )


def _balance(devnet: Devnet, holder: str) -> int:
    erc20 = devnet.w3.eth.contract(
        address=devnet.w3.to_checksum_address(devnet.usdc),
        abi=[
            {
                "name": "balanceOf",
                "type": "function",
                "stateMutability": "view",
                "inputs": [{"name": "a", "type": "address"}],
                "outputs": [{"name": "", "type": "uint256"}],
            }
        ],
    )
    return int(erc20.functions.balanceOf(holder).call())


def test_the_partner_flow_on_the_devnet(
    on_devnet: RunningService, devnet: Devnet, tmp_path: Path
) -> None:
    api = on_devnet
    engine = create_db_engine(api.database_url)
    keyed = partner(engine, "devnet-partner")

    # The catalog names the devnet's contracts.
    tokens = api.request("GET", "/api/v1/8453/tokens").json()
    assert devnet.usdc in json.dumps(tokens)

    # 1. The Safe account, at the address Safe's factory deploys it to; nothing on chain yet.
    created = api.request("POST", SAFE_ACCOUNTS, {"eoa": EOA, "chain": 8453}, keyed)
    assert created.status == 200, created.body
    wallet = created.json()["smartAccount"]
    world = safe_world(devnet, devnet.manifest.extras["fee_collector"])
    assert wallet == safe_account_address(EOA, "yield-agent", world.constants())
    assert devnet.w3.eth.get_code(wallet) == b""

    # 2. The user's deposit, then 3. the activation: funds go to a pool on chain.
    deposit = _deposit(devnet, wallet, 10_000 * USDC_UNIT)
    activation = {
        "wallet": wallet,
        "eoa": EOA,
        "initial_token": devnet.usdc,
        "selected_protocols": [AAVE, MORPHO],
        "tx_hash": deposit["tx_hash"],
    }
    activated = api.request("POST", "/api/v1/8453/wallets", activation, keyed)
    assert activated.status == 201, activated.body
    # The operator deployed the account through the factory, with the module enabled.
    safe = world.safe(wallet)
    assert safe.functions.getOwners().call() == [EOA]
    assert safe.functions.isModuleEnabled(world.module.address).call()
    placed = positions(devnet.w3, devnet.manifest, wallet)
    assert sum(placed.values()) >= 10_000 * USDC_UNIT - 2
    holder = max(placed, key=lambda name: placed[name])
    other = MORPHO if holder == AAVE else AAVE

    # 4. The other pool's rate jumps; an agent run moves the funds there. (Then the
    # borrowers repay to the usual utilization: the pools have cash to pay out again.)
    with utilization(devnet, other, 0.97 if other == AAVE else 0.99):
        ran = api.request("POST", f"/api/v1/8453/wallets/{wallet}:run", headers=keyed)
        assert ran.status == 200, ran.body
        assert ran.json()["status"] == "completed", ran.body
    moved = positions(devnet.w3, devnet.manifest, wallet)
    assert moved[other] > placed[other]
    assert moved[holder] < placed[holder]

    # A month of interest.
    _devnet(devnet, "advance", "--seconds", str(30 * DAY))

    # 5. A partial withdrawal, split into principal, yield and fee, paid on chain.
    before = _balance(devnet, EOA)
    withdrawn = api.request(
        "POST", f"/api/v1/8453/wallets/{wallet}:withdraw", {"amount": 1_000 * USDC_UNIT}, keyed
    )
    assert withdrawn.status == 200, withdrawn.body
    [detail] = withdrawn.json()["withdraw_details"]
    assert detail["principal_amount"] + detail["yield_amount"] == 1_000 * USDC_UNIT
    assert detail["yield_amount"] > 0
    assert detail["fee_amount"] == detail["yield_amount"] // 10
    assert _balance(devnet, EOA) - before == 1_000 * USDC_UNIT - detail["fee_amount"]

    # 6. A top-up.
    top_up = _deposit(devnet, wallet, 500 * USDC_UNIT)
    topped = api.request(
        "POST", f"/api/v1/8453/wallets/{wallet}:top-up?tx_hash={top_up['tx_hash']}", headers=keyed
    )
    assert topped.status == 201, topped.body

    # 7. Deactivation: everything back to the user, nothing left in the account.
    deactivated = api.request("POST", f"/api/v1/8453/wallets/{wallet}:deactivate", headers=keyed)
    assert deactivated.status == 200, deactivated.body
    final = api.request("GET", f"/api/v1/8453/wallets/{wallet}").json()
    assert final["status"] == "deactivated", final.get("status_reason")
    assert _balance(devnet, wallet) == 0
    assert sum(positions(devnet.w3, devnet.manifest, wallet).values()) == 0

    # The books, to the unit, against the chain's logs and balances.
    stored = WalletStore(engine).get(8453, wallet)
    assert stored is not None
    reader = devnet_chain_books(devnet.w3, devnet.manifest, devnet.manifest.extras["fee_collector"])
    assert_books_balance(engine, reader, [stored])
    engine.dispose()


def _status(api: RunningService, wallet: str) -> dict[str, Any]:
    answer: dict[str, Any] = api.request("GET", f"/api/v1/8453/wallets/{wallet}").json()
    return answer


def test_the_owner_revokes_the_operator_and_the_service_stops_acting(
    ticking: RunningService, devnet: Devnet
) -> None:
    api = ticking
    engine = create_db_engine(api.database_url)
    keyed = partner(engine, "revoking-partner")
    owner = Signer(devnet.w3, dev_key(REVOKER))
    created = api.request("POST", SAFE_ACCOUNTS, {"eoa": owner.address, "chain": 8453}, keyed)
    wallet = created.json()["smartAccount"]
    deposit = _devnet(
        devnet,
        *("deposit", "--chain", "8453", "--token", devnet.usdc, "--from", owner.address),
        *("--to", wallet, "--amount", str(2_000 * USDC_UNIT)),
    )
    activation = {
        "wallet": wallet,
        "eoa": owner.address,
        "initial_token": devnet.usdc,
        "selected_protocols": [AAVE],
        "tx_hash": deposit["tx_hash"],
    }
    assert api.request("POST", "/api/v1/8453/wallets", activation, keyed).status == 201
    world = safe_world(devnet, devnet.manifest.extras["fee_collector"])
    module = world.module.address

    # One Safe transaction of the owner: disableModule(SENTINEL, module).
    safe = world.safe(wallet)
    disable = safe.functions.disableModule("0x" + "00" * 19 + "01", module)
    world.owner_safe_tx(owner, wallet, wallet, disable._encode_transaction_data())
    assert not safe.functions.isModuleEnabled(module).call()
    blocked = wait_until(
        lambda: (s := _status(api, wallet))["status"] == "blocked" and s, timeout=30, pause=0.2
    )
    assert "revoked the operator" in blocked["status_reason"], blocked
    refused = api.request(
        "POST", f"/api/v1/8453/wallets/{wallet}:withdraw", {"amount": USDC_UNIT}, keyed
    )
    assert refused.status == 409, refused.body  # the service no longer acts for it

    # The owner enables the module again: the wallet is the agent's again.
    enable = safe.functions.enableModule(module)
    world.owner_safe_tx(owner, wallet, wallet, enable._encode_transaction_data())
    wait_until(lambda: _status(api, wallet)["status"] == "activated", timeout=30, pause=0.2)
    engine.dispose()


def test_a_kernel_account_is_not_activated_on_a_real_chain(
    on_devnet: RunningService, devnet: Devnet
) -> None:
    api = on_devnet
    engine = create_db_engine(api.database_url)
    keyed = partner(engine, "kernel-partner")
    eoa = devnet.d.accounts[8]
    created = api.request(
        "POST", "/api/v1/proxy/zerodev/smart-accounts", {"eoa": eoa, "chain": 8453}, keyed
    )
    assert created.status == 200  # the address is the Kernel formula's, as always
    activation = {
        "wallet": created.json()["smartAccount"],
        "eoa": eoa,
        "initial_token": devnet.usdc,
        "selected_protocols": [AAVE],
    }
    answer = api.request("POST", "/api/v1/8453/wallets", activation, keyed)
    assert answer.status == 501, answer.body
    assert "Safe account" in answer.json()["detail"]
    assert devnet.w3.eth.get_code(created.json()["smartAccount"]) == b""
    engine.dispose()


SIGNATURES = (
    "approve(address,uint256)",
    "supply(address,uint256,address,uint16)",
    "supply(address,uint256)",
    "mint(uint256)",
    "deposit(uint256,address)",
)
"""The production functions a deposit plan may call, decoded independently of the adapter."""


def test_the_optimizers_calldata_decodes_and_executes_on_the_devnet(
    on_devnet: RunningService, devnet: Devnet
) -> None:
    api = on_devnet
    engine = create_db_engine(api.database_url)
    keyed = partner(engine, "calldata-partner")
    account = "0x" + "ab" * 20
    account = devnet.w3.to_checksum_address(account)
    _deposit(devnet, account, 5_000 * USDC_UNIT)
    request = {
        "total_capital": 5_000 * USDC_UNIT,
        "token_address": devnet.usdc,
        "current_allocations": {},
        "protocols": [AAVE, "compound", "moonwell", MORPHO],
        "wallet_address": account,
    }
    answer = api.request("POST", "/api/v1/optimizer/8453/optimize", request, keyed)
    assert answer.status == 200, answer.body
    body = answer.json()
    deposits = [a for a in body["action_plan"] if a["action_type"] == "deposit"]
    assert deposits and body["calldata"]
    assert len(body["calldata"]) == 2 * len(deposits)  # an approval, then the supply

    selectors = {keccak(text=s)[:4]: s for s in SIGNATURES}
    devnet.d.anvil("anvil_impersonateAccount", account)
    devnet.d.fund(account, 10**18)
    for call in body["calldata"]:
        data = bytes.fromhex(call["data"][2:])
        signature = selectors[data[:4]]
        assert signature.startswith(call["function_name"] + "(")
        types = signature[signature.index("(") + 1 : -1].split(",")
        decoded = decode(types, data[4:])
        rendered = [str(v) if isinstance(v, int) else v for v in decoded]
        assert [str(r).lower() for r in rendered] == [p.lower() for p in call["parameters"]]
        sent = devnet.w3.eth.send_transaction(
            {"from": account, "to": call["contract_address"], "data": call["data"]}
        )
        assert devnet.w3.eth.wait_for_transaction_receipt(sent)["status"] == 1
    held = positions(devnet.w3, devnet.manifest, account)
    planned = {a["protocol"]: int(a["amount"]) for a in deposits}
    for protocol, amount in planned.items():
        assert amount - 2 <= held[protocol] <= amount
    engine.dispose()
