"""The gRPC surface seen by internal services: real grpc.aio server, real stubs.

Canonical status codes with google.rpc details, standard health, reflection,
authentication from metadata, and graceful shutdown.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from google.api import httpbody_pb2
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_status import rpc_status
from sqlalchemy import Engine

from support.wallet_setup import BASE, BASE_USDC, USDC, fund
from yieldagent.catalog import load_catalog
from yieldagent.chain.signers.local import LocalKeySigner
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.composition.clock import SYSTEM_CLOCK
from yieldagent.composition.compose import build_server
from yieldagent.composition.grpc_server import ApiServer, mark_serving
from yieldagent.domain.agent.runs import Agent
from yieldagent.domain.agent.scheduler import AgentSettings
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.money.lifecycle import ActivationPlacement, Lifecycle, Policy
from yieldagent.domain.ports.credentials import Partner
from yieldagent.servicers.auth import Authenticator
from yieldagent.servicers.interceptor import EDGE_HEADER, ApiInterceptor
from yieldagent.servicers.method_policy import load_policies
from yieldagent.storage.operations import OperationStore
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.runs import RunStore
from yieldagent.storage.wallets import WalletStore
from yieldagent.v1 import (
    catalog_pb2,
    catalog_pb2_grpc,
    smart_accounts_pb2,
    smart_accounts_pb2_grpc,
    wallets_pb2,
    wallets_pb2_grpc,
)

OPERATOR = LocalKeySigner("0x" + "0a" * 32)


@pytest.fixture
async def served(
    engine: Engine, chains: dict[int, MarketChain]
) -> AsyncIterator[tuple[ApiServer, grpc.aio.Channel]]:
    lifecycle = Lifecycle(
        WalletStore(engine),
        OperationStore(engine),
        chains,
        load_catalog(),
        Policy(fee_bps=1000, max_deposit_usd=1e6, fee_collector=OPERATOR.address),
        SYSTEM_CLOCK,
    )
    agent = Agent(lifecycle, WalletStore(engine), RunStore(engine), AgentSettings())
    api = build_server(engine, OPERATOR, chains, lifecycle, agent, "127.0.0.1:0")
    await api.server.start()
    await mark_serving(api, True)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{api.port}")
    yield api, channel
    await channel.close()
    await api.server.stop(0)


def _credentials(partner: tuple[Partner, str]) -> tuple[tuple[str, str], ...]:
    return (("x-partner-name", partner[0].name), ("x-partner-api-key", partner[1]))


def _details(error: grpc.aio.AioRpcError) -> dict[str, Any]:
    status = rpc_status.from_call(error)
    assert status is not None, "google.rpc.Status details are missing"
    found: dict[str, Any] = {}
    for packed in status.details:
        for kind in (error_details_pb2.ErrorInfo, error_details_pb2.BadRequest):
            if packed.Is(kind.DESCRIPTOR):
                message = kind()
                packed.Unpack(message)
                found[kind.DESCRIPTOR.name] = message
    return found


async def test_success_carries_no_rest_hints(served: Any) -> None:
    _, channel = served
    call = catalog_pb2_grpc.CatalogServiceStub(channel).ListProtocols(
        catalog_pb2.ListProtocolsRequest(
            chain_id=8453, token="0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
        )
    )
    response = await call
    assert len(response.protocols) == 4
    metadata = await call.initial_metadata()
    assert not [key for key, _ in metadata if key.startswith("x-yieldagent")]


async def test_malformed_input_is_invalid_argument_with_field_violations(
    served: Any, partner: tuple[Partner, str]
) -> None:
    _, channel = served
    stub = smart_accounts_pb2_grpc.SmartAccountServiceStub(channel)
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await stub.CreateSmartAccount(
            smart_accounts_pb2.CreateSmartAccountRequest(eoa="0x12", chain=5),
            metadata=_credentials(partner),
        )
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = _details(raised.value)
    assert details["ErrorInfo"].reason == "INVALID_INPUT"
    assert details["ErrorInfo"].domain == "yieldagent.v1"
    violations = details["BadRequest"].field_violations
    assert [(v.field, v.reason) for v in violations] == [
        ("eoa", "value_error.address"),
        ("chain", "literal_error"),
    ]
    trailing = raised.value.trailing_metadata() or ()
    assert not [key for key, _ in trailing if key.startswith("x-yieldagent")]


@pytest.mark.parametrize(
    ("metadata", "code"),
    [
        ((), grpc.StatusCode.UNAUTHENTICATED),
        (
            (("x-partner-name", "acme"), ("x-partner-api-key", "wrong")),
            grpc.StatusCode.UNAUTHENTICATED,
        ),
    ],
)
async def test_credentials_are_checked(
    served: Any, partner: tuple[Partner, str], metadata: Any, code: grpc.StatusCode
) -> None:
    _, channel = served
    stub = smart_accounts_pb2_grpc.SmartAccountServiceStub(channel)
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await stub.CreateSmartAccount(
            smart_accounts_pb2.CreateSmartAccountRequest(eoa="0x" + "11" * 20, chain=8453),
            metadata=metadata,
        )
    assert raised.value.code() == code
    assert _details(raised.value)["ErrorInfo"].reason == "AUTHENTICATION_FAILED"


async def test_a_disabled_partner_is_permission_denied(
    served: Any, partner: tuple[Partner, str], partners: Any
) -> None:
    _, channel = served
    partners.disable("acme")
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await smart_accounts_pb2_grpc.SmartAccountServiceStub(channel).CreateSmartAccount(
            smart_accounts_pb2.CreateSmartAccountRequest(eoa="0x" + "11" * 20, chain=8453),
            metadata=_credentials(partner),
        )
    assert raised.value.code() == grpc.StatusCode.PERMISSION_DENIED


async def test_not_found(served: Any, partner: tuple[Partner, str]) -> None:
    _, channel = served
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await catalog_pb2_grpc.CatalogServiceStub(channel).ListTokens(
            catalog_pb2.ListTokensRequest(chain_id=5)
        )
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await wallets_pb2_grpc.WalletServiceStub(channel).RunAgent(
            wallets_pb2.RunAgentRequest(chain_id=8453, wallet="0x" + "11" * 20),
            metadata=_credentials(partner),
        )
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND  # no such wallet


async def test_standard_health_follows_the_server_state(served: Any) -> None:
    api, channel = served
    stub = health_pb2_grpc.HealthStub(channel)
    for service in ("", "yieldagent.v1.WalletService"):
        reply = await stub.Check(health_pb2.HealthCheckRequest(service=service))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    await mark_serving(api, False)
    reply = await stub.Check(health_pb2.HealthCheckRequest(service=""))
    assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING


async def test_reflection_lists_every_service(served: Any) -> None:
    _, channel = served
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)

    async def ask() -> AsyncIterator[reflection_pb2.ServerReflectionRequest]:
        yield reflection_pb2.ServerReflectionRequest(list_services="")

    async for reply in stub.ServerReflectionInfo(ask()):
        names = {service.name for service in reply.list_services_response.service}
        break
    assert {
        "yieldagent.v1.HealthcheckService",
        "yieldagent.v1.CatalogService",
        "yieldagent.v1.SmartAccountService",
        "yieldagent.v1.WalletService",
        "yieldagent.v1.RewardService",
        "yieldagent.v1.StatsService",
        "yieldagent.v1.OptimizerService",
        "grpc.health.v1.Health",
    } <= names


class SlowWallets(wallets_pb2_grpc.WalletServiceServicer):
    """GetWallet takes a while, so that calls are surely in flight at shutdown."""

    def __init__(self) -> None:
        self.started = 0
        self.all_started = asyncio.Event()

    async def GetWallet(self, request: Any, context: Any) -> wallets_pb2.Wallet:
        self.started += 1
        if self.started == 10:
            self.all_started.set()
        await asyncio.sleep(0.5)
        return wallets_pb2.Wallet(wallet=request.wallet)


async def test_graceful_shutdown_lets_running_calls_finish(engine: Engine) -> None:
    slow = SlowWallets()
    server = grpc.aio.server(
        interceptors=[ApiInterceptor(load_policies(), Authenticator(PartnerStore(engine)))]
    )
    wallets_pb2_grpc.add_WalletServiceServicer_to_server(slow, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    stub = wallets_pb2_grpc.WalletServiceStub(channel)
    calls = [
        asyncio.ensure_future(stub.GetWallet(wallets_pb2.GetWalletRequest(wallet=str(i))))
        for i in range(10)
    ]
    await asyncio.wait_for(slow.all_started.wait(), 5)
    await server.stop(grace=5)
    replies = await asyncio.gather(*calls)  # any call cut off raises here
    assert [r.wallet for r in replies] == [str(i) for i in range(10)]
    with pytest.raises(grpc.aio.AioRpcError):
        await stub.GetWallet(wallets_pb2.GetWalletRequest(wallet="late"), timeout=1)
    await channel.close()


async def test_the_wallet_flow_over_grpc(
    served: Any, partner: tuple[Partner, str], engine: Engine, market: SimulatedMarket
) -> None:
    _, channel = served
    funded = fund(engine, market, partner[0].id, 1_000 * USDC)
    stub = wallets_pb2_grpc.WalletServiceStub(channel)
    credentials = _credentials(partner)
    activation = wallets_pb2.ActivateWalletRequest(
        chain_id=BASE,
        wallet=funded.address,
        eoa=funded.eoa,
        initial_token=BASE_USDC,
        selected_protocols=["aave", "compound"],
        tx_hash=funded.tx_hash,
    )
    reply = await stub.ActivateWallet(activation, metadata=credentials)
    assert reply.message == "Agent activated successfully"

    wallet = await stub.GetWallet(
        wallets_pb2.GetWalletRequest(chain_id=BASE, wallet=funded.address)
    )
    assert wallet.status == "activated"
    assert wallet.deposits[0].amount == str(1_000 * USDC)  # a decimal string on gRPC
    assert not wallet.HasField("last_deactivation_date")

    withdrawn = await stub.Withdraw(
        wallets_pb2.WithdrawRequest(chain_id=BASE, wallet=funded.address, amount=str(100 * USDC)),
        metadata=credentials,
    )
    [detail] = withdrawn.withdraw_details
    assert int(detail.principal_amount) + int(detail.yield_amount) == 100 * USDC
    # The read after a write shows it: a reply kept for the wallet's old version is not.
    wallet = await stub.GetWallet(
        wallets_pb2.GetWalletRequest(chain_id=BASE, wallet=funded.address.lower())
    )
    assert [w.amount for w in wallet.withdraws] == [str(100 * USDC)]
    again = await stub.GetWallet(
        wallets_pb2.GetWalletRequest(chain_id=BASE, wallet=funded.eoa, eoa=True)
    )
    assert again == wallet

    await stub.DeactivateWallet(
        wallets_pb2.DeactivateWalletRequest(chain_id=BASE, wallet=funded.address),
        metadata=credentials,
    )
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await stub.Withdraw(
            wallets_pb2.WithdrawRequest(chain_id=BASE, wallet=funded.address, amount="1"),
            metadata=credentials,
        )
    assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert _details(raised.value)["ErrorInfo"].reason == "CONFLICT"


async def test_the_wallet_read_keeps_its_json_for_rest_apart_from_its_message(
    served: Any, partner: tuple[Partner, str], engine: Engine, market: SimulatedMarket
) -> None:
    """A REST call (Envoy marks it) gets the contract's JSON in an HttpBody; a gRPC call of
    the same wallet at the same version, after it, still gets the Wallet message."""
    _, channel = served
    funded = fund(engine, market, partner[0].id, 1_000 * USDC)
    stub = wallets_pb2_grpc.WalletServiceStub(channel)
    await stub.ActivateWallet(
        wallets_pb2.ActivateWalletRequest(
            chain_id=BASE,
            wallet=funded.address,
            eoa=funded.eoa,
            initial_token=BASE_USDC,
            selected_protocols=["aave"],
            tx_hash=funded.tx_hash,
        ),
        metadata=_credentials(partner),
    )
    request = wallets_pb2.GetWalletRequest(chain_id=BASE, wallet=funded.address)
    as_rest = channel.unary_unary(
        "/yieldagent.v1.WalletService/GetWallet",
        request_serializer=wallets_pb2.GetWalletRequest.SerializeToString,
        response_deserializer=httpbody_pb2.HttpBody.FromString,
    )
    for _ in range(2):  # built, then kept
        body = await as_rest(request, metadata=((EDGE_HEADER, "rest"),))
        assert body.content_type == "application/json"
        document = json.loads(body.data)
        assert document["deposits"][0]["amount"] == 1_000 * USDC  # a JSON integer
        assert document["last_deactivation_date"] is None
    for _ in range(2):
        wallet = await stub.GetWallet(request)
        assert wallet.deposits[0].amount == str(1_000 * USDC)
        assert not wallet.HasField("last_deactivation_date")


async def test_a_background_activation_answers_with_the_wallet_activating(
    partner: tuple[Partner, str], engine: Engine, market: SimulatedMarket, chains: Any
) -> None:
    lifecycle = Lifecycle(
        WalletStore(engine),
        OperationStore(engine),
        chains,
        load_catalog(),
        Policy(fee_bps=1000, max_deposit_usd=1e6, fee_collector=OPERATOR.address),
        SYSTEM_CLOCK,
        placement=ActivationPlacement.BACKGROUND,
        make_due=RunStore(engine).schedule,
    )
    agent = Agent(lifecycle, WalletStore(engine), RunStore(engine), AgentSettings())
    api = build_server(engine, OPERATOR, chains, lifecycle, agent, "127.0.0.1:0")
    await api.server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{api.port}")
    funded = fund(engine, market, partner[0].id, 1_000 * USDC)
    stub = wallets_pb2_grpc.WalletServiceStub(channel)
    activation = wallets_pb2.ActivateWalletRequest(
        chain_id=BASE,
        wallet=funded.address,
        eoa=funded.eoa,
        initial_token=BASE_USDC,
        selected_protocols=["aave", "compound"],
        tx_hash=funded.tx_hash,
    )
    try:
        reply = await stub.ActivateWallet(activation, metadata=_credentials(partner))
        wallet = await stub.GetWallet(
            wallets_pb2.GetWalletRequest(chain_id=BASE, wallet=funded.address)
        )
        assert reply.message == "Agent activated successfully"
        assert reply.wallet == funded.address
        assert wallet.status == "activating"
        assert wallet.deposits[0].amount == str(1_000 * USDC)

        await lifecycle.finish_activations()
        wallet = await stub.GetWallet(
            wallets_pb2.GetWalletRequest(chain_id=BASE, wallet=funded.address)
        )
        assert wallet.status == "activated"
    finally:
        await channel.close()
        await api.server.stop(0)
