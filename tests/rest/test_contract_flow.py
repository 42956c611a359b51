"""The partner flow, each answer checked against the OpenAPI document by schemathesis.

Generated requests rarely get past the service's checks, so the success answers of
most operations (201, 204, a replayed answer, a 409) come from this flow of real
calls: every operation of the document is called at least once, and each response
must conform (status, content type, headers and body) and be no 5xx.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import pytest
import schemathesis
from eth_utils.address import to_checksum_address
from schemathesis import APIOperation

from support.contract import CONFORMANCE, record
from support.funded import PROTOCOLS, USDC
from support.service import RunningService
from yieldagent.chain.simulated.market import SimulatedMarket

CHAIN = 8453
MONTH = 30 * 24 * 3600
_eoas = itertools.count(0xC0_0000)


@pytest.fixture(scope="module")
def document(api: RunningService) -> Any:
    return schemathesis.openapi.from_url(f"http://127.0.0.1:{api.http_port}/api/v1/openapi.json")


class Flow:
    """Calls operations by label and checks each answer against the document."""

    def __init__(self, document: Any, headers: dict[str, str]) -> None:
        self._document = document
        self._headers = headers
        self.called: set[str] = set()
        self.answered: dict[str, Counter[int]] = {}

    def call(self, label: str, status: int | tuple[int, ...], **parts: Any) -> Any:
        """Calls one operation with ``parts`` (path_parameters, query, body, headers)."""
        operation: APIOperation[Any, Any, Any, Any] | None = self._document.find_operation_by_label(
            label
        )
        assert operation is not None, label
        headers = {**self._headers, **parts.pop("headers", {})}
        case = operation.Case(headers=headers, **parts)
        response = case.call_and_validate(checks=CONFORMANCE)
        expected = status if isinstance(status, tuple) else (status,)
        assert response.status_code in expected, (label, response.text)
        self.called.add(label)
        self.answered.setdefault(f"flow {label}", Counter())[response.status_code] += 1
        return response


def test_every_operation_answers_as_documented_in_the_partner_flow(
    document: Any, make_partner: Any, world: SimulatedMarket, record_property: Any
) -> None:
    flow = Flow(document, make_partner())
    eoa = to_checksum_address(f"0x{next(_eoas):040x}")
    wallet_path = {"chain_id": CHAIN, "wallet": ""}

    flow.call("GET /api/v1/healthcheck", 200)
    flow.call("GET /api/v1/chains", 200)
    flow.call("GET /api/v1/{chain_id}/tokens", 200, path_parameters={"chain_id": CHAIN})
    flow.call(
        "GET /api/v1/{chain_id}/{token}/protocols",
        200,
        path_parameters={"chain_id": CHAIN, "token": USDC},
    )

    # A smart account; the same key again replays the first answer.
    account = {"eoa": eoa, "chain": CHAIN}
    key = {"Idempotency-Key": f"contract-{eoa}"}
    created = flow.call("POST /api/v1/proxy/zerodev/smart-accounts", 200, body=account, headers=key)
    replayed = flow.call(
        "POST /api/v1/proxy/zerodev/smart-accounts", 200, body=account, headers=key
    )
    assert replayed.headers.get("idempotent-replayed") == ["true"]
    assert replayed.json() == created.json()
    flow.call("GET /api/v1/proxy/zerodev/smart-accounts", 200, query=account)
    wallet = created.json()["smartAccount"]
    wallet_path["wallet"] = wallet

    # Activation (201) of a funded account, then a month on the simulated chain.
    deposit = world.deposit_from(CHAIN, USDC, eoa, wallet, 2_000 * 10**6)
    activation = {
        "wallet": wallet,
        "eoa": eoa,
        "initial_token": USDC,
        "selected_protocols": PROTOCOLS,
        "tx_hash": deposit.tx_hash,
    }
    flow.call(
        "POST /api/v1/{chain_id}/wallets", 201, path_parameters={"chain_id": CHAIN}, body=activation
    )
    world.advance(MONTH)

    reads = (
        "GET /api/v1/{chain_id}/wallets/{wallet}",
        "GET /api/v1/{chain_id}/wallets/{wallet}/transactions",
        "GET /api/v1/{chain_id}/wallets/{wallet}/apr",
        "GET /api/v1/{chain_id}/rewards/{wallet}",
        "GET /api/v1/{chain_id}/rewards/{wallet}/history",
    )
    for label in reads:
        flow.call(label, 200, path_parameters=wallet_path)
    flow.call("GET /api/v1/{chain_id}/stats", 200, path_parameters={"chain_id": CHAIN})

    # Money moves, settings (204) and a top-up (201).
    flow.call(
        "POST /api/v1/{chain_id}/wallets/{wallet}:withdraw",
        200,
        path_parameters=wallet_path,
        body={"amount": 100 * 10**6},
    )
    flow.call(
        "PUT /api/v1/{chain_id}/wallets/{wallet}/protocols",
        204,
        path_parameters=wallet_path,
        body=PROTOCOLS,
    )
    flow.call(
        "POST /api/v1/{chain_id}/rewards/{wallet}",
        204,
        path_parameters=wallet_path,
        body={"is_staked": True},
    )
    top_up = world.deposit_from(CHAIN, USDC, eoa, wallet, 300 * 10**6)
    flow.call(
        "POST /api/v1/{chain_id}/wallets/{wallet}:top-up",
        201,
        path_parameters=wallet_path,
        query={"tx_hash": top_up.tx_hash},
    )
    flow.call("POST /api/v1/{chain_id}/wallets/{wallet}:run", 200, path_parameters=wallet_path)
    # 400 when nothing accrued where the funds sit.
    flow.call(
        "POST /api/v1/{chain_id}/wallets/{wallet}:claim-rewards",
        (200, 400),
        path_parameters=wallet_path,
    )
    flow.call(
        "POST /api/v1/optimizer/{chain_id}/optimize",
        200,
        path_parameters={"chain_id": CHAIN},
        body={
            "total_capital": 1_000 * 10**6,
            "token_address": USDC,
            "protocols": PROTOCOLS,
        },
    )

    # Deactivation; a second one conflicts (409).
    flow.call(
        "POST /api/v1/{chain_id}/wallets/{wallet}:deactivate", 200, path_parameters=wallet_path
    )
    flow.call(
        "POST /api/v1/{chain_id}/wallets/{wallet}:deactivate", 409, path_parameters=wallet_path
    )
    flow.call("GET /api/v1/{chain_id}/wallets/{wallet}", 200, path_parameters=wallet_path)

    every = {
        f"{verb.upper()} {path}"
        for path, verbs in document.raw_schema["paths"].items()
        for verb in verbs
    }
    assert flow.called == every
    record(record_property, flow.answered)
