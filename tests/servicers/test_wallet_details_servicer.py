"""WalletDetailService through grpc_testing: each read in the shape the production client
reads, for the wallet's owner only."""

from __future__ import annotations

import asyncio

import grpc
import grpc_testing
import pytest
from sqlalchemy import Engine

from support.grpc_testing_harness import call, serve
from support.wallet_setup import BASE, BASE_USDC, EOA, OTHER_EOA, USDC, activated, make_lifecycle
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.books.wallets import Wallet
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.money.details import WalletDetails
from yieldagent.domain.money.lifecycle import Lifecycle
from yieldagent.domain.ports.credentials import Partner
from yieldagent.servicers.wallet_details import WalletDetailServicer
from yieldagent.storage.partners import PartnerStore
from yieldagent.v1 import wallet_details_pb2

SERVICE = wallet_details_pb2.DESCRIPTOR.services_by_name["WalletDetailService"]
METHODS = SERVICE.methods_by_name
PartnerKey = tuple[Partner, str]


@pytest.fixture
def lifecycle(engine: Engine, chains: dict[int, MarketChain]) -> Lifecycle:
    return make_lifecycle(engine, chains)


@pytest.fixture
def wallet(
    lifecycle: Lifecycle, engine: Engine, market: SimulatedMarket, partner: PartnerKey
) -> Wallet:
    return asyncio.run(activated(lifecycle, engine, market, partner[0].id, 1_000 * USDC))


def _server(lifecycle: Lifecycle, caller: Partner) -> grpc_testing.Server:
    return serve(WalletDetailServicer(WalletDetails(lifecycle.books)), SERVICE, caller)


def test_the_fee_is_a_fraction_and_an_amount(
    lifecycle: Lifecycle, wallet: Wallet, partner: PartnerKey
) -> None:
    server = _server(lifecycle, partner[0])
    request = wallet_details_pb2.GetFeeRequest(chain_id=BASE, wallet=wallet.address)
    reply, _, code, _ = call(server, METHODS["GetFee"], request)
    assert code is grpc.StatusCode.OK
    assert reply.percentage_fee == 0.1
    assert reply.fee == int(reply.fee_amount) / USDC
    assert (reply.charged_amount, reply.token) == ("0", BASE_USDC)


def test_the_limit_is_one_deposits_most_in_smallest_units(
    lifecycle: Lifecycle, wallet: Wallet, partner: PartnerKey
) -> None:
    server = _server(lifecycle, partner[0])
    method = METHODS["GetDepositLimit"]
    request = wallet_details_pb2.GetDepositLimitRequest(
        chain_id=BASE, wallet=wallet.address, eoa=EOA.lower()
    )
    reply, _, code, _ = call(server, method, request)
    assert code is grpc.StatusCode.OK
    assert (reply.limit, reply.limit_usd, reply.token) == (str(10**12), 1e6, BASE_USDC)
    request.eoa = OTHER_EOA
    _, _, code, details = call(server, method, request)
    assert code is grpc.StatusCode.INVALID_ARGUMENT and "not the owner" in details
    request.eoa = "0x12"
    _, _, code, _ = call(server, method, request)
    assert code is grpc.StatusCode.INVALID_ARGUMENT


def test_another_partner_reads_nothing(
    lifecycle: Lifecycle, wallet: Wallet, engine: Engine
) -> None:
    stranger, _ = PartnerStore(engine).create("stranger", frozenset({"wallets"}))
    server = _server(lifecycle, stranger)
    requests = {
        "GetFee": wallet_details_pb2.GetFeeRequest(chain_id=BASE, wallet=wallet.address),
        "GetDepositLimit": wallet_details_pb2.GetDepositLimitRequest(
            chain_id=BASE, wallet=wallet.address, eoa=EOA
        ),
    }
    for name, request in requests.items():
        reply, _, code, _ = call(server, METHODS[name], request)
        assert (reply, code) == (None, grpc.StatusCode.PERMISSION_DENIED), name
