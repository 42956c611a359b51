"""Health and catalog over REST: GET /healthcheck, /chains, /{chain_id}/tokens, /…/protocols."""

from __future__ import annotations

from datetime import datetime

from support.service import RunningService
from yieldagent import __version__

BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
SPANS = ("", "_7d", "_30d")
"""The APY parts of today, and their averages over 7 and 30 days."""


def test_healthcheck(api: RunningService) -> None:
    response = api.request("GET", "/api/v1/healthcheck")
    assert response.status == 200
    body = response.json()
    assert set(body) == {"message", "version", "time"}
    assert body["version"] == __version__
    assert datetime.fromisoformat(body["time"]).tzinfo is not None


def test_chains_are_the_six_supported_ids_as_integers(api: RunningService) -> None:
    response = api.request("GET", "/api/v1/chains")
    assert response.status == 200
    assert response.json() == {"chain_ids": [1, 137, 8453, 42161, 84532, 11155111]}


def test_tokens_of_base(api: RunningService) -> None:
    response = api.request("GET", "/api/v1/8453/tokens")
    assert response.status == 200
    [token] = response.json()["tokens"]
    balance = token.pop("balance")  # what the session's wallets hold: other tests add some
    assert isinstance(balance, int | float) and balance >= 0
    assert token == {"address": BASE_USDC, "symbol": "USDC", "decimals": 6, "current_price": 1}


def test_tokens_of_an_unknown_chain_is_a_404(api: RunningService) -> None:
    response = api.request("GET", "/api/v1/5/tokens")
    assert response.status == 404
    assert "Chain 5 is not supported" in response.json()["detail"]


def test_a_chain_id_that_is_not_a_number_is_a_422_on_the_path(api: RunningService) -> None:
    response = api.request("GET", "/api/v1/base/tokens")
    assert response.status == 422
    assert response.json()["detail"][0]["loc"] == ["path", "chain_id"]


def test_protocols_of_base_usdc_carry_every_catalog_field(api: RunningService) -> None:
    response = api.request("GET", f"/api/v1/8453/{BASE_USDC}/protocols")
    assert response.status == 200
    protocols = response.json()["protocols"]
    assert [p["name"] for p in protocols] == [
        "aave",
        "compound",
        "moonwell",
        "morpho_gauntlet_usdc_prime",
    ]
    fields = {
        "name",
        "is_active",
        "description",
        "tvl",
        "apr",
        "pools",
        "created_at",
        "updated_at",
        "chain_id",
        "parent_protocol",
        "link",
        "address",
        "title",
        "risk",
        *(f"apy_{part}{span}" for part in ("base", "rewards", "total", "net") for span in SPANS),
    }
    for protocol in protocols:
        assert set(protocol) == fields
        assert protocol["risk"] == {"state": "ok", "reasons": []}
        assert protocol["chain_id"] == 8453
        assert isinstance(protocol["apr"], float) and 0 < protocol["apr"] < 30
        assert protocol["tvl"] > 1_000_000
        assert all(set(pool) == {"name", "apy"} for pool in protocol["pools"])
    aave = protocols[0]
    assert aave["address"] == "0xA238Dd80C259a72e81d7e4664a9801593F98d1c5"
    assert protocols[3]["parent_protocol"] == "morpho"


def test_protocols_accept_any_letter_case_of_the_token(api: RunningService) -> None:
    response = api.request("GET", f"/api/v1/8453/{BASE_USDC.lower()}/protocols")
    assert response.status == 200


def test_protocols_of_an_unsupported_token_is_a_404(api: RunningService) -> None:
    response = api.request("GET", "/api/v1/8453/0x" + "12" * 20 + "/protocols")
    assert response.status == 404
    assert "not supported on chain 8453" in response.json()["detail"]


def test_protocols_of_a_malformed_token_is_a_422_on_the_path(api: RunningService) -> None:
    response = api.request("GET", "/api/v1/8453/usdc/protocols")
    assert response.status == 422
    [item] = response.json()["detail"]
    assert item["loc"] == ["path", "token"]


def test_config_answers_what_the_production_client_reads(
    api: RunningService, keyed: dict[str, str]
) -> None:
    # Public, like the catalog: the client sends its partner headers, a browser none.
    anonymous = api.request("GET", "/api/v1/config")
    with_key = api.request("GET", "/api/v1/config", headers=keyed)
    assert anonymous.status == with_key.status == 200
    body = anonymous.json()
    assert body == with_key.json()
    assert {
        "min_withdraw_usd",
        "optimizer_threshold_usd",
        "max_protocol_liquidity_percentage",
        "constraints",
        "chains",
    } <= set(body)
    assert body["min_withdraw_usd"] == 10  # YIELDAGENT_MIN_WITHDRAW_USD's default
    assert body["optimizer_threshold_usd"] is None  # the agent has no such rule
    assert body["max_protocol_liquidity_percentage"] == 15
    assert body["constraints"]["kinds"]["exclude_protocol"] == {
        "params": ["protocol"],
        "optional_params": [],
    }
    assert body["chains"]["8453"]["tokens"] == [BASE_USDC]
    assert body["chains"]["8453"]["chain_id"] == 8453
    assert body["pending_admin_changes"] == []  # simulated chains have no module
    assert body["wallet_money_calls_per_minute"] == 0  # the test service's: unlimited
