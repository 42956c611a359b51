"""Wallet endpoints over REST through Envoy: shapes, status codes and error bodies."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from support.funded import USDC, Funded
from support.service import RunningService

BASE = "/api/v1/8453/wallets"
UNKNOWN = "0x" + "9a" * 20


def _url(funded: Funded, suffix: str = "") -> str:
    return f"{BASE}/{funded.wallet}{suffix}"


# -- activation ----------------------------------------------------------------------


def test_activation_answers_201_and_places_the_funds(api: RunningService, fund: Any) -> None:
    funded = fund()
    response = api.request("POST", BASE, funded.activation(), funded.headers)
    assert response.status == 201
    assert response.json() == {"message": "Agent activated successfully", "wallet": funded.wallet}
    wallet = api.request("GET", _url(funded)).json()
    assert wallet["status"] == "activated"
    assert wallet["current_protocols"]


def test_activation_input_errors_are_422_with_locations(api: RunningService, fund: Any) -> None:
    funded = fund()
    body = funded.activation(wallet="0x12", eoa="nope", selected_protocols=[])
    response = api.request("POST", BASE, body, funded.headers)
    assert response.status == 422
    locs = [item["loc"] for item in response.json()["detail"]]
    assert locs == [["body", "wallet"], ["body", "eoa"]]
    bad_constraint = funded.activation(constraints=[{"kind": "min_protocols", "params": {}}])
    response = api.request("POST", BASE, bad_constraint, funded.headers)
    assert response.status == 422
    assert response.json()["detail"][0]["loc"] == [
        "body",
        "constraints",
        0,
        "params",
        "min_protocols",
    ]


def test_activation_refusals_store_nothing(api: RunningService, fund: Any) -> None:
    funded = fund()
    unknown = funded.activation(selected_protocols=["aave", "nonsense", "other"])
    response = api.request("POST", BASE, unknown, funded.headers)
    assert response.status == 400
    assert "nonsense, other" in response.json()["detail"]
    assert api.request("GET", _url(funded)).status == 404  # nothing was stored
    wrong_tx = funded.activation(tx_hash="0x" + "11" * 32)
    assert api.request("POST", BASE, wrong_tx, funded.headers).status == 400
    assert api.request("GET", _url(funded)).status == 404


def test_a_deposit_above_the_maximum_is_403(api: RunningService, fund: Any) -> None:
    funded = fund(amount=2_000_000 * 10**6)  # above the default 1,000,000 USD
    response = api.request("POST", BASE, funded.activation(), funded.headers)
    assert response.status == 403
    assert response.error() == {"detail": "Access denied or deposit too large"}


def test_activating_an_active_wallet_is_409(api: RunningService, activated: Funded) -> None:
    response = api.request("POST", BASE, activated.activation(), activated.headers)
    assert response.status == 409


def test_another_partners_wallet_is_403(
    api: RunningService, activated: Funded, make_partner: Any
) -> None:
    other = make_partner()
    response = api.request("POST", _url(activated, ":withdraw"), {"amount": 1}, other)
    assert response.status == 403


# -- reading -------------------------------------------------------------------------


def test_wallet_record_has_every_field_of_the_contract(
    api: RunningService, activated: Funded
) -> None:
    response = api.request("GET", _url(activated))
    assert response.status == 200
    body = response.json()
    assert set(body) == {
        "wallet",
        "status",
        "deposits",
        "withdraws",
        "selected_protocols",
        "current_protocol",
        "current_protocols",
        "current_token",
        "activation_date",
        "last_deactivation_date",
        "last_reactivation_date",
        "eoa",
        "status_reason",  # ours, beyond the contract: why a wallet waits, when it does
        "withdrawable",  # ours: what a withdrawal could pay at once, smallest units
    }
    assert int(body["withdrawable"]) == pytest.approx(1_000 * 10**6, abs=2)
    assert isinstance(body["withdrawable"], str)  # like WithdrawDetail.amount
    assert body["last_deactivation_date"] is None and body["last_reactivation_date"] is None
    assert body["status_reason"] is None
    assert body["withdraws"] == []
    [deposit] = body["deposits"]
    assert deposit["amount"] == 1_000 * 10**6 and isinstance(deposit["amount"], int)
    assert deposit["tx_hash"] == activated.tx_hash
    assert isinstance(deposit["block_number"], int)
    assert body["current_token"] == USDC and body["eoa"] == activated.eoa


def test_wallet_read_by_eoa_and_unknown(api: RunningService, activated: Funded) -> None:
    by_eoa = api.request("GET", f"{BASE}/{activated.eoa}?eoa=true")
    assert by_eoa.status == 200 and by_eoa.json()["wallet"] == activated.wallet
    missing = api.request("GET", f"{BASE}/{UNKNOWN}")
    assert missing.status == 404
    assert "not found" in missing.json()["detail"]


# -- withdrawals ---------------------------------------------------------------------


def test_withdraw_returns_an_exact_split(api: RunningService, activated: Funded) -> None:
    response = api.request(
        "POST", _url(activated, ":withdraw"), {"amount": 100 * 10**6}, activated.headers
    )
    assert response.status == 200
    body = response.json()
    [detail] = body["withdraw_details"]
    assert detail["amount"] == str(100 * 10**6)  # a string, as the contract says
    principal, earned, fee = (detail[k] for k in ("principal_amount", "yield_amount", "fee_amount"))
    assert all(isinstance(v, int) for v in (principal, earned, fee))
    assert principal + earned == 100 * 10**6
    assert fee == earned * 1000 // 10000
    assert body["total_value"] == float(Decimal(100 * 10**6 - fee) / 10**6)
    assert api.request("GET", _url(activated)).json()["status"] == "activated"


def test_withdrawing_more_than_withdrawable_is_400(api: RunningService, activated: Funded) -> None:
    response = api.request(
        "POST", _url(activated, ":withdraw"), {"amount": 10**15}, activated.headers
    )
    assert response.status == 400
    assert "exceeds the withdrawable balance" in response.json()["detail"]
    for amount in (0, -5, "ten"):
        bad = api.request(
            "POST", _url(activated, ":withdraw"), {"amount": amount}, activated.headers
        )
        assert bad.status == 422, amount
        assert bad.json()["detail"][0]["loc"] == ["body", "amount"]


# -- protocols, staking, history --------------------------------------------------------


def test_protocol_update(api: RunningService, activated: Funded) -> None:
    url = _url(activated, "/protocols")
    response = api.request("PUT", url, ["aave", "compound"], activated.headers)
    assert response.status == 204 and response.body == b""
    assert api.request("GET", _url(activated)).json()["selected_protocols"] == ["aave", "compound"]
    bad = api.request("PUT", url, ["aave", "nope"], activated.headers)
    assert bad.status == 400
    assert "nope" in bad.json()["detail"]
    assert api.request("GET", _url(activated)).json()["selected_protocols"] == ["aave", "compound"]


def test_reward_staking(api: RunningService, activated: Funded) -> None:
    url = f"/api/v1/8453/rewards/{activated.wallet}"
    assert api.request("GET", url, headers=activated.headers).json()["is_staked"] is False
    response = api.request("POST", url, {"is_staked": True}, activated.headers)
    assert response.status == 204 and response.body == b""
    assert api.request("GET", url, headers=activated.headers).json()["is_staked"] is True
    missing = api.request("POST", url, {}, activated.headers)
    assert missing.status == 422
    assert missing.json()["detail"][0]["loc"] == ["body", "is_staked"]


def test_claim_without_rewards_is_400(api: RunningService, activated: Funded) -> None:
    response = api.request("POST", _url(activated, ":claim-rewards"), headers=activated.headers)
    assert response.status in (200, 400)
    if response.status == 400:
        assert response.error() == {"detail": "No rewards to claim"}


def test_transaction_pages(api: RunningService, activated: Funded) -> None:
    url = _url(activated, "/transactions")
    first = api.request("GET", url, headers=activated.headers).json()
    total = first["pagination"]["total_items"]
    assert total >= 2  # the deposit and the first allocation
    assert first["pagination"] == {
        "total_items": total,
        "total_pages": 1,
        "current_page": 1,
        "items_per_page": 20,
        "page": 1,
    }
    dates = [t["date"] for t in first["transactions"]]
    assert dates == sorted(dates, reverse=True)
    oldest = api.request("GET", url + "?sort=date_asc&limit=1", headers=activated.headers)
    assert oldest.json()["transactions"][0]["action"] == "deposit"
    assert oldest.json()["pagination"]["total_pages"] == total
    past_end = api.request("GET", url + "?page=99", headers=activated.headers).json()
    assert past_end["transactions"] == []
    assert past_end["pagination"]["current_page"] == past_end["pagination"]["page"] == 99


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("page=0", "page"),
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("sort=newest", "sort"),
    ],
)
def test_out_of_range_page_queries_are_422(
    api: RunningService, activated: Funded, query: str, field: str
) -> None:
    for url in (
        _url(activated, "/transactions"),
        f"/api/v1/8453/rewards/{activated.wallet}/history",
    ):
        response = api.request("GET", f"{url}?{query}", headers=activated.headers)
        assert response.status == 422
        assert response.json()["detail"][0]["loc"] == ["query", field]


def test_apr_and_its_date_checks(api: RunningService, activated: Funded) -> None:
    url = _url(activated, "/apr")
    response = api.request("GET", url, headers=activated.headers)
    assert response.status == 200
    assert set(response.json()) == {"apr", "sub_periods"}
    with_offset = api.request(
        "GET", url + "?start_date=2020-01-01T00:00:00%2B02:00", headers=activated.headers
    )
    assert with_offset.status == 200
    bad = api.request("GET", url + "?start_date=yesterday", headers=activated.headers)
    assert bad.status == 422
    assert bad.json()["detail"][0]["loc"] == ["query", "start_date"]


def test_stats(api: RunningService, activated: Funded) -> None:
    response = api.request("GET", "/api/v1/8453/stats")
    assert response.status == 200
    body = response.json()
    assert body["total_users"] >= 1 and isinstance(body["total_users"], int)
    assert body["total_deposits"] >= 1_000
    distribution = body["liquidity_distribution"]
    assert set(distribution) == {"initial_deposits", "current_tokens", "protocols"}
    for items in (
        distribution["initial_deposits"],
        distribution["current_tokens"],
        distribution["protocols"],
    ):
        assert sum(Decimal(str(i["percentage"])) for i in items) == 100
    assert api.request("GET", "/api/v1/5/stats").status == 404


# -- deactivation and top-up ----------------------------------------------------------------


def test_deactivate_then_forbidden_calls_are_409(
    api: RunningService, activated: Funded, world: Any
) -> None:
    response = api.request("POST", _url(activated, ":deactivate"), headers=activated.headers)
    assert response.status == 200
    assert response.json() == {"message": "Wallet deactivation initiated"}
    wallet = api.request("GET", _url(activated)).json()
    assert wallet["status"] == "deactivated"
    assert wallet["last_deactivation_date"] is not None
    assert len(wallet["withdraws"]) == 1
    refused = api.request("POST", _url(activated, ":withdraw"), {"amount": 1}, activated.headers)
    assert refused.status == 409
    top_up = world.deposit_from(8453, USDC, activated.eoa, activated.wallet, 10**6)
    late = api.request(
        "POST", _url(activated, f":top-up?tx_hash={top_up.tx_hash}"), headers=activated.headers
    )
    assert late.status == 409


def test_top_up(api: RunningService, activated: Funded, world: Any) -> None:
    transfer = world.deposit_from(8453, USDC, activated.eoa, activated.wallet, 50 * 10**6)
    url = _url(activated, f":top-up?tx_hash={transfer.tx_hash}")
    response = api.request("POST", url, headers=activated.headers)
    assert response.status == 201
    assert response.json() == {"message": "Top-up process started"}
    assert len(api.request("GET", _url(activated)).json()["deposits"]) == 2
    again = api.request("POST", url, headers=activated.headers)  # booked once, nothing new
    assert again.status == 201
    assert len(api.request("GET", _url(activated)).json()["deposits"]) == 2
    missing = api.request("POST", _url(activated, ":top-up"), headers=activated.headers)
    assert missing.status == 422
    assert missing.json()["detail"][0]["loc"] == ["query", "tx_hash"]
