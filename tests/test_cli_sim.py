"""The ``yieldagent sim`` commands: deposits and moving simulated time, JSON in and out."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from eth_utils.address import to_checksum_address
from sqlalchemy import Engine
from sqlmodel import Session, select

from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.genesis import TIMING
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.cli import main
from yieldagent.storage.db import create_db_engine
from yieldagent.storage.simulation import SimulationStore
from yieldagent.storage.tables import SimTransactionRow

BASE = 8453
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
SENDER = "0x" + "ee" * 20
RECIPIENT = "0xabcdef0123456789abcdef0123456789abcdef01"
RECIPIENT_CHECKSUM = to_checksum_address(RECIPIENT)
TX_HASH = re.compile(r"0x[0-9a-f]{64}")


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("YIELDAGENT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("YIELDAGENT_SIM_SPEED", "0")
    for name in ("YIELDAGENT_DATABASE_URL", "YIELDAGENT_SIM_SEED"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


@pytest.fixture
def db(data_dir: Path) -> Iterator[Engine]:
    """The CLI's database, for looking at what the commands did."""
    engine = create_db_engine(f"sqlite:///{data_dir / 'yieldagent.db'}")
    yield engine
    engine.dispose()


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    if code == 0:
        assert err == ""
        return code, json.loads(out)
    assert out == ""
    return code, json.loads(err)


def _deposit(capsys: pytest.CaptureFixture[str], *changes: str) -> tuple[int, dict[str, object]]:
    flags = {
        "--chain": str(BASE),
        "--token": USDC,
        "--from": SENDER,
        "--to": RECIPIENT,
        "--amount": "1500000",
    }
    for flag, value in zip(changes[::2], changes[1::2], strict=True):
        flags[flag] = value
    return _run(capsys, "sim", "deposit", *(part for item in flags.items() for part in item))


def _transactions(engine: Engine) -> list[SimTransactionRow]:
    with Session(engine) as session:
        return list(session.exec(select(SimTransactionRow)))


def _market(engine: Engine) -> SimulatedMarket:
    market = SimulatedMarket(SimulationStore(engine), load_catalog(), 7, speed=0.0)
    market.start()
    return market


def test_deposit_prints_the_transfer(
    data_dir: Path, db: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    code, printed = _deposit(capsys, "--token", USDC.lower())
    assert code == 0
    assert set(printed) == {"tx_hash", "block_number"}
    assert TX_HASH.fullmatch(str(printed["tx_hash"]))
    assert printed["block_number"] == TIMING[BASE].genesis_block  # simulated time stands still
    market = _market(db)
    tx = market.transaction(str(printed["tx_hash"]))
    assert tx is not None
    assert (tx.kind, tx.chain_id, tx.token, tx.sender, tx.recipient, tx.amount) == (
        "transfer",
        BASE,
        USDC,
        to_checksum_address(SENDER),  # addresses are stored in their EIP-55 form
        RECIPIENT_CHECKSUM,
        1_500_000,
    )
    assert market.balance(BASE, USDC, RECIPIENT_CHECKSUM) == 1_500_000
    assert sorted(row.kind for row in _transactions(db)) == ["mint", "transfer"]


@pytest.mark.parametrize(
    ("changes", "mentions"),
    [
        (("--from", "0x1234"), "from"),
        (("--to", "not an address"), "to"),
        (("--token", "USDC"), "token"),
        (("--token", "0x" + "12" * 20), "not supported"),
        (("--amount", "0"), "amount"),
        (("--amount", "-5"), "amount"),
        (("--chain", "10"), "chain"),
        (("--chain", "10", "--token", "0x" + "12" * 20), "chain"),
    ],
)
def test_a_bad_deposit_is_a_json_error_and_records_nothing(
    data_dir: Path,
    db: Engine,
    capsys: pytest.CaptureFixture[str],
    changes: tuple[str, ...],
    mentions: str,
) -> None:
    assert _deposit(capsys)[0] == 0
    before = sorted(row.tx_hash for row in _transactions(db))
    code, error = _deposit(capsys, *changes)
    assert code == 1
    assert set(error) == {"error"}
    assert mentions in str(error["error"])
    assert sorted(row.tx_hash for row in _transactions(db)) == before
    assert _market(db).balance(BASE, USDC, RECIPIENT_CHECKSUM) == 1_500_000


def test_advance_moves_simulated_time_an_hour(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, start = _run(capsys, "sim", "advance", "--seconds", "0")
    assert code == 0 and set(start) == {"time"}
    assert str(start["time"]).endswith("Z")
    started = datetime.fromisoformat(str(start["time"]))
    assert (started.minute, started.second) == (0, 0)  # genesis is on the hour
    code, moved = _run(capsys, "sim", "advance", "--seconds", "3600")
    assert code == 0
    assert datetime.fromisoformat(str(moved["time"])) == started + timedelta(hours=1)
    code, printed = _deposit(capsys)
    assert code == 0
    assert printed["block_number"] == TIMING[BASE].genesis_block + 1_800  # 2 s blocks


def test_negative_seconds_is_an_error(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, start = _run(capsys, "sim", "advance", "--seconds", "0")
    code, error = _run(capsys, "sim", "advance", "--seconds", "-1")
    assert code == 1
    assert "seconds" in str(error["error"])
    assert _run(capsys, "sim", "advance", "--seconds", "0") == (0, start)
