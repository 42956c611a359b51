"""The production TypeScript client's calls, made as it makes them (its paths, query
parameters, methods and bodies), through Envoy on the simulated market: each answers the
shape the client's types declare, with the types it reads, and only to the wallet's
partner."""

from __future__ import annotations

import pytest

from support.funded import USDC, Funded
from support.sdk_client import (
    Client,
    check_execution,
    check_fee,
    check_logs,
    check_pagination,
    check_rewards,
    check_supply,
)
from support.service import RunningService

CHAIN = 8453


@pytest.fixture
def client(api: RunningService, activated: Funded) -> Client:
    return Client(api, activated.headers, CHAIN)


def test_protocol_supply_lists_each_pool(client: Client) -> None:
    body = client.ok(f"{CHAIN}/{USDC}/protocols/supply")
    assert len(check_supply(body, USDC, 6)) == 4
    missing = client.get(f"{CHAIN}/0x{'00' * 20}/protocols/supply")
    assert missing.status == 404, missing.body


def test_fees_and_limit(client: Client, activated: Funded) -> None:
    check_fee(client.ok(client.wallet(activated.wallet, "fee")), 0.1)
    limit = client.ok(client.wallet(activated.wallet, "limit"), {"eoa": activated.eoa})
    assert limit["limit"] == 1_000_000 * 10**6 and limit["token"] == USDC
    bad = client.get(client.wallet(activated.wallet, "limit"), {"eoa": "0x12"})
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
    owner = Client(api, activated.headers, CHAIN)
    stranger = Client(api, make_partner(), CHAIN)
    nobody = Client(api, {}, CHAIN)
    query = {"eoa": activated.eoa}
    for tail in SDK_WALLET_READS:
        path = owner.wallet(activated.wallet, tail)
        assert owner.get(path, query).status == 200, tail
        refused = stranger.get(path, query)
        assert refused.status == 403, (tail, refused.body)
        assert "another partner" in refused.error()["detail"]
        assert nobody.get(path, query).status == 401, tail


def test_executions_and_their_logs(client: Client, activated: Funded) -> None:
    page = client.ok(
        client.wallet(activated.wallet, "executions"), {"page": 1, "limit": 20, "sort": "date_desc"}
    )
    check_pagination(page, 1, 20)
    [execution] = page["executions"]  # the activation's placement
    check_execution(execution)
    assert execution["execution_type"] == "activate" and execution["status"] == "success"
    moves = execution["execution_plan"]["moves"]
    assert moves and all(m["action"] == "deposit" and isinstance(m["amount"], int) for m in moves)
    logs = client.ok(
        client.wallet(activated.wallet, f"executions/{execution['id']}/logs"),
        {"page": 1, "limit": 3},
    )
    assert len(check_logs(logs, 1, 3)) == 3
    assert logs["pagination"]["total_items"] == len(moves) + 2
    wallet_logs = client.ok(client.wallet(activated.wallet, "logs"), {"page": 1, "limit": 20})
    assert "activated" in check_logs(wallet_logs, 1, 20)
    missing = client.get(client.wallet(activated.wallet, "executions/nowhere/logs"))
    assert missing.status == 404, missing.body


def test_deposits_as_the_record_lists_them(client: Client, activated: Funded) -> None:
    body = client.ok(client.wallet(activated.wallet, "deposits"))
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
    client = Client(api, funded.headers, CHAIN)
    query = {"page": 1, "limit": 20, "sort": "date_desc"}
    page = client.ok(f"{CHAIN}/rewards/{funded.wallet}", query)
    check_rewards(page, 1, 20)
    assert page["is_staked"] is False  # the contract's field, as it was
    [reward] = page["rewards"]
    assert reward["ticker"] == reward["token_symbol"] == "WELL"
    assert reward["transaction_hash"] and reward["id"].startswith(reward["transaction_hash"])
    for unknown in ("user_id", "base_apr", "extra_apr", "group", "start_date"):
        assert reward[unknown] is None, unknown
    assert reward["created_at"] == reward["updated_at"] == reward["end_date"] == reward["date"]
    bare = client.ok(f"{CHAIN}/rewards/{funded.wallet}")
    assert bare["is_staked"] is False and bare["rewards"] == page["rewards"]
    bad = client.get(f"{CHAIN}/rewards/{funded.wallet}", {"limit": 500})
    assert bad.status == 422, bad.body


def test_protocols_are_a_bare_array_of_catalog_entries(client: Client, activated: Funded) -> None:
    protocols = client.ok(client.wallet(activated.wallet, "protocols"))
    catalog = client.ok(f"{CHAIN}/{USDC}/protocols")["protocols"]
    assert isinstance(protocols, list)
    assert [p["name"] for p in protocols] == activated.activation()["selected_protocols"]
    for protocol in protocols:
        assert isinstance(protocol["name"], str) and isinstance(protocol["is_active"], bool)
        assert set(protocol) == set(catalog[0])


def test_constraints_round_trip(client: Client, api: RunningService, activated: Funded) -> None:
    path = client.wallet(activated.wallet, "constraints")
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
    body = client.ok(client.wallet(activated.wallet, "whitelist"))
    roles = [(entry["role"], entry["protocol"]) for entry in body["whitelist"]]
    protocols = activated.activation()["selected_protocols"]
    assert roles[: len(protocols)] == [("protocol", name) for name in protocols]
    assert ("owner", "") in roles
    owner = next(e for e in body["whitelist"] if e["role"] == "owner")
    assert owner["address"] == activated.eoa
