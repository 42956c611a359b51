"""The operator's wallet commands: block, unblock, emergency and resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.wallet_setup import BASE, activated, make_lifecycle, positions
from yieldagent.catalog import load_catalog
from yieldagent.chain.chains import simulated_chains
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.cli import main
from yieldagent.domain.partners import PERMISSIONS
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.simulation import SimulationStore


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, str]]:
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
