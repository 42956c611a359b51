"""SIGKILL in the middle of the worker's pass of background activations on the devnet: the
pass has sent every open activation's Safe deployment at once, at consecutive nonces; the
process dies with all of them in the node's pool and none mined, or the moment their block
is mined, while it reads the receipts. The restarted service finds the accounts on chain,
activates the wallets without deploying any again, the agent places their funds, and the
books agree with the chain to the unit."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import cast

import grpc
import pytest
from eth_account import Account
from eth_typing import ChecksumAddress
from eth_utils.address import to_checksum_address
from hexbytes import HexBytes
from sqlalchemy import Engine
from sqlmodel import Session, select
from web3.types import TxData

from support.books import assert_books_balance
from support.crash_world import ServeProcess, wait_until
from support.devnet import Devnet
from support.devnet_books import devnet_chain_books, idle_balance, positions
from support.devnet_service import OPERATOR_KEY, devnet_env
from support.service import free_port
from yieldagent.devnet import actions
from yieldagent.devnet.anvil import rpc
from yieldagent.domain.books.operations import OPEN
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.tables import OperationRow
from yieldagent.storage.wallets import WalletStore
from yieldagent.v1 import (
    smart_accounts_pb2,
    smart_accounts_pb2_grpc,
    wallets_pb2,
    wallets_pb2_grpc,
)

pytestmark = [pytest.mark.crash, pytest.mark.evm, pytest.mark.timeout(300)]

WALLETS = 4
"""Wallets activated together, each with an owner of its own made for this test."""
UNIT = 10**6
DEPOSIT = 2_000 * UNIT


def _operator() -> ChecksumAddress:
    return to_checksum_address(Account.from_key(OPERATOR_KEY).address)


def _in_pool(devnet: Devnet) -> int:
    """The operator's transactions in the node's pool, not yet mined."""
    pending = devnet.w3.eth.get_transaction_count(_operator(), "pending")
    return int(pending) - int(devnet.w3.eth.get_transaction_count(_operator(), "latest"))


def _open_activations(engine: Engine) -> int:
    with Session(engine) as session:
        rows = session.exec(select(OperationRow).where(OperationRow.kind == "activate")).all()
    return sum(1 for row in rows if row.status in OPEN)


def _sent_since(devnet: Devnet, since: int) -> list[tuple[int, str, str]]:
    """(nonce, recipient, call data) of every operator transaction mined from ``since`` on."""
    sent = []
    for number in range(since, devnet.w3.eth.block_number + 1):
        block = devnet.w3.eth.get_block(number, full_transactions=True)
        for tx in cast(list[TxData], block["transactions"]):
            if str(tx["from"]).lower() == _operator().lower():
                recipient = str(tx.get("to") or "")
                sent.append((int(tx["nonce"]), recipient, HexBytes(tx["input"]).to_0x_hex()))
    return sent


@pytest.mark.parametrize("mined_first", [False, True], ids=["in-the-pool", "just-mined"])
def test_a_pass_killed_with_its_deployments_in_flight_deploys_none_again(
    devnet: Devnet, tmp_path: Path, mined_first: bool
) -> None:
    url = f"sqlite:///{tmp_path / 'service.db'}"
    engine = create_db_engine(url)
    migrate(engine)
    _, key = PartnerStore(engine).create("activation-killer", PERMISSIONS)
    metadata = (("x-partner-name", "activation-killer"), ("x-partner-api-key", key))
    port = free_port()
    env = {
        **os.environ,
        **devnet_env(
            devnet,
            tmp_path,
            OPERATOR_KEY,
            YIELDAGENT_DATABASE_URL=url,
            YIELDAGENT_DATA_DIR=str(tmp_path),
            YIELDAGENT_GRPC_PORT=str(port),
            YIELDAGENT_LEASE_SECONDS="2",
            YIELDAGENT_WORKER_INTERVAL_SECONDS="0.5",
            YIELDAGENT_ACTIVATION_PLACEMENT="background",
            YIELDAGENT_LOG_FORMAT="json",
        ),
    }
    service = ServeProcess(env)
    restarted: ServeProcess | None = None
    safe = devnet.manifest.safe
    assert safe is not None
    factory = to_checksum_address(safe.factory)
    try:
        assert service.logs.wait_for("grpc server started", timeout=60), service.logs.tail()
        for listed in devnet.manifest.collateral_feeds.values():
            actions.set_feed_price(devnet.url, listed["feed"], listed["peg"])
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        accounts = smart_accounts_pb2_grpc.SmartAccountServiceStub(channel)
        wallets = wallets_pb2_grpc.WalletServiceStub(channel)
        funded: list[tuple[str, str, str]] = []
        for _ in range(WALLETS):
            eoa = Account.create().address
            wallet = accounts.CreateSafeAccount(
                smart_accounts_pb2.CreateSafeAccountRequest(eoa=eoa, chain=8453),
                metadata=metadata,
            ).smartAccount
            deposit = actions.deposit(devnet.url, devnet.usdc, eoa, wallet, DEPOSIT)
            funded.append((wallet, eoa, deposit["tx_hash"]))

        # From now on a block is mined only when the test mines one: the calls send
        # nothing, and the worker's pass sends every deployment before any is mined.
        rpc(devnet.url, "evm_setAutomine", [False])
        start = devnet.w3.eth.block_number + 1
        for wallet, eoa, tx_hash in funded:
            wallets.ActivateWallet(
                wallets_pb2.ActivateWalletRequest(
                    chain_id=8453,
                    wallet=wallet,
                    eoa=eoa,
                    initial_token=devnet.usdc,
                    selected_protocols=["aave", "morpho_gauntlet_usdc_prime"],
                    tx_hash=tx_hash,
                ),
                metadata=metadata,
                timeout=60,
            )
        assert wait_until(lambda: _in_pool(devnet) == WALLETS, timeout=60, pause=0.05)
        if mined_first:
            rpc(devnet.url, "evm_mine", [])
        service.kill()
        channel.close()
        for wallet, _, _ in funded:
            stored = WalletStore(engine).get(8453, wallet)
            assert stored is not None and stored.status == WalletStatus.ACTIVATING
        assert _open_activations(engine) == WALLETS  # each intent stored before the pass

        # The chain mines the dead process's deployments; the restarted service finishes.
        if not mined_first:
            rpc(devnet.url, "evm_mine", [])
        deployments = [(n, data) for n, to, data in _sent_since(devnet, start) if to == factory]
        assert len(deployments) == WALLETS
        nonces = sorted(n for n, _ in deployments)
        assert nonces == list(range(nonces[0], nonces[0] + WALLETS))  # consecutive
        rpc(devnet.url, "evm_setAutomine", [True])
        restarted = ServeProcess(env)
        made = [wallet for wallet, _, _ in funded]
        wait_until(
            lambda: (
                _open_activations(engine) == 0
                and all(
                    sum(positions(devnet.w3, devnet.manifest, wallet).values()) > 0
                    for wallet in made
                )
            ),
            timeout=90,
            pause=0.2,
        )
        restarted.terminate()
        assert restarted.wait_exit(timeout=60) == 0, restarted.logs.tail()

        # No deployment was sent again, nor any other transaction twice.
        sent = _sent_since(devnet, start)
        assert len([1 for _, to, _ in sent if to == factory]) == WALLETS
        repeated = [data for data, n in Counter(d for _, _, d in sent).items() if n > 1]
        assert repeated == []
        fee_collector = devnet.manifest.extras["fee_collector"]
        after = [WalletStore(engine).get(8453, wallet) for wallet in made]
        assert all(w is not None and w.status == WalletStatus.ACTIVATED for w in after)
        assert_books_balance(
            engine,
            devnet_chain_books(devnet.w3, devnet.manifest, fee_collector),
            [w for w in after if w is not None],
        )
        for wallet in made:
            held = positions(devnet.w3, devnet.manifest, wallet)
            assert sum(held.values()) + idle_balance(devnet.w3, devnet.usdc, wallet) >= (
                DEPOSIT - 10
            )
    finally:
        rpc(devnet.url, "evm_setAutomine", [True])
        service.kill()
        if restarted is not None:
            restarted.kill()
        engine.dispose()
