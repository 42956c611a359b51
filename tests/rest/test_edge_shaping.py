"""The REST edge's one mechanism, end to end through a real Envoy.

A test double of WalletService sits behind the real interceptor, the real
method policies and the real envoy/rest.lua, so each rule of the edge is seen
on the wire: statuses 201 and 204, big integers as JSON numbers, nulls for unset
optional fields, JSON integers accepted into decimal-string fields, and error bodies.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from sqlalchemy import Engine

from support.service import RunningService, free_port
from yieldagent.composition.edge import EnvoyProcess
from yieldagent.config import load_settings
from yieldagent.domain.errors import Conflict, InvalidInput
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.servicers.auth import Authenticator
from yieldagent.servicers.interceptor import ApiInterceptor
from yieldagent.servicers.method_policy import load_policies
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.partners import PartnerStore
from yieldagent.v1 import types_pb2, wallets_pb2, wallets_pb2_grpc

HUGE = "115792089237316195423570985008687907853269984665640564039457584007913129639935"  # 2**256-1


class FakeWallets(wallets_pb2_grpc.WalletServiceServicer):
    """Answers with fixed messages and records what it received."""

    def __init__(self) -> None:
        self.received: list[Any] = []

    async def GetWallet(self, request: Any, context: Any) -> wallets_pb2.Wallet:
        if request.wallet == "busy":
            raise Conflict("Agent is running")
        return wallets_pb2.Wallet(
            wallet=request.wallet,
            status="activated",
            deposits=[
                types_pb2.Deposit(
                    amount=HUGE,
                    token_type="0xT",
                    date="d",
                    tx_hash="0xh",
                    block_number=18_446_744_073_709_551_615,
                ),
                types_pb2.Deposit(amount="-5", token_type="0xT", date="d", tx_hash="0xh"),
            ],
            withdraws=[
                types_pb2.WithdrawDetail(
                    token="0xT", amount="7", principal_amount="5", yield_amount="2", fee_amount="0"
                )
            ],
            selected_protocols=["aave", "12"],
            last_reactivation_date="2026-01-01T00:00:00Z",
        )

    async def ActivateWallet(self, request: Any, context: Any) -> Any:
        self.received.append(request)
        if request.eoa == "bad":
            raise InvalidInput.field(("constraints", 0, "params", "max_amount"), "too big")
        return wallets_pb2.ActivateWalletResponse(
            message="Agent activated successfully", wallet=request.wallet
        )

    async def Withdraw(self, request: Any, context: Any) -> Any:
        self.received.append(request)
        return wallets_pb2.WithdrawResponse(date="d", total_value=1.5)

    async def UpdateProtocols(self, request: Any, context: Any) -> Any:
        self.received.append(request)
        return wallets_pb2.UpdateProtocolsResponse()


@pytest.fixture(scope="module")
def edge(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[RunningService, FakeWallets, dict[str, str]]]:
    directory: Path = tmp_path_factory.mktemp("edge")
    url = f"sqlite:///{directory / 'edge.db'}"
    engine: Engine = create_db_engine(url)
    migrate(engine)
    _, key = PartnerStore(engine).create("edge", PERMISSIONS)
    headers = {"X-Partner-Name": "edge", "X-Partner-API-Key": key}
    fake = FakeWallets()
    ready = threading.Event()
    state: dict[str, Any] = {}

    async def serve() -> None:
        server = grpc.aio.server(
            interceptors=[ApiInterceptor(load_policies(), Authenticator(PartnerStore(engine)))]
        )
        wallets_pb2_grpc.add_WalletServiceServicer_to_server(fake, server)
        state["port"] = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        state["loop"], state["stop"] = asyncio.get_running_loop(), asyncio.Event()
        ready.set()
        await state["stop"].wait()
        await server.stop(0)

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(10)
    http_port = free_port()
    settings = load_settings(
        {
            "YIELDAGENT_DATA_DIR": str(directory),
            "YIELDAGENT_HTTP_PORT": str(http_port),
            "YIELDAGENT_CLIENT_RATE_LIMIT": "0",
        }
    )
    envoy = EnvoyProcess(settings, state["port"])
    envoy.start()
    asyncio.run(envoy.wait_ready())
    try:
        yield RunningService(http_port, f"127.0.0.1:{state['port']}", url, directory), fake, headers
    finally:
        envoy.stop()
        state["loop"].call_soon_threadsafe(state["stop"].set)
        thread.join(10)
        engine.dispose()


WALLET = "/api/v1/8453/wallets/0x1111111111111111111111111111111111111111"


def test_64_bit_and_arbitrary_precision_integers_are_json_numbers(edge: Any) -> None:
    api, _, _ = edge
    response = api.request("GET", WALLET)
    assert response.status == 200
    text = response.body.decode()
    assert f'"amount":{HUGE}' in text
    assert '"block_number":18446744073709551615' in text
    body = response.json()
    assert body["deposits"][0]["amount"] == 2**256 - 1
    assert body["deposits"][1]["amount"] == -5
    assert body["withdraws"][0]["principal_amount"] == 5
    assert body["withdraws"][0]["amount"] == "7"  # a string in the contract, so a string here
    assert body["selected_protocols"] == ["aave", "12"]  # strings elsewhere stay strings


def test_unset_optional_fields_are_null_and_set_ones_keep_their_value(edge: Any) -> None:
    api, _, _ = edge
    body = api.request("GET", WALLET).json()
    assert body["last_deactivation_date"] is None
    assert body["last_reactivation_date"] == "2026-01-01T00:00:00Z"
    assert body["deposits"][1]["block_number"] is None
    assert body["withdraws"][0]["tx_hash"] is None
    assert body["withdraws"][0]["block_number"] is None


def test_no_grpc_or_hint_header_reaches_the_client(edge: Any) -> None:
    api, _, headers = edge
    for response in (
        api.request("GET", WALLET),
        api.request("GET", "/api/v1/8453/wallets/busy"),
        api.request("POST", "/api/v1/8453/wallets", {"eoa": "bad"}, headers),
        api.request("GET", "/api/v1/nowhere"),
    ):
        leaked = [h for h in response.headers if h.startswith(("grpc-", "x-yieldagent"))]
        assert leaked == [], response.headers


def test_activation_answers_201_and_integers_reach_string_fields(edge: Any) -> None:
    api, fake, headers = edge
    body = {
        "wallet": "0xw",
        "eoa": "0xe",
        "selected_protocols": ["aave"],
        "constraints": [
            {
                "kind": "max_allocation_amount_per_protocol",
                "params": {
                    "protocol": "aave",
                    "max_amount": 10**30,
                    "max_ratio": 0.5,
                    "min_protocols": 2,
                },
            }
        ],
    }
    response = api.request("POST", "/api/v1/8453/wallets", body, headers)
    assert response.status == 201
    assert response.json() == {"message": "Agent activated successfully", "wallet": "0xw"}
    params = fake.received[-1].constraints[0].params
    assert params.max_amount == str(10**30)
    assert params.max_ratio == 0.5
    assert params.min_protocols == 2


def test_withdraw_accepts_an_integer_amount_beyond_64_bits(edge: Any) -> None:
    api, fake, headers = edge
    raw = b'{"amount": 123456789012345678901234567890}'
    response = api.request("POST", WALLET + ":withdraw", headers=headers, raw=raw)
    assert response.status == 200
    assert fake.received[-1].amount == "123456789012345678901234567890"
    assert response.json()["withdraw_details"] == []


def test_a_fractional_amount_is_a_422_on_that_field(edge: Any) -> None:
    api, _, headers = edge
    response = api.request("POST", WALLET + ":withdraw", {"amount": 1.5}, headers)
    assert response.status == 422
    [item] = response.json()["detail"]
    assert item["loc"] == ["body", "amount"]


def test_protocol_update_takes_a_bare_array_and_answers_204_with_no_body(edge: Any) -> None:
    api, fake, headers = edge
    response = api.request("PUT", WALLET + "/protocols", ["aave", "compound"], headers)
    assert response.status == 204
    assert response.body == b""
    assert list(fake.received[-1].protocols) == ["aave", "compound"]


def test_input_errors_are_422_with_the_location_of_the_field(edge: Any) -> None:
    api, _, headers = edge
    response = api.request("POST", "/api/v1/8453/wallets", {"eoa": "bad"}, headers)
    assert response.status == 422
    assert response.error() == {
        "detail": [
            {
                "loc": ["body", "constraints", 0, "params", "max_amount"],
                "msg": "too big",
                "type": "value_error",
            }
        ]
    }


def test_type_errors_become_422_naming_the_field(edge: Any) -> None:
    api, _, headers = edge
    body = {"constraints": [{"kind": "min_protocols", "params": {"min_protocols": "two"}}]}
    response = api.request("POST", "/api/v1/8453/wallets", body, headers)
    assert response.status == 422
    [item] = response.json()["detail"]
    assert item["loc"] == ["body", "constraints", 0, "params", "min_protocols"]
    assert item["type"] == "int_type"  # rest_check.lua, before the transcoder reads it


def test_transcoder_value_errors_become_422_naming_the_field(edge: Any) -> None:
    api, _, headers = edge
    body = {"constraints": [{"kind": "min_protocols", "params": {"min_protocols": 2**40}}]}
    response = api.request("POST", "/api/v1/8453/wallets", body, headers)
    assert response.status == 422
    [item] = response.json()["detail"]
    assert item["loc"] == ["body", "constraints", 0, "params", "min_protocols"]
    assert item["type"] == "type_error"  # out of int32's range: the transcoder's word


def test_malformed_json_is_a_422(edge: Any) -> None:
    api, _, headers = edge
    response = api.request("POST", "/api/v1/8453/wallets", headers=headers, raw=b'{"eoa": ')
    assert response.status == 422
    [item] = response.json()["detail"]
    assert item["loc"] == ["body"] and item["type"] == "json_invalid"


def test_domain_refusals_keep_their_status_and_detail(edge: Any) -> None:
    api, _, _ = edge
    response = api.request("GET", "/api/v1/8453/wallets/busy")
    assert response.status == 409
    assert response.error() == {"detail": "Agent is running"}
    assert response.headers["content-type"] == "application/json"


def test_unknown_paths_and_verbs_are_404_with_a_detail(edge: Any) -> None:
    api, _, headers = edge
    for method, path in (
        ("GET", "/api/v1/nowhere"),
        ("POST", WALLET + ":explode"),
        ("GET", "/"),
        ("DELETE", WALLET),
    ):
        response = api.request(method, path, headers=headers)
        assert response.status == 404, (method, path)
        assert response.error() == {"detail": "Not Found"}


def test_methods_without_a_servicer_answer_501(edge: Any) -> None:
    api, _, headers = edge
    response = api.request("POST", WALLET + ":run", headers=headers)
    assert response.status == 501
    assert "not implemented" in response.json()["detail"]


def test_percent_encoded_path_values_reach_the_service_decoded(edge: Any) -> None:
    api, _, _ = edge
    response = api.request("GET", "/api/v1/8453/wallets/%C3%A9t%C3%A9")
    assert response.status == 200
    assert json.loads(response.body)["wallet"] == "été"
