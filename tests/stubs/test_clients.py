"""A TypeScript client (protoc-gen-es + @connectrpc/connect-node) and a Go client
(protoc-gen-go + grpc-go), each built on the stubs `make stubs` generates, against the real
gRPC server: each creates a smart account and reads a wallet, and prints what it got as JSON,
which must be what the Python API answers for the same calls.

``make check-stubs`` generates the stubs (buf.gen.yaml) and compiles the example clients of
tests/stubs/typescript and tests/stubs/go; it does nothing when they are up to date, as after
CI ran it. One service on SQLite serves the module, with one partner and one
activated wallet made through the Python gRPC API.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from eth_utils.address import to_checksum_address
from google.protobuf.json_format import MessageToDict
from sqlalchemy import Engine

from support.databases import temporary_database
from support.funded import PROTOCOLS, USDC
from support.service import RunningService, running_service
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.domain.partners.smart_accounts import DEFAULT_AGENT_ID, smart_account_address
from yieldagent.storage.db import create_db_engine
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.simulation import SimulationStore
from yieldagent.v1 import (
    smart_accounts_pb2,
    smart_accounts_pb2_grpc,
    wallets_pb2,
    wallets_pb2_grpc,
)

ROOT = Path(__file__).resolve().parents[2]
BASE = 8453
WALLET_EOA = to_checksum_address("0x" + "5a" * 20)
"""The EOA whose wallet the test activates and the clients read."""
LANGUAGES = ["typescript", "go"]
CLIENT_EOAS = {
    "typescript": to_checksum_address("0x" + "7c" * 20),
    "go": to_checksum_address("0x" + "9d" * 20),
}
"""A fresh EOA per client, whose smart account nobody created before the client does."""


@dataclass(frozen=True)
class Clients:
    """The commands that run each compiled example client (arguments follow)."""

    typescript: list[str]
    go: list[str]


@pytest.fixture(scope="session")
def clients() -> Clients:
    """Both example clients, generated and compiled by make."""
    subprocess.run(["make", "--no-print-directory", "-s", "check-stubs"], cwd=ROOT, check=True)
    return Clients(
        typescript=["node", str(ROOT / "build/stubs/ts/tests/stubs/typescript/client.js")],
        go=[str(ROOT / "build/stubs/go-client")],
    )


@dataclass(frozen=True)
class Partner:
    """A partner's name and API key, and the gRPC metadata that carries them."""

    name: str
    api_key: str

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("x-partner-name", self.name), ("x-partner-api-key", self.api_key))


@dataclass(frozen=True)
class Served:
    """The running service, its partner, and a Python channel to its gRPC port."""

    service: RunningService
    partner: Partner
    channel: grpc.Channel

    @property
    def accounts(self) -> smart_accounts_pb2_grpc.SmartAccountServiceStub:
        return smart_accounts_pb2_grpc.SmartAccountServiceStub(self.channel)

    @property
    def wallets(self) -> wallets_pb2_grpc.WalletServiceStub:
        return wallets_pb2_grpc.WalletServiceStub(self.channel)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The whole service on SQLite, with a partner that has every permission."""
    directory = tmp_path_factory.mktemp("stubs-service")
    with (
        temporary_database("sqlite", directory) as url,
        running_service(url, directory) as service,
    ):
        engine = create_db_engine(url)
        try:
            _, key = PartnerStore(engine).create("stubs", PERMISSIONS)
        finally:
            engine.dispose()
        with grpc.insecure_channel(service.grpc_target) as channel:
            yield Served(service, Partner("stubs", key), channel)


def _market(engine: Engine) -> SimulatedMarket:
    """The service's simulated market, to deposit as a user would."""
    market = SimulatedMarket(SimulationStore(engine), load_catalog(), 7, speed=0.0)
    market.start(set_speed=False)
    return market


@pytest.fixture(scope="module")
def activated_wallet(served: Served) -> str:
    """A wallet made through the Python gRPC API: the smart account of WALLET_EOA, funded with
    2,500 USDC on the simulated Base chain and activated. Returns its address."""
    metadata = served.partner.metadata
    account = served.accounts.CreateSmartAccount(
        smart_accounts_pb2.CreateSmartAccountRequest(eoa=WALLET_EOA, chain=BASE),
        metadata=metadata,
    )
    engine = create_db_engine(served.service.database_url)
    try:
        deposit = _market(engine).deposit_from(
            BASE, USDC, WALLET_EOA, account.smartAccount, 2_500 * 10**6
        )
    finally:
        engine.dispose()
    served.wallets.ActivateWallet(
        wallets_pb2.ActivateWalletRequest(
            chain_id=BASE,
            wallet=account.smartAccount,
            eoa=WALLET_EOA,
            initial_token=USDC,
            selected_protocols=PROTOCOLS,
            tx_hash=deposit.tx_hash,
        ),
        metadata=metadata,
    )
    return str(account.smartAccount)


def _run(
    clients: Clients, language: str, served: Served, partner: Partner, *args: str
) -> subprocess.CompletedProcess[str]:
    """Runs one client against the service's gRPC port with ``partner``'s credentials."""
    target = served.service.grpc_target
    command = getattr(clients, language)
    if language == "typescript":
        argv = [*command, target, *args]  # TARGET EOA WALLET
    else:
        eoa, wallet = args
        argv = [*command, "-target", target, "-eoa", eoa, "-wallet", wallet]
    env = {**os.environ, "PARTNER_NAME": partner.name, "PARTNER_API_KEY": partner.api_key}
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)


def _python_smart_account(served: Served, eoa: str) -> dict[str, Any]:
    """What the Python API answers for the smart account of ``eoa``, as proto3 JSON."""
    answer = served.accounts.GetSmartAccount(
        smart_accounts_pb2.GetSmartAccountRequest(eoa=eoa, chain=BASE),
        metadata=served.partner.metadata,
    )
    return MessageToDict(answer)


@pytest.mark.parametrize("language", LANGUAGES)
def test_client_creates_a_smart_account_and_reads_a_wallet(
    clients: Clients, served: Served, activated_wallet: str, language: str
) -> None:
    eoa = CLIENT_EOAS[language]
    with pytest.raises(grpc.RpcError) as missing:
        _python_smart_account(served, eoa)
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND

    done = _run(clients, language, served, served.partner, eoa, activated_wallet)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)

    # The client created the account: the server now answers it, at the address derived from
    # the EOA, with the backend wallet that operates it.
    created = printed["smartAccount"]
    assert created["smartAccount"] == smart_account_address(eoa, DEFAULT_AGENT_ID)
    assert created["backendWallet"].startswith("0x")
    assert created == _python_smart_account(served, eoa)

    # The wallet it read is the activated one, exactly as the Python API reads it.
    wallet = printed["wallet"]
    assert wallet["wallet"] == activated_wallet
    assert wallet["eoa"] == WALLET_EOA
    assert wallet["status"] == "activated"
    assert [deposit["amount"] for deposit in wallet["deposits"]] == [str(2_500 * 10**6)]
    python = served.wallets.GetWallet(
        wallets_pb2.GetWalletRequest(chain_id=BASE, wallet=activated_wallet)
    )
    assert wallet == MessageToDict(python)


@pytest.mark.parametrize("language", LANGUAGES)
def test_client_with_a_wrong_key_is_unauthenticated(
    clients: Clients, served: Served, activated_wallet: str, language: str
) -> None:
    impostor = Partner(served.partner.name, "not-the-key")
    eoa = CLIENT_EOAS[language]
    done = _run(clients, language, served, impostor, eoa, activated_wallet)
    assert done.returncode == 1
    assert done.stdout == ""
    assert "unauthenticated" in done.stderr.lower()
