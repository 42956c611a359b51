"""SIGKILL in the middle of a pipelined batch on the devnet: the agent's cycle sends every
wallet's withdrawal at once, at consecutive nonces; the process dies with the whole batch
in the node's pool and none of it mined, or the moment its block is mined, while it reads
the receipts. The chain then has the batch; the restarted service settles every run from
the chain's logs, sends none of the dead process's transactions again, and the books agree
with the chain to the unit."""

from __future__ import annotations

import json
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
from sqlalchemy import Engine, text
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
"""Wallets of the batch, each with an owner of its own made for this test (the session's
devnet keeps the other tests' accounts)."""
AAVE, MORPHO = "aave", "morpho_gauntlet_usdc_prime"
UNIT = 10**6
DEPOSIT = 5_000 * UNIT


def _operator() -> ChecksumAddress:
    return to_checksum_address(Account.from_key(OPERATOR_KEY).address)


def _in_pool(devnet: Devnet) -> int:
    """The operator's transactions in the node's pool, not yet mined."""
    pending = devnet.w3.eth.get_transaction_count(_operator(), "pending")
    return int(pending) - int(devnet.w3.eth.get_transaction_count(_operator(), "latest"))


def _open_runs(engine: Engine) -> int:
    with Session(engine) as session:
        rows = session.exec(select(OperationRow).where(OperationRow.kind == "run")).all()
    return sum(1 for row in rows if row.status in OPEN)


def _operator_inputs(devnet: Devnet, since: int) -> list[tuple[int, str]]:
    """(nonce, call data) of every operator transaction mined from block ``since`` on."""
    sent = []
    operator = _operator().lower()
    for number in range(since, devnet.w3.eth.block_number + 1):
        block = devnet.w3.eth.get_block(number, full_transactions=True)
        for tx in cast(list[TxData], block["transactions"]):
            if str(tx["from"]).lower() == operator:
                sent.append((int(tx["nonce"]), HexBytes(tx["input"]).to_0x_hex()))
    return sent


@pytest.mark.parametrize("mined_first", [False, True], ids=["in-the-pool", "just-mined"])
def test_a_pipelined_batch_killed_in_flight_is_settled_and_never_sent_twice(
    devnet: Devnet, tmp_path: Path, mined_first: bool
) -> None:
    """Killed with the batch in the pool, or the moment the block holding it is mined
    (while the process reads its receipts and marks its steps)."""
    url = f"sqlite:///{tmp_path / 'service.db'}"
    engine = create_db_engine(url)
    migrate(engine)
    _, key = PartnerStore(engine).create("pipeline-killer", PERMISSIONS)
    metadata = (("x-partner-name", "pipeline-killer"), ("x-partner-api-key", key))
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
            YIELDAGENT_LOG_FORMAT="json",
        ),
    }
    service = ServeProcess(env)
    restarted: ServeProcess | None = None
    try:
        assert service.logs.wait_for("grpc server started", timeout=60), service.logs.tail()
        for listed in devnet.manifest.collateral_feeds.values():
            actions.set_feed_price(devnet.url, listed["feed"], listed["peg"])
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        accounts = smart_accounts_pb2_grpc.SmartAccountServiceStub(channel)
        wallets = wallets_pb2_grpc.WalletServiceStub(channel)
        made: list[str] = []
        for _ in range(WALLETS):
            eoa = Account.create().address
            wallet = accounts.CreateSafeAccount(
                smart_accounts_pb2.CreateSafeAccountRequest(eoa=eoa, chain=8453),
                metadata=metadata,
            ).smartAccount
            deposit = actions.deposit(devnet.url, devnet.usdc, eoa, wallet, DEPOSIT)
            wallets.ActivateWallet(
                wallets_pb2.ActivateWalletRequest(
                    chain_id=8453,
                    wallet=wallet,
                    eoa=eoa,
                    initial_token=devnet.usdc,
                    selected_protocols=[AAVE, MORPHO],
                    tx_hash=deposit["tx_hash"],
                ),
                metadata=metadata,
                timeout=60,
            )
            made.append(wallet)

        # From now on a block is mined only when the test mines one. Each wallet is
        # allowed only the pool it holds less of: its run withdraws, then supplies.
        rpc(devnet.url, "evm_setAutomine", [False])
        start = devnet.w3.eth.block_number + 1
        for wallet in made:
            placed = positions(devnet.w3, devnet.manifest, wallet)
            other = AAVE if placed[MORPHO] > placed[AAVE] else MORPHO
            wallets.UpdateProtocols(
                wallets_pb2.UpdateProtocolsRequest(chain_id=8453, wallet=wallet, protocols=[other]),
                metadata=metadata,
            )
        with engine.begin() as connection:  # every wallet due at once: one batch
            connection.execute(text("UPDATE wallet_schedule SET next_run_at = 0"))
        # The cycle's first round: every withdrawal in the pool together, none mined.
        wait_until(lambda: _in_pool(devnet) == len(made), timeout=60, pause=0.05)
        if mined_first:
            rpc(devnet.url, "evm_mine", [])
        service.kill()
        channel.close()
        for wallet in made:
            stored = WalletStore(engine).get(8453, wallet)
            assert stored is not None and stored.status == WalletStatus.RUNNING
        with Session(engine) as session:
            runs = session.exec(select(OperationRow).where(OperationRow.kind == "run")).all()
        assert len(runs) == len(made)  # each run's intent was stored before the batch
        if not mined_first:  # else some marks may have been stored before the kill
            assert not any(step.get("tx_hash") for r in runs for step in json.loads(r.steps))

        # The chain mines the dead process's batch; the restarted service reconciles.
        if not mined_first:
            rpc(devnet.url, "evm_mine", [])
        batch = _operator_inputs(devnet, start)
        assert len(batch) == len(made)
        nonces = sorted(n for n, _ in batch)
        assert nonces == list(range(nonces[0], nonces[0] + len(made)))  # consecutive
        rpc(devnet.url, "evm_setAutomine", [True])
        restarted = ServeProcess(env)
        wait_until(lambda: _open_runs(engine) == 0, timeout=90, pause=0.2)
        restarted.terminate()
        assert restarted.wait_exit(timeout=60) == 0, restarted.logs.tail()

        # No transaction of the batch was sent again: every operator transaction mined
        # since the kill is a different call.
        sent = _operator_inputs(devnet, start)
        repeated = [data for data, n in Counter(d for _, d in sent).items() if n > 1]
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
