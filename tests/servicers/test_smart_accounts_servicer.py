"""SmartAccountService through grpc_testing, on a real store."""

from __future__ import annotations

import grpc
import grpc_testing
import pytest
from sqlalchemy import Engine

from support.grpc_testing_harness import Termination, call, serve
from yieldagent.catalog import load_catalog
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.domain.partners.smart_accounts import smart_account_address
from yieldagent.domain.ports.credentials import Partner
from yieldagent.servicers.smart_accounts import SmartAccountServicer
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.smart_accounts import SmartAccountStore
from yieldagent.v1 import smart_accounts_pb2 as pb

SERVICE = pb.DESCRIPTOR.services_by_name["SmartAccountService"]
CREATE = SERVICE.methods_by_name["CreateSmartAccount"]
GET = SERVICE.methods_by_name["GetSmartAccount"]
OWNER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
BACKEND_WALLET = "0x" + "ab" * 20
SDK_ADDRESS = smart_account_address(OWNER, "yield-agent")


@pytest.fixture
def servicer(engine: Engine) -> SmartAccountServicer:
    return SmartAccountServicer(load_catalog(), SmartAccountStore(engine), BACKEND_WALLET)


@pytest.fixture
def server(servicer: SmartAccountServicer, partner: tuple[Partner, str]) -> grpc_testing.Server:
    return serve(servicer, SERVICE, partner[0])


def _create(
    server: grpc_testing.Server, eoa: str = OWNER, chain: int = 8453, agent_id: str = ""
) -> Termination:
    return call(
        server, CREATE, pb.CreateSmartAccountRequest(eoa=eoa, chain=chain, agent_id=agent_id)
    )


def _get(
    server: grpc_testing.Server, eoa: str = OWNER, chain: int = 8453, agent_id: str = ""
) -> Termination:
    return call(server, GET, pb.GetSmartAccountRequest(eoa=eoa, chain=chain, agent_id=agent_id))


@pytest.mark.parametrize("agent_id", ["", "yield-agent"])
def test_create_returns_the_sdk_address_and_the_backend_wallet(
    server: grpc_testing.Server, agent_id: str
) -> None:
    response, _, code, _ = _create(server, agent_id=agent_id)
    assert code is grpc.StatusCode.OK
    assert response.smartAccount == SDK_ADDRESS
    assert response.backendWallet == BACKEND_WALLET


def test_create_accepts_an_eoa_in_any_letter_case(server: grpc_testing.Server) -> None:
    response, _, code, _ = _create(server, eoa=OWNER.lower())
    assert code is grpc.StatusCode.OK
    assert response.smartAccount == SDK_ADDRESS
    found, _, code, _ = _get(server, eoa="0x" + OWNER[2:].upper())
    assert code is grpc.StatusCode.OK
    assert found.smartAccount == SDK_ADDRESS


def test_create_is_idempotent(server: grpc_testing.Server, engine: Engine) -> None:
    first, _, first_code, _ = _create(server)
    second, _, second_code, _ = _create(server)
    assert first_code is second_code is grpc.StatusCode.OK
    assert first == second
    assert SmartAccountStore(engine).get(8453, OWNER, "yield-agent") is not None


def test_get_after_create_returns_the_same(server: grpc_testing.Server) -> None:
    created, _, _, _ = _create(server, agent_id="bot")
    found, _, code, _ = _get(server, agent_id="bot")
    assert code is grpc.StatusCode.OK
    assert (found.smartAccount, found.backendWallet) == (
        created.smartAccount,
        created.backendWallet,
    )
    assert found.smartAccount == smart_account_address(OWNER, "bot") != SDK_ADDRESS


def test_get_for_an_unknown_eoa_is_not_found(server: grpc_testing.Server) -> None:
    _create(server)
    other = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
    response, _, code, details = _get(server, eoa=other)
    assert code is grpc.StatusCode.NOT_FOUND
    assert response is None
    assert other in details


def test_get_on_another_chain_is_not_found(server: grpc_testing.Server) -> None:
    _create(server, chain=8453)
    _, _, code, _ = _get(server, chain=1)
    assert code is grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize("eoa", ["0x123", "not an address", OWNER + "00"])
def test_an_invalid_eoa_is_an_invalid_argument(server: grpc_testing.Server, eoa: str) -> None:
    for method in (_create, _get):
        response, _, code, details = method(server, eoa=eoa)
        assert code is grpc.StatusCode.INVALID_ARGUMENT
        assert response is None
        assert details.startswith("eoa: value is not a valid Ethereum address")


def test_every_bad_field_is_reported(server: grpc_testing.Server) -> None:
    _, _, code, details = _create(server, eoa="", chain=999)
    assert code is grpc.StatusCode.INVALID_ARGUMENT
    assert details.startswith("eoa: Field required; chain: Input should be one of 1, 137, 8453")


def test_another_partner_is_denied(
    servicer: SmartAccountServicer, server: grpc_testing.Server, partners: PartnerStore
) -> None:
    _create(server)
    other, _ = partners.create("globex", PERMISSIONS)
    theirs = serve(servicer, SERVICE, other)
    for method in (_create, _get):
        response, _, code, details = method(theirs)
        assert code is grpc.StatusCode.PERMISSION_DENIED
        assert response is None
        assert "another partner" in details
    # With an agent id of its own, the other partner gets its own account.
    response, _, code, _ = _create(theirs, agent_id="globex-agent")
    assert code is grpc.StatusCode.OK
    assert response.smartAccount == smart_account_address(OWNER, "globex-agent")
