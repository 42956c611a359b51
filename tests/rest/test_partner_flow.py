"""The whole partner flow over REST through Envoy, with the simulated chain driven by the
``yieldagent sim`` command as a user and an operator would (the quickstart's steps)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from typing import Any

from support.funded import USDC
from support.service import RunningService

EOA = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
MONTH = 30 * 24 * 3600


def _sim(api: RunningService, *args: str) -> dict[str, Any]:
    env = {
        **os.environ,
        "YIELDAGENT_DATABASE_URL": api.database_url,
        "YIELDAGENT_DATA_DIR": str(api.data_dir),
    }
    done = subprocess.run(
        [sys.executable, "-m", "yieldagent", "sim", *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_partner_flow(api: RunningService, make_partner: Any) -> None:
    keyed = make_partner()

    # 1. The partner creates the user's smart account.
    created = api.request(
        "POST", "/api/v1/proxy/zerodev/smart-accounts", {"eoa": EOA, "chain": 8453}, keyed
    )
    assert created.status == 200
    wallet = created.json()["smartAccount"]

    # 2. The user deposits 5,000 USDC to it.
    deposit = _sim(
        api,
        "deposit",
        "--chain",
        "8453",
        "--token",
        USDC,
        "--from",
        EOA,
        "--to",
        wallet,
        "--amount",
        str(5_000 * 10**6),
    )

    # 3. The partner activates the agent.
    activation = {
        "wallet": wallet,
        "eoa": EOA,
        "initial_token": USDC,
        "selected_protocols": ["moonwell"],
        "tx_hash": deposit["tx_hash"],
        "constraints": [
            {
                "kind": "max_allocation_amount_per_protocol",
                "params": {"protocol": "aave", "max_amount": 10**12},
            }
        ],
    }
    activated = api.request("POST", "/api/v1/8453/wallets", activation, keyed)
    assert activated.status == 201, activated.body

    # 4. A month passes.
    before = _sim(api, "advance", "--seconds", "0")["time"]
    after = _sim(api, "advance", "--seconds", str(MONTH))["time"]
    assert after > before

    # 5. The partner reads the wallet, its APR, its transactions and the stats.
    record = api.request("GET", f"/api/v1/8453/wallets/{wallet}").json()
    assert record["status"] == "activated"
    assert record["deposits"][0]["amount"] == 5_000 * 10**6
    apr = api.request("GET", f"/api/v1/8453/wallets/{wallet}/apr", headers=keyed).json()
    assert 0 < apr["apr"] < 30
    assert apr["sub_periods"][0]["initial_value"] == 5_000
    transactions = api.request(
        "GET", f"/api/v1/8453/wallets/{wallet}/transactions", headers=keyed
    ).json()
    actions = [t["action"] for t in transactions["transactions"]]
    assert "deposit" in actions
    stats = api.request("GET", "/api/v1/8453/stats").json()
    assert stats["total_users"] >= 1

    # 6. A partial withdrawal: principal and yield, fee on the yield only.
    withdrawn = api.request(
        "POST", f"/api/v1/8453/wallets/{wallet}:withdraw", {"amount": 1_000 * 10**6}, keyed
    ).json()
    [detail] = withdrawn["withdraw_details"]
    assert detail["principal_amount"] + detail["yield_amount"] == 1_000 * 10**6
    assert detail["yield_amount"] > 0  # a month of interest
    assert detail["fee_amount"] == detail["yield_amount"] // 10

    # 7. A top-up.
    top_up = _sim(
        api,
        "deposit",
        "--chain",
        "8453",
        "--token",
        USDC,
        "--from",
        EOA,
        "--to",
        wallet,
        "--amount",
        str(500 * 10**6),
    )
    topped = api.request(
        "POST", f"/api/v1/8453/wallets/{wallet}:top-up?tx_hash={top_up['tx_hash']}", headers=keyed
    )
    assert topped.status == 201

    # 8. Claim the rewards accrued on Moonwell, compounding them.
    staking = api.request("POST", f"/api/v1/8453/rewards/{wallet}", {"is_staked": True}, keyed)
    assert staking.status == 204
    claimed = api.request("POST", f"/api/v1/8453/wallets/{wallet}:claim-rewards", headers=keyed)
    if claimed.status == 200:  # only when the allocation reached Moonwell
        [reward] = claimed.json()["rewards"]
        assert int(reward["amount"]) > 0 and reward["current_price_in_underlying"] > 0
        history = api.request("GET", f"/api/v1/8453/rewards/{wallet}/history", headers=keyed).json()
        assert history["rewards"][0]["is_staked"] is True
    else:
        assert claimed.error() == {"detail": "No rewards to claim"}

    # 9. Deactivation returns everything to the user.
    deactivated = api.request("POST", f"/api/v1/8453/wallets/{wallet}:deactivate", headers=keyed)
    assert deactivated.status == 200
    final = api.request("GET", f"/api/v1/8453/wallets/{wallet}").json()
    assert final["status"] == "deactivated"
    assert final["current_protocols"] == []
    assert final["last_deactivation_date"] is not None
    returned = sum(Decimal(str(w["value"])) for w in final["withdraws"])
    assert returned > 5_500 - 1  # principal back, plus yield less fees
