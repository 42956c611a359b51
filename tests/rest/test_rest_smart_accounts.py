"""Smart accounts over REST: POST and GET /api/v1/proxy/{zerodev,safe}/smart-accounts."""

from __future__ import annotations

from typing import Any

from support.service import RunningService
from yieldagent.catalog import load_catalog
from yieldagent.composition.chains import (
    SIMULATED_FEE_COLLECTOR,
    SIMULATED_MODULE,
    SIMULATED_MODULE_SETUP,
)
from yieldagent.domain.partners.safe_accounts import (
    COMPATIBILITY_FALLBACK_HANDLER_1_4_1,
    SAFE_L2_1_4_1,
    SAFE_PROXY_FACTORY_1_4_1,
    SafeAccountConstants,
    safe_account_address,
)
from yieldagent.domain.partners.smart_accounts import smart_account_address

PATH = "/api/v1/proxy/zerodev/smart-accounts"
SAFE = "/api/v1/proxy/safe/smart-accounts"
OWNER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"


def test_creation_returns_the_kernel_address_and_the_backend_wallet(
    api: RunningService, keyed: dict[str, str]
) -> None:
    response = api.request("POST", PATH, {"eoa": OWNER, "chain": 8453}, keyed)
    assert response.status == 200
    body = response.json()
    assert set(body) == {"smartAccount", "backendWallet"}
    assert body["smartAccount"] == smart_account_address(OWNER, "yield-agent")
    assert body["backendWallet"].startswith("0x") and len(body["backendWallet"]) == 42


def test_creation_is_idempotent_and_persisted(api: RunningService, make_partner: Any) -> None:
    headers = make_partner()
    eoa = "0x" + "a1" * 20
    first = api.request("POST", PATH, {"eoa": eoa, "chain": 1, "agent_id": "x"}, headers)
    again = api.request(
        "POST", PATH, {"eoa": eoa.upper().replace("0X", "0x"), "chain": 1, "agent_id": "x"}, headers
    )
    assert first.status == again.status == 200
    assert first.json() == again.json()
    found = api.request("GET", f"{PATH}?eoa={eoa}&chain=1&agent_id=x", headers=headers)
    assert found.status == 200
    assert found.json() == first.json()


def test_agent_ids_give_distinct_accounts(api: RunningService, keyed: dict[str, str]) -> None:
    eoa = "0x" + "b2" * 20
    one = api.request("POST", PATH, {"eoa": eoa, "chain": 8453, "agent_id": "one"}, keyed)
    two = api.request("POST", PATH, {"eoa": eoa, "chain": 8453, "agent_id": "two"}, keyed)
    assert one.json()["smartAccount"] != two.json()["smartAccount"]


def test_lookup_of_an_account_never_created_is_a_404(
    api: RunningService, keyed: dict[str, str]
) -> None:
    response = api.request("GET", f"{PATH}?eoa=0x{'c3' * 20}&chain=8453", headers=keyed)
    assert response.status == 404
    assert "No smart account" in response.json()["detail"]


def test_invalid_eoa_and_chain_are_a_422_listing_both(
    api: RunningService, keyed: dict[str, str]
) -> None:
    response = api.request("POST", PATH, {"eoa": "0x123", "chain": 5}, keyed)
    assert response.status == 422
    detail = response.json()["detail"]
    assert [item["loc"] for item in detail] == [["body", "eoa"], ["body", "chain"]]
    assert all(set(item) == {"loc", "msg", "type"} for item in detail)


def test_missing_fields_are_reported(api: RunningService, keyed: dict[str, str]) -> None:
    response = api.request("POST", PATH, {}, keyed)
    assert response.status == 422
    detail = response.json()["detail"]
    assert detail[0] == {"loc": ["body", "eoa"], "msg": "Field required", "type": "missing"}


def test_a_chain_that_is_not_a_number_is_a_422(api: RunningService, keyed: dict[str, str]) -> None:
    response = api.request("POST", PATH, {"eoa": OWNER, "chain": "base"}, keyed)
    assert response.status == 422
    assert response.json()["detail"][0]["loc"] == ["body", "chain"]


def test_lookup_parameters_are_checked_as_query_fields(
    api: RunningService, keyed: dict[str, str]
) -> None:
    response = api.request("GET", f"{PATH}?eoa=nope&chain=8453", headers=keyed)
    assert response.status == 422
    assert response.json()["detail"][0]["loc"] == ["query", "eoa"]


def test_another_partners_account_is_refused(api: RunningService, make_partner: Any) -> None:
    owner, other = make_partner(), make_partner()
    body = {"eoa": "0x" + "d4" * 20, "chain": 8453}
    assert api.request("POST", PATH, body, owner).status == 200
    for method, path, payload in (
        ("POST", PATH, body),
        ("GET", f"{PATH}?eoa={body['eoa']}&chain=8453", None),
    ):
        response = api.request(method, path, payload, other)
        assert response.status == 403
        assert response.json()["detail"].startswith("Access denied")


def _simulated_safe(chain_id: int) -> SafeAccountConstants:
    """What fixes a simulated chain's Safe addresses (no fee collector configured)."""
    [token] = load_catalog().chain(chain_id).tokens
    return SafeAccountConstants(
        chain_id,
        SAFE_PROXY_FACTORY_1_4_1,
        SAFE_L2_1_4_1,
        COMPATIBILITY_FALLBACK_HANDLER_1_4_1,
        SIMULATED_MODULE_SETUP,
        SIMULATED_MODULE,
        token.address,
        SIMULATED_FEE_COLLECTOR,
    )


def test_a_safe_account_is_at_the_factory_formulas_address(
    api: RunningService, keyed: dict[str, str]
) -> None:
    eoa = "0x" + "e5" * 20
    created = api.request("POST", SAFE, {"eoa": eoa, "chain": 8453, "agent_id": "s"}, keyed)
    assert created.status == 200, created.body
    body = created.json()
    assert set(body) == {"smartAccount", "backendWallet"}
    assert body["smartAccount"] == safe_account_address(
        "0x" + "E5" * 20, "s", _simulated_safe(8453)
    )
    found = api.request("GET", f"{SAFE}?eoa={eoa}&chain=8453&agent_id=s", headers=keyed)
    assert found.status == 200
    assert found.json() == body
    again = api.request("POST", SAFE, {"eoa": eoa, "chain": 8453, "agent_id": "s"}, keyed)
    assert again.json() == body


def test_safe_and_kernel_accounts_of_one_eoa_are_apart(
    api: RunningService, keyed: dict[str, str]
) -> None:
    eoa = "0x" + "f6" * 20
    kernel = api.request("POST", PATH, {"eoa": eoa, "chain": 1}, keyed).json()
    assert api.request("GET", f"{SAFE}?eoa={eoa}&chain=1", headers=keyed).status == 404
    safe = api.request("POST", SAFE, {"eoa": eoa, "chain": 1}, keyed).json()
    assert safe["smartAccount"] != kernel["smartAccount"]
    assert safe["backendWallet"] == kernel["backendWallet"]
    on_base = api.request("POST", SAFE, {"eoa": eoa, "chain": 8453}, keyed).json()
    assert on_base["smartAccount"] != safe["smartAccount"]  # the chain is in the salt


def test_safe_account_fields_are_checked_as_the_kernel_ones(
    api: RunningService, keyed: dict[str, str], make_partner: Any
) -> None:
    invalid = api.request("POST", SAFE, {"eoa": "0x123", "chain": 5}, keyed)
    assert invalid.status == 422
    assert [item["loc"] for item in invalid.json()["detail"]] == [
        ["body", "eoa"],
        ["body", "chain"],
    ]
    body = {"eoa": "0x" + "a7" * 20, "chain": 8453}
    assert api.request("POST", SAFE, body, keyed).status == 200
    refused = api.request("POST", SAFE, body, make_partner())
    assert refused.status == 403
