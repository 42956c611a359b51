"""CatalogService through grpc_testing: chains, tokens and protocols."""

from __future__ import annotations

import asyncio

import grpc
import grpc_testing
import pytest
from sqlalchemy import Engine

from support.grpc_testing_harness import call, serve
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.chain.simulated.risk import Scenarios
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.risk.settings import RiskSettings
from yieldagent.domain.risk.survey import RiskSurvey
from yieldagent.servicers.catalog import CatalogServicer
from yieldagent.storage.risk import RiskStore
from yieldagent.v1 import catalog_pb2

SERVICE = catalog_pb2.DESCRIPTOR.services_by_name["CatalogService"]
METHODS = SERVICE.methods_by_name
BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"


@pytest.fixture
def server(chains: dict[int, MarketChain]) -> grpc_testing.Server:
    return serve(CatalogServicer(load_catalog(), chains), SERVICE)


def test_list_chains(server: grpc_testing.Server) -> None:
    response, _, code, _ = call(server, METHODS["ListChains"], catalog_pb2.ListChainsRequest())
    assert code is grpc.StatusCode.OK
    assert list(response.chain_ids) == [1, 137, 8453, 42161, 84532, 11155111]


def test_list_tokens_on_base(server: grpc_testing.Server) -> None:
    response, _, code, _ = call(
        server, METHODS["ListTokens"], catalog_pb2.ListTokensRequest(chain_id=8453)
    )
    assert code is grpc.StatusCode.OK
    (usdc,) = response.tokens
    assert (usdc.address, usdc.symbol, usdc.decimals) == (BASE_USDC, "USDC", 6)
    assert usdc.current_price == 1.0
    assert usdc.balance == 0.0


def test_list_tokens_on_an_unknown_chain_is_not_found(server: grpc_testing.Server) -> None:
    response, _, code, details = call(
        server, METHODS["ListTokens"], catalog_pb2.ListTokensRequest(chain_id=999)
    )
    assert code is grpc.StatusCode.NOT_FOUND
    assert response is None
    assert details == (
        "Chain 999 is not supported; supported chains: 1, 137, 8453, 42161, 84532, 11155111"
    )


@pytest.mark.parametrize("token", [BASE_USDC, BASE_USDC.lower(), "0x" + BASE_USDC[2:].upper()])
def test_list_protocols_for_base_usdc(server: grpc_testing.Server, token: str) -> None:
    response, _, code, _ = call(
        server,
        METHODS["ListProtocols"],
        catalog_pb2.ListProtocolsRequest(chain_id=8453, token=token),
    )
    assert code is grpc.StatusCode.OK
    assert [p.name for p in response.protocols] == [
        "aave",
        "compound",
        "moonwell",
        "morpho_gauntlet_usdc_prime",
    ]
    for protocol in response.protocols:
        assert protocol.chain_id == 8453
        assert protocol.is_active
        assert protocol.title and protocol.address.startswith("0x")
        assert protocol.HasField("apr") and 0 < protocol.apr < 30
        assert protocol.HasField("tvl") and protocol.tvl > 1_000_000
        assert all(pool.apy > 0 for pool in protocol.pools)
    assert [len(p.pools) for p in response.protocols] == [1, 1, 1, 3]  # a vault's markets


def test_protocol_figures_come_from_the_market(
    server: grpc_testing.Server, market: SimulatedMarket
) -> None:
    response, _, _, _ = call(
        server,
        METHODS["ListProtocols"],
        catalog_pb2.ListProtocolsRequest(chain_id=8453, token=BASE_USDC),
    )
    pools = {pool.protocol: pool for pool in market.pools_now(8453, BASE_USDC)}
    for protocol in response.protocols:
        pool = pools[protocol.name]
        assert protocol.tvl == pool.total_supply() / 10**6


def test_list_protocols_for_a_bad_token_address(server: grpc_testing.Server) -> None:
    response, _, code, details = call(
        server,
        METHODS["ListProtocols"],
        catalog_pb2.ListProtocolsRequest(chain_id=8453, token="0x1234"),
    )
    assert code is grpc.StatusCode.INVALID_ARGUMENT
    assert response is None
    assert details.startswith("token: value is not a valid Ethereum address")


def test_list_protocols_for_a_token_the_chain_does_not_have(
    server: grpc_testing.Server,
) -> None:
    polygon_usdc = "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359"
    _, _, code, details = call(
        server,
        METHODS["ListProtocols"],
        catalog_pb2.ListProtocolsRequest(chain_id=8453, token=polygon_usdc),
    )
    assert code is grpc.StatusCode.NOT_FOUND
    assert details == f"Token {polygon_usdc} is not supported on chain 8453"


def test_a_pool_the_risk_guards_exit_is_listed_inactive_with_its_reasons(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain]
) -> None:
    survey = RiskSurvey(RiskStore(engine), RiskSettings())
    server = serve(CatalogServicer(load_catalog(), chains, risk=survey), SERVICE)
    request = catalog_pb2.ListProtocolsRequest(chain_id=8453, token=BASE_USDC)
    response, _, _, _ = call(server, METHODS["ListProtocols"], request)
    assert {(p.risk.state, tuple(p.risk.reasons)) for p in response.protocols} == {("ok", ())}

    Scenarios(market).pause(8453, "compound", "supply")
    Scenarios(market).pause(8453, "moonwell", "withdraw")
    response, _, _, _ = call(server, METHODS["ListProtocols"], request)
    listed = {p.name: p for p in response.protocols}
    assert listed["compound"].risk.state == "exit"
    assert list(listed["compound"].risk.reasons) == ["supply is paused"]
    assert not listed["compound"].is_active
    assert listed["moonwell"].risk.state == "no_new_funds"
    assert listed["moonwell"].is_active
    assert listed["aave"].risk.state == "ok" and listed["aave"].is_active


def test_protocols_carry_their_yield_in_parts_that_reconcile(
    chains: dict[int, MarketChain], engine: Engine, market: SimulatedMarket
) -> None:
    from yieldagent.domain.market.yields import PoolYields, YieldRecorder
    from yieldagent.storage.yields import YieldStore

    catalog = load_catalog()
    store = YieldStore(engine)
    recorder = YieldRecorder(store, catalog, every_seconds=3600, keep_seconds=35 * 86_400)
    server = serve(
        CatalogServicer(catalog, chains, yields=PoolYields(store, catalog, 1000)), SERVICE
    )
    request = catalog_pb2.ListProtocolsRequest(chain_id=8453, token=BASE_USDC)

    response, _, code, _ = call(server, METHODS["ListProtocols"], request)
    assert code is grpc.StatusCode.OK
    for protocol in response.protocols:
        assert protocol.apy_base >= protocol.apr > 0  # compounded every second
        assert protocol.apy_total == protocol.apy_base + protocol.apy_rewards
        assert protocol.apy_net == protocol.apy_total * (1 - 1000 / 10_000)
        assert not protocol.HasField("apy_base_7d")  # nothing recorded yet: null, not 0
        assert not protocol.HasField("apy_net_30d")
    rewarded = {p.name: p.apy_rewards > 0 for p in response.protocols}
    assert rewarded == {
        "aave": False,
        "compound": False,
        "moonwell": True,
        "morpho_gauntlet_usdc_prime": True,
    }

    for _ in range(3):
        asyncio.run(recorder.record(8453, chains[8453]))
        market.advance(3600)
    response, _, code, _ = call(server, METHODS["ListProtocols"], request)
    assert code is grpc.StatusCode.OK
    for protocol in response.protocols:
        points = store.points(8453, BASE_USDC, protocol.name, None, None)
        assert len(points) == 3
        assert protocol.apy_base_7d == pytest.approx(sum(p.apy_base for p in points) / 3)
        assert protocol.apy_total_7d == protocol.apy_base_7d + protocol.apy_rewards_7d
        assert protocol.apy_net_7d == protocol.apy_total_7d * (1 - 1000 / 10_000)
        assert protocol.apy_base_30d == protocol.apy_base_7d


def test_protocol_supply_is_what_each_pool_holds(
    server: grpc_testing.Server, chains: dict[int, MarketChain]
) -> None:
    response, _, code, _ = call(
        server,
        METHODS["ListProtocolSupply"],
        catalog_pb2.ListProtocolSupplyRequest(chain_id=8453, token=BASE_USDC.lower()),
    )
    assert code is grpc.StatusCode.OK
    names = [p.protocol for p in response.protocols]
    quotes = asyncio.run(chains[8453].quotes(BASE_USDC, names))
    held = {quote.protocol: quote.total_supply for quote in quotes}
    assert names == sorted(held) and len(names) == 4
    for item in response.protocols:
        assert int(item.supply_amount) == held[item.protocol] > 0
        assert item.supply == held[item.protocol] / 10**6
        assert list(item.tokens) == [BASE_USDC]
