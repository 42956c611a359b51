"""The operator's wallet commands: block, unblock, emergency and resume; and the books'
commands: unfinished operations, reconciling a wallet, the chain's own balance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.wallet_setup import BASE, activated, make_lifecycle, positions
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.cli import main
from yieldagent.composition.chains import simulated_chains
from yieldagent.domain.books.accounting import WithdrawalSplit
from yieldagent.domain.books.operations import (
    Operation,
    OperationKind,
    OperationStatus,
    Step,
    StepAction,
)
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.operations import OperationStore
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.simulation import SimulationStore
from yieldagent.storage.wallets import WalletStore


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out if code == 0 else err)


@pytest.fixture
async def wallet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An activated wallet in the data dir the commands use; returns its address."""
    monkeypatch.setenv("YIELDAGENT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("YIELDAGENT_SIM_SPEED", "0")
    monkeypatch.delenv("YIELDAGENT_DATABASE_URL", raising=False)
    engine = create_db_engine(f"sqlite:///{tmp_path / 'yieldagent.db'}")
    migrate(engine)
    partner, _ = PartnerStore(engine).create("acme", PERMISSIONS)
    market = SimulatedMarket(SimulationStore(engine), load_catalog(), 7, speed=0.0)
    market.start()
    lifecycle = make_lifecycle(engine, simulated_chains(market, load_catalog()))
    address = (await activated(lifecycle, engine, market, partner.id, 1_000 * 10**6)).address
    engine.dispose()
    return address


def _market(tmp_path: Path) -> SimulatedMarket:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'yieldagent.db'}")
    market = SimulatedMarket(SimulationStore(engine), load_catalog(), 7, speed=0.0)
    market.start(set_speed=False)
    return market


def test_block_and_unblock(wallet: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, "wallet", "block", wallet) == (0, {"wallet": wallet, "status": "blocked"})
    code, error = _run(capsys, "wallet", "block", wallet)
    assert code == 1 and "blocked by the operator" in error["error"]
    assert _run(capsys, "wallet", "unblock", wallet)[1]["status"] == "activated"


def test_emergency_moves_every_position_out_and_keeps_the_funds(
    wallet: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    market = _market(tmp_path)
    assert positions(market, wallet)
    assert _run(capsys, "wallet", "emergency", wallet)[1]["status"] == "emergency"
    assert positions(market, wallet) == {}
    idle = market.balance(BASE, "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", wallet)
    assert 1_000 * 10**6 - 10 <= idle <= 1_000 * 10**6
    assert _run(capsys, "wallet", "resume", wallet)[1]["status"] == "activated"


def test_unknown_wallets_and_bad_addresses(wallet: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, error = _run(capsys, "wallet", "block", "0x" + "12" * 20)
    assert code == 1 and "not found" in error["error"]
    code, error = _run(capsys, "wallet", "block", "nope")
    assert code == 1 and "address" in error["error"]


# -- the books: operations, reconciliation, the chain's own balance ---------------------------

USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"


def _crashed_withdrawal(tmp_path: Path, wallet: str) -> str:
    """Leaves a withdrawal as a process killed right after storing its intent would: the
    split and its payout planned, nothing on chain yet, the lease lapsed. Returns the
    operation's id."""
    engine = create_db_engine(f"sqlite:///{tmp_path / 'yieldagent.db'}")
    try:
        market = _market(tmp_path)
        store = WalletStore(engine)
        stored = store.get(BASE, wallet)
        assert stored is not None
        split = WithdrawalSplit(100 * 10**6, 100 * 10**6, 0, 0)
        head, _ = market.head(BASE)
        operation = Operation(
            "crashed-withdrawal",
            stored.id,
            BASE,
            OperationKind.WITHDRAW,
            OperationStatus.EXECUTING,
            (Step(StepAction.PAYOUT, USDC, split.to_user, recipient=stored.eoa, split=split),),
            head,
            "dead-process",
            {"amount": str(split.amount), "split": split.as_json()},
        )
        OperationStore(engine).start(operation)
        assert store.acquire_lease(stored.id, "dead-process", 0.0, 0.0)  # lapsed at once
        return operation.id
    finally:
        engine.dispose()


def test_ops_list_shows_what_a_dead_process_left_and_reconcile_finishes_it(
    wallet: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    operation_id = _crashed_withdrawal(tmp_path, wallet)

    code, listed = _run(capsys, "ops", "list", "--stuck")
    assert code == 0
    [stuck] = listed["operations"]
    assert (stuck["id"], stuck["kind"], stuck["status"]) == (operation_id, "withdraw", "executing")

    code, reconciled = _run(capsys, "wallet", "reconcile", wallet)
    assert code == 0
    repair = reconciled["repairs"][0]  # rolled forward: the stored split is paid
    assert (repair["operation"], repair["outcome"]) == (operation_id, "completed")
    assert repair["principal_after"] == repair["principal_before"] - 100 * 10**6
    assert _run(capsys, "ops", "list", "--stuck")[1] == {"operations": []}


def test_sim_balance_reads_the_chain(
    wallet: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    market = _market(tmp_path)
    expected = market.balance(BASE, USDC, wallet)

    assert _run(
        capsys, "sim", "balance", "--chain", "8453", "--token", USDC, "--holder", wallet
    ) == (0, {"amount": expected})
    code, error = _run(
        capsys, "sim", "balance", "--chain", "8453", "--token", "x", "--holder", wallet
    )
    assert code == 1 and "token" in error["error"]
