"""WalletDetailService through grpc_testing: each read in the shape the production client
reads, for the wallet's owner only."""

from __future__ import annotations

import asyncio

import grpc
import grpc_testing
import pytest
from sqlalchemy import Engine

from support.grpc_testing_harness import call, serve
from support.wallet_setup import (
    BASE,
    BASE_USDC,
    EOA,
    FEE,
    OTHER_EOA,
    USDC,
    activated,
    make_lifecycle,
    stored,
    top_up_deposit,
)
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.books.executions import Executions
from yieldagent.domain.books.wallets import Wallet
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.money.details import WalletDetails
from yieldagent.domain.money.lifecycle import Lifecycle
from yieldagent.domain.ports.credentials import Partner
from yieldagent.servicers.catalog import CatalogServicer
from yieldagent.servicers.wallet_details import WalletDetailServicer
from yieldagent.storage.events import EventStore
from yieldagent.storage.operations import OperationStore
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.wallets import WalletStore
from yieldagent.v1 import types_pb2, wallet_details_pb2

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


def _server(lifecycle: Lifecycle, caller: Partner, engine: Engine) -> grpc_testing.Server:
    executions = Executions(
        WalletStore(engine), OperationStore(engine), EventStore(engine), load_catalog()
    )
    listing = CatalogServicer(load_catalog(), {BASE: lifecycle.books.chain(BASE)})
    servicer = WalletDetailServicer(WalletDetails(lifecycle.books), executions, listing.protocols)
    return serve(servicer, SERVICE, caller)


def test_the_fee_is_a_fraction_and_an_amount(
    lifecycle: Lifecycle, wallet: Wallet, partner: PartnerKey, engine: Engine
) -> None:
    server = _server(lifecycle, partner[0], engine)
    request = wallet_details_pb2.GetFeeRequest(chain_id=BASE, wallet=wallet.address)
    reply, _, code, _ = call(server, METHODS["GetFee"], request)
    assert code is grpc.StatusCode.OK
    assert reply.percentage_fee == 0.1
    assert reply.fee == int(reply.fee_amount) / USDC
    assert (reply.charged_amount, reply.token) == ("0", BASE_USDC)


def test_the_limit_is_one_deposits_most_in_smallest_units(
    lifecycle: Lifecycle, wallet: Wallet, partner: PartnerKey, engine: Engine
) -> None:
    server = _server(lifecycle, partner[0], engine)
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
    server = _server(lifecycle, stranger, engine)
    requests = {
        "GetFee": wallet_details_pb2.GetFeeRequest(chain_id=BASE, wallet=wallet.address),
        "GetDepositLimit": wallet_details_pb2.GetDepositLimitRequest(
            chain_id=BASE, wallet=wallet.address, eoa=EOA
        ),
        "ListExecutions": wallet_details_pb2.ListExecutionsRequest(
            chain_id=BASE, wallet=wallet.address
        ),
        "ListWalletLogs": wallet_details_pb2.ListWalletLogsRequest(
            chain_id=BASE, wallet=wallet.address
        ),
        "ListDeposits": wallet_details_pb2.ListDepositsRequest(
            chain_id=BASE, wallet=wallet.address
        ),
        "ListWalletProtocols": wallet_details_pb2.ListWalletProtocolsRequest(
            chain_id=BASE, wallet=wallet.address
        ),
        "GetConstraints": wallet_details_pb2.GetConstraintsRequest(
            chain_id=BASE, wallet=wallet.address
        ),
        "UpdateConstraints": wallet_details_pb2.UpdateConstraintsRequest(
            chain_id=BASE, wallet=wallet.address
        ),
        "GetWhitelist": wallet_details_pb2.GetWhitelistRequest(
            chain_id=BASE, wallet=wallet.address
        ),
    }
    for name, request in requests.items():
        reply, _, code, _ = call(server, METHODS[name], request)
        assert (reply, code) == (None, grpc.StatusCode.PERMISSION_DENIED), name


def test_executions_are_the_wallets_operations_with_plans_and_steps(
    lifecycle: Lifecycle, wallet: Wallet, partner: PartnerKey, engine: Engine
) -> None:
    asyncio.run(lifecycle.withdraw(partner[0].id, BASE, wallet.address, 100 * USDC))
    stored = OperationStore(engine).of_wallet(wallet.id)
    server = _server(lifecycle, partner[0], engine)
    request = wallet_details_pb2.ListExecutionsRequest(
        chain_id=BASE, wallet=wallet.address, sort="date_asc"
    )
    reply, _, code, _ = call(server, METHODS["ListExecutions"], request)
    assert code is grpc.StatusCode.OK
    assert [e.id for e in reply.executions] == [o.id for o in stored]
    assert [e.execution_type for e in reply.executions] == ["activate", "withdraw"]
    assert reply.pagination.total_items == 2 and reply.pagination.current_page == 1
    for execution, operation in zip(reply.executions, stored, strict=True):
        assert execution.status == "success" and execution.outcome == "completed"
        assert execution.HasField("finished_at") and execution.created_at
        assert [(m.action, m.protocol, int(m.amount)) for m in execution.execution_plan.moves] == [
            (str(m.action), m.protocol, m.amount) for m in operation.moves
        ]
        assert len(execution.transactions) == len(operation.steps)
        for sent, step in zip(execution.transactions, operation.steps, strict=True):
            assert (sent.transaction_hash, sent.status) == (step.tx_hash, "approved")
            assert sent.correlation_id == operation.id and int(sent.amount) == step.amount
    newest, _, _, _ = call(
        server,
        METHODS["ListExecutions"],
        wallet_details_pb2.ListExecutionsRequest(chain_id=BASE, wallet=wallet.address, limit=1),
    )
    assert [e.execution_type for e in newest.executions] == ["withdraw"]
    assert (newest.pagination.total_pages, newest.pagination.items_per_page) == (2, 1)


def test_an_executions_logs_tell_its_start_steps_and_end(
    lifecycle: Lifecycle, wallet: Wallet, partner: PartnerKey, engine: Engine
) -> None:
    [operation] = OperationStore(engine).of_wallet(wallet.id)
    server = _server(lifecycle, partner[0], engine)
    request = wallet_details_pb2.ListExecutionLogsRequest(
        chain_id=BASE, wallet=wallet.address, execution_id=operation.id, sort="date_asc", limit=100
    )
    reply, _, code, _ = call(server, METHODS["ListExecutionLogs"], request)
    assert code is grpc.StatusCode.OK
    types = [entry.type for entry in reply.logs]
    assert types == ["started", *["step"] * len(operation.steps), "completed"]
    assert reply.logs[0].data["kind"] == "activate"
    steps = [entry.data for entry in reply.logs[1:-1]]
    assert [s["tx_hash"] for s in steps] == [s.tx_hash for s in operation.steps]
    assert [int(s["amount"]) for s in steps] == [s.amount for s in operation.steps]
    assert reply.pagination.total_items == len(types)
    request.execution_id = "0c1f5e0e-6d9b-4a1e-9f3e-2b7c8d9e0a11"
    _, _, code, _ = call(server, METHODS["ListExecutionLogs"], request)
    assert code is grpc.StatusCode.NOT_FOUND


def test_another_wallets_execution_is_not_found_here(
    lifecycle: Lifecycle,
    wallet: Wallet,
    partner: PartnerKey,
    engine: Engine,
    market: SimulatedMarket,
) -> None:
    other = asyncio.run(
        activated(lifecycle, engine, market, partner[0].id, 500 * USDC, eoa=OTHER_EOA)
    )
    [theirs] = OperationStore(engine).of_wallet(other.id)
    server = _server(lifecycle, partner[0], engine)
    request = wallet_details_pb2.ListExecutionLogsRequest(
        chain_id=BASE, wallet=wallet.address, execution_id=theirs.id
    )
    reply, _, code, _ = call(server, METHODS["ListExecutionLogs"], request)
    assert (reply, code) == (None, grpc.StatusCode.NOT_FOUND)


def test_a_wallets_logs_are_its_events(
    lifecycle: Lifecycle, wallet: Wallet, partner: PartnerKey, engine: Engine
) -> None:
    events = EventStore(engine).after(wallet.id, 0, 1000)
    server = _server(lifecycle, partner[0], engine)
    request = wallet_details_pb2.ListWalletLogsRequest(chain_id=BASE, wallet=wallet.address)
    reply, _, code, _ = call(server, METHODS["ListWalletLogs"], request)
    assert code is grpc.StatusCode.OK
    assert [entry.type for entry in reply.logs] == [e.kind for e in reversed(events)]
    assert [entry.data["id"] for entry in reply.logs] == [e.id for e in reversed(events)]
    assert reply.pagination.total_items == len(events) > 0


def test_deposits_are_the_credited_ones_in_order(
    lifecycle: Lifecycle,
    wallet: Wallet,
    partner: PartnerKey,
    engine: Engine,
    market: SimulatedMarket,
) -> None:
    tx_hash = top_up_deposit(market, wallet.address, 250 * USDC)
    asyncio.run(lifecycle.top_up(partner[0].id, BASE, wallet.address, tx_hash))
    server = _server(lifecycle, partner[0], engine)
    request = wallet_details_pb2.ListDepositsRequest(chain_id=BASE, wallet=wallet.address)
    reply, _, code, _ = call(server, METHODS["ListDeposits"], request)
    assert code is grpc.StatusCode.OK
    assert [(int(d.amount), d.token_type) for d in reply.deposits] == [
        (1_000 * USDC, BASE_USDC),
        (250 * USDC, BASE_USDC),
    ]
    assert reply.deposits[1].tx_hash == tx_hash and reply.deposits[1].HasField("block_number")


def test_protocols_are_the_selected_ones_as_the_catalog_lists_them(
    lifecycle: Lifecycle, partner: PartnerKey, engine: Engine, market: SimulatedMarket
) -> None:
    chosen = ("moonwell", "aave")
    wallet = asyncio.run(
        activated(lifecycle, engine, market, partner[0].id, 1_000 * USDC, protocols=chosen)
    )
    server = _server(lifecycle, partner[0], engine)
    request = wallet_details_pb2.ListWalletProtocolsRequest(chain_id=BASE, wallet=wallet.address)
    reply, _, code, _ = call(server, METHODS["ListWalletProtocols"], request)
    assert code is grpc.StatusCode.OK
    assert [p.name for p in reply.protocols] == ["aave", "moonwell"]  # the catalog's order
    assert all(p.is_active and p.HasField("apr") and p.chain_id == BASE for p in reply.protocols)


def test_constraints_read_back_as_written_and_refuse_what_cannot_be_met(
    lifecycle: Lifecycle, wallet: Wallet, partner: PartnerKey, engine: Engine
) -> None:
    server = _server(lifecycle, partner[0], engine)
    read = wallet_details_pb2.GetConstraintsRequest(chain_id=BASE, wallet=wallet.address)
    empty, _, code, _ = call(server, METHODS["GetConstraints"], read)
    assert code is grpc.StatusCode.OK and list(empty.constraints) == []
    rules = [
        types_pb2.Constraint(
            kind="min_protocols",
            params=types_pb2.ConstraintParams(min_protocols=2, min_fraction_per_protocol=0.1),
        ),
        types_pb2.Constraint(
            kind="max_allocation_amount_per_protocol",
            params=types_pb2.ConstraintParams(protocol="aave", max_amount="400000000"),
        ),
        types_pb2.Constraint(
            kind="exclude_protocol", params=types_pb2.ConstraintParams(protocol="compound")
        ),
    ]
    update = wallet_details_pb2.UpdateConstraintsRequest(
        chain_id=BASE, wallet=wallet.address, constraints=rules
    )
    _, _, code, details = call(server, METHODS["UpdateConstraints"], update)
    assert code is grpc.StatusCode.OK, details
    back, _, _, _ = call(server, METHODS["GetConstraints"], read)
    assert list(back.constraints) == rules
    assert stored(engine, wallet.address).constraints.excluded == {"compound"}

    impossible = wallet_details_pb2.UpdateConstraintsRequest(
        chain_id=BASE,
        wallet=wallet.address,
        constraints=[
            types_pb2.Constraint(
                kind="min_protocols", params=types_pb2.ConstraintParams(min_protocols=9)
            )
        ],
    )
    _, _, code, details = call(server, METHODS["UpdateConstraints"], impossible)
    assert code is grpc.StatusCode.INVALID_ARGUMENT and "cannot be met" in details
    unknown = wallet_details_pb2.UpdateConstraintsRequest(
        chain_id=BASE,
        wallet=wallet.address,
        constraints=[
            types_pb2.Constraint(
                kind="exclude_protocol", params=types_pb2.ConstraintParams(protocol="nowhere")
            )
        ],
    )
    _, _, code, _ = call(server, METHODS["UpdateConstraints"], unknown)
    assert code is grpc.StatusCode.INVALID_ARGUMENT
    after, _, _, _ = call(server, METHODS["GetConstraints"], read)
    assert list(after.constraints) == rules  # refused updates changed nothing


def test_the_whitelist_is_where_the_token_goes(
    lifecycle: Lifecycle, wallet: Wallet, partner: PartnerKey, engine: Engine
) -> None:
    server = _server(lifecycle, partner[0], engine)
    request = wallet_details_pb2.GetWhitelistRequest(chain_id=BASE, wallet=wallet.address)
    reply, _, code, _ = call(server, METHODS["GetWhitelist"], request)
    assert code is grpc.StatusCode.OK
    usdc = load_catalog().token(BASE, BASE_USDC)
    expected = [(p.address, "protocol", p.name) for p in usdc.protocols]
    assert [(w.address, w.role, w.protocol) for w in reply.whitelist] == [
        *expected,
        (EOA, "owner", ""),
        (FEE, "fee_collector", ""),
    ]
