"""The production TypeScript client's calls, made as it makes them (its paths, query
parameters, methods and bodies), through Envoy on the simulated market: each answers the
shape the client's types declare, with the types it reads, and only to the wallet's
partner."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import pytest

from support.funded import USDC, Funded
from support.service import Response, RunningService

CHAIN = 8453


class Client:
    """The calls of the production client for one chain and one partner."""

    def __init__(self, api: RunningService, headers: Mapping[str, str]) -> None:
        self._api = api
        self._headers = dict(headers)

    def get(self, path: str, query: Mapping[str, Any] | None = None) -> Response:
        url = f"/api/v1/{path}" + (f"?{urlencode(query)}" if query else "")
        return self._api.request("GET", url, headers=self._headers)

    def ok(self, path: str, query: Mapping[str, Any] | None = None) -> Any:
        response = self.get(path, query)
        assert response.status == 200, (path, response.status, response.body)
        return response.json()

    def wallet(self, funded: Funded, tail: str) -> str:
        return f"{CHAIN}/wallets/{funded.wallet}/{tail}"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@pytest.fixture
def client(api: RunningService, activated: Funded) -> Client:
    return Client(api, activated.headers)


def test_protocol_supply_lists_each_pool(client: Client) -> None:
    body = client.ok(f"{CHAIN}/{USDC}/protocols/supply")
    assert set(body) == {"protocols"} and len(body["protocols"]) == 4
    for item in body["protocols"]:
        assert {"protocol", "supply", "tokens"} <= set(item)
        assert isinstance(item["protocol"], str) and _number(item["supply"])
        assert item["tokens"] == [USDC]
        assert item["supply"] == item["supply_amount"] / 10**6 > 0
    missing = client.get(f"{CHAIN}/0x{'00' * 20}/protocols/supply")
    assert missing.status == 404, missing.body


def test_fees_and_limit(client: Client, activated: Funded) -> None:
    fee = client.ok(client.wallet(activated, "fee"))
    assert _number(fee["percentage_fee"]) and fee["percentage_fee"] == 0.1
    assert _number(fee["fee"]) and fee["fee"] >= 0
    assert isinstance(fee["fee_amount"], int) and isinstance(fee["charged_amount"], int)
    limit = client.ok(client.wallet(activated, "limit"), {"eoa": activated.eoa})
    assert limit["limit"] == 1_000_000 * 10**6 and limit["token"] == USDC
    bad = client.get(client.wallet(activated, "limit"), {"eoa": "0x12"})
    assert bad.status == 422 and bad.error()["detail"][0]["loc"] == ["query", "eoa"]


SDK_WALLET_READS = (
    "deposits",
    "fee",
    "limit",
    "executions",
    "logs",
    "protocols",
    "constraints",
    "whitelist",
)


def test_only_the_wallets_partner_reads_its_details(  # type: ignore[no-untyped-def]
    api: RunningService, activated: Funded, make_partner
) -> None:
    owner = Client(api, activated.headers)
    stranger = Client(api, make_partner())
    nobody = Client(api, {})
    query = {"eoa": activated.eoa}
    for tail in SDK_WALLET_READS:
        path = owner.wallet(activated, tail)
        assert owner.get(path, query).status == 200, tail
        refused = stranger.get(path, query)
        assert refused.status == 403, (tail, refused.body)
        assert "another partner" in refused.error()["detail"]
        assert nobody.get(path, query).status == 401, tail


def _pagination(body: Any, page: int, limit: int) -> None:
    pagination = body["pagination"]
    assert pagination["page"] == pagination["current_page"] == page
    assert pagination["items_per_page"] == limit
    assert isinstance(pagination["total_items"], int) and isinstance(pagination["total_pages"], int)


def test_executions_and_their_logs(client: Client, activated: Funded) -> None:
    page = client.ok(
        client.wallet(activated, "executions"), {"page": 1, "limit": 20, "sort": "date_desc"}
    )
    _pagination(page, 1, 20)
    [execution] = page["executions"]  # the activation's placement
    assert {"id", "execution_plan", "execution_type", "status", "created_at", "transactions"} <= (
        set(execution)
    )
    assert execution["execution_type"] == "activate" and execution["status"] == "success"
    moves = execution["execution_plan"]["moves"]
    assert moves and all(m["action"] == "deposit" and isinstance(m["amount"], int) for m in moves)
    for sent in execution["transactions"]:
        assert isinstance(sent["action"], str) and isinstance(sent["date"], str)
        assert isinstance(sent["amount"], int) and sent["correlation_id"] == execution["id"]
    logs = client.ok(
        client.wallet(activated, f"executions/{execution['id']}/logs"), {"page": 1, "limit": 3}
    )
    _pagination(logs, 1, 3)
    assert len(logs["logs"]) == 3 and logs["pagination"]["total_items"] == len(moves) + 2
    for entry in logs["logs"]:
        assert isinstance(entry["type"], str) and isinstance(entry["data"], dict)
    wallet_logs = client.ok(client.wallet(activated, "logs"), {"page": 1, "limit": 20})
    _pagination(wallet_logs, 1, 20)
    assert "activated" in {entry["type"] for entry in wallet_logs["logs"]}
    missing = client.get(client.wallet(activated, "executions/nowhere/logs"))
    assert missing.status == 404, missing.body


def test_deposits_as_the_record_lists_them(client: Client, activated: Funded) -> None:
    body = client.ok(client.wallet(activated, "deposits"))
    [deposit] = body["deposits"]
    assert deposit["amount"] == 1_000 * 10**6 and deposit["token_type"] == USDC
    assert deposit["tx_hash"] == activated.tx_hash and isinstance(deposit["block_number"], int)
    record = client.ok(f"{CHAIN}/wallets/{activated.wallet}")
    assert record["deposits"] == body["deposits"]


def test_rewards_page_beside_the_staking_setting(  # type: ignore[no-untyped-def]
    api: RunningService, fund, world
) -> None:
    funded: Funded = fund(2_000 * 10**6)
    body = funded.activation(selected_protocols=["moonwell"])
    assert api.request("POST", f"/api/v1/{CHAIN}/wallets", body, funded.headers).status == 201
    world.advance(30 * 24 * 3600)
    claim = f"/api/v1/{CHAIN}/wallets/{funded.wallet}:claim-rewards"
    assert api.request("POST", claim, headers=funded.headers).status == 200
    client = Client(api, funded.headers)
    query = {"page": 1, "limit": 20, "sort": "date_desc"}
    page = client.ok(f"{CHAIN}/rewards/{funded.wallet}", query)
    assert page["is_staked"] is False  # the contract's field, as it was
    _pagination(page, 1, 20)
    [reward] = page["rewards"]
    assert isinstance(reward["id"], str) and _number(reward["reward_amount"])
    assert reward["ticker"] == reward["token_symbol"] == "WELL"
    assert reward["transaction_hash"] and reward["id"].startswith(reward["transaction_hash"])
    for unknown in ("user_id", "base_apr", "extra_apr", "group", "start_date"):
        assert reward[unknown] is None, unknown
    assert reward["created_at"] == reward["updated_at"] == reward["end_date"] == reward["date"]
    assert isinstance(reward["amount_units"], int) and reward["amount_units"] > 0
    bare = client.ok(f"{CHAIN}/rewards/{funded.wallet}")
    assert bare["is_staked"] is False and bare["rewards"] == page["rewards"]
    bad = client.get(f"{CHAIN}/rewards/{funded.wallet}", {"limit": 500})
    assert bad.status == 422, bad.body


def test_protocols_are_a_bare_array_of_catalog_entries(client: Client, activated: Funded) -> None:
    protocols = client.ok(client.wallet(activated, "protocols"))
    catalog = client.ok(f"{CHAIN}/{USDC}/protocols")["protocols"]
    assert isinstance(protocols, list)
    assert [p["name"] for p in protocols] == activated.activation()["selected_protocols"]
    for protocol in protocols:
        assert isinstance(protocol["name"], str) and isinstance(protocol["is_active"], bool)
        assert set(protocol) == set(catalog[0])


def test_constraints_round_trip(client: Client, api: RunningService, activated: Funded) -> None:
    path = client.wallet(activated, "constraints")
    assert client.ok(path) == []
    rules = [
        {"kind": "min_protocols", "params": {"min_protocols": 2}},
        {"kind": "exclude_protocol", "params": {"protocol": "compound"}},
    ]
    put = api.request("PUT", f"/api/v1/{path}", {"constraints": rules}, activated.headers)
    assert put.status == 204 and put.body == b"", put.body
    current = client.ok(path)
    assert [c["kind"] for c in current] == ["min_protocols", "exclude_protocol"]
    assert current[0]["params"]["min_protocols"] == 2
    assert current[1]["params"]["protocol"] == "compound"
    again = api.request("PUT", f"/api/v1/{path}", {"constraints": current}, activated.headers)
    assert again.status == 204, again.body  # what the read gives, the update takes
    assert client.ok(path) == current
    bad = [{"kind": "min_protocols", "params": {"min_protocols": 0}}]
    refused = api.request("PUT", f"/api/v1/{path}", {"constraints": bad}, activated.headers)
    assert refused.status == 422, refused.body
    assert refused.error()["detail"][0]["loc"][:3] == ["body", "constraints", 0]


def test_the_whitelist(client: Client, activated: Funded) -> None:
    body = client.ok(client.wallet(activated, "whitelist"))
    roles = [(entry["role"], entry["protocol"]) for entry in body["whitelist"]]
    protocols = activated.activation()["selected_protocols"]
    assert roles[: len(protocols)] == [("protocol", name) for name in protocols]
    assert ("owner", "") in roles
    owner = next(e for e in body["whitelist"] if e["role"] == "owner")
    assert owner["address"] == activated.eoa
