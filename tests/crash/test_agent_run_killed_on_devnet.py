"""SIGKILL during an agent run on the devnet: the restarted service finishes the run from
the chain's logs, and the books agree with the chain to the unit.

While the run goes on, the test mines the blocks itself, one at a time, until the run has
a transaction mined and stored, and no more after it: the process dies between two of the
run's transactions (one mined, the next planned or in the node's pool), whatever the
machine's load."""

from __future__ import annotations

import json
import os
from pathlib import Path

import grpc
import pytest
from sqlalchemy import Engine
from sqlmodel import Session, select

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

pytestmark = [pytest.mark.evm, pytest.mark.unsettled]

EOA = "0x976EA74026E726554dB657fA54763abd0C3a0aa9"
AAVE, MORPHO = "aave", "morpho_gauntlet_usdc_prime"
UNIT = 10**6


def _mined_run_steps(engine: Engine) -> int:
    with Session(engine) as session:
        rows = session.exec(select(OperationRow).where(OperationRow.kind == "run")).all()
    return sum(1 for row in rows for step in json.loads(row.steps) if step.get("tx_hash"))


def _mine_until_a_run_step(devnet: Devnet, engine: Engine, timeout: float) -> int:
    """Mines a block at a time until a run's step is stored as mined; how many are. A step
    is stored before the next one is sent, so no block mined here carries a second one."""

    def mined() -> int:
        steps = _mined_run_steps(engine)
        if not steps:
            rpc(devnet.url, "evm_mine", [])
        return steps

    return wait_until(mined, timeout=timeout, pause=0.2)


def _open_runs(engine: Engine) -> int:
    with Session(engine) as session:
        rows = session.exec(select(OperationRow).where(OperationRow.kind == "run")).all()
    return sum(1 for row in rows if row.status in OPEN)


def test_an_agent_run_killed_midway_is_finished_from_the_chain(
    devnet: Devnet, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'service.db'}"
    engine = create_db_engine(url)
    migrate(engine)
    _, key = PartnerStore(engine).create("killer", PERMISSIONS)
    metadata = (("x-partner-name", "killer"), ("x-partner-api-key", key))
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
        # Other tests move the shared chain's clock on, and a feed not answered for a day
        # reads stale, which stops new funds: every collateral's feed answers afresh.
        for listed in devnet.manifest.collateral_feeds.values():
            actions.set_feed_price(devnet.url, listed["feed"], listed["peg"])
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        accounts = smart_accounts_pb2_grpc.SmartAccountServiceStub(channel)
        wallets = wallets_pb2_grpc.WalletServiceStub(channel)
        created = accounts.CreateSafeAccount(
            smart_accounts_pb2.CreateSafeAccountRequest(eoa=EOA, chain=8453), metadata=metadata
        )
        wallet = created.smartAccount
        deposit = actions.deposit(devnet.url, devnet.usdc, EOA, wallet, 20_000 * UNIT)
        wallets.ActivateWallet(
            wallets_pb2.ActivateWalletRequest(
                chain_id=8453,
                wallet=wallet,
                eoa=EOA,
                initial_token=devnet.usdc,
                selected_protocols=[AAVE, MORPHO],
                tx_hash=deposit["tx_hash"],
            ),
            metadata=metadata,
            timeout=60,
        )
        placed = positions(devnet.w3, devnet.manifest, wallet)
        other = AAVE if placed[MORPHO] > placed[AAVE] else MORPHO
        # Only the other pool is allowed from now on: the run must move everything there,
        # a withdrawal and then a supply, whatever the pools' rates (which other tests on
        # the shared chain move) and the guards make of them.
        wallets.UpdateProtocols(
            wallets_pb2.UpdateProtocolsRequest(chain_id=8453, wallet=wallet, protocols=[other]),
            metadata=metadata,
        )

        # From now on a block is mined only when the test mines one.
        rpc(devnet.url, "evm_setAutomine", [False])
        request = wallets_pb2.RunAgentRequest(chain_id=8453, wallet=wallet)
        running = wallets.RunAgent.future(request, metadata=metadata, timeout=60)
        assert _mine_until_a_run_step(devnet, engine, timeout=30) == 1
        service.kill()
        assert running.exception() is not None  # the caller saw the process die
        channel.close()
        stored = WalletStore(engine).get(8453, wallet)
        assert stored is not None and stored.status == WalletStatus.RUNNING

        # The restarted service reconciles the run from the chain's logs.
        rpc(devnet.url, "evm_setAutomine", [True])
        restarted = ServeProcess(env)
        wait_until(lambda: _open_runs(engine) == 0, timeout=60, pause=0.2)
        # The wallet is due again at once, so the restarted worker may start a new run right
        # after the recovery: a graceful stop lets it finish and starts none, and the chain
        # and the books are then read at rest.
        restarted.terminate()
        assert restarted.wait_exit(timeout=60) == 0, restarted.logs.tail()
        assert _open_runs(engine) == 0
        after = WalletStore(engine).get(8453, wallet)
        assert after is not None and after.status == WalletStatus.ACTIVATED
        fee_collector = devnet.manifest.extras["fee_collector"]
        assert_books_balance(
            engine, devnet_chain_books(devnet.w3, devnet.manifest, fee_collector), [after]
        )
        held = positions(devnet.w3, devnet.manifest, wallet)
        assert (
            sum(held.values()) + idle_balance(devnet.w3, devnet.usdc, wallet) >= 20_000 * UNIT - 10
        )
    finally:
        rpc(devnet.url, "evm_setAutomine", [True])
        service.kill()
        if restarted is not None:
            restarted.kill()
        engine.dispose()
