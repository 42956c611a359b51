"""The yieldagent command: partner management prints JSON, keys only once."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from types import CoroutineType
from typing import Any

import pytest
from sqlalchemy import text

from yieldagent.cli import main
from yieldagent.composition import runtime
from yieldagent.servicers.auth import Authenticator
from yieldagent.storage.db import create_db_engine
from yieldagent.storage.partners import PartnerStore


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("YIELDAGENT_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("YIELDAGENT_DATABASE_URL", raising=False)
    return tmp_path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out if code == 0 else err)


def test_partner_lifecycle(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, created = _run(capsys, "partner", "create", "acme")
    assert code == 0 and created["name"] == "acme"
    assert str(created["api_key"]).startswith("ya_")
    code, rotated = _run(capsys, "partner", "rotate", "acme")
    assert code == 0 and rotated["api_key"] != created["api_key"]
    code, disabled = _run(capsys, "partner", "disable", "acme")
    assert code == 0 and disabled == {
        "name": "acme",
        "active": False,
        "permissions": ["accounts", "optimizer", "rewards", "wallets"],
    }
    assert str(created["api_key"]) not in (data_dir / "yieldagent.db").read_bytes().decode(
        "latin-1"
    )


def test_errors_are_json_on_stderr(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(capsys, "partner", "create", "acme")
    code, error = _run(capsys, "partner", "create", "acme")
    assert code == 1 and error == {"error": "Partner 'acme' already exists"}
    code, error = _run(capsys, "partner", "disable", "nobody")
    assert code == 1 and "No partner" in str(error["error"])
    code, error = _run(capsys, "partner", "create", "Bad Name")
    assert code == 1


def test_permissions_can_be_limited(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(capsys, "partner", "create", "reader", "--permissions", "wallets")
    code, shown = _run(capsys, "partner", "enable", "reader")
    assert code == 0 and shown["permissions"] == ["wallets"]


def test_migrate(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, "migrate") == (0, {"migrated": True})


def test_partner_rotate_with_grace_keeps_the_old_key_valid(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, created = _run(capsys, "partner", "create", "acme")
    code, rotated = _run(capsys, "partner", "rotate", "acme", "--grace", "600")
    assert code == 0 and set(rotated) == {"name", "api_key"}  # printed as without grace
    engine = create_db_engine(f"sqlite:///{data_dir / 'yieldagent.db'}")
    try:
        authenticator = Authenticator(PartnerStore(engine))
        for key in (created["api_key"], rotated["api_key"]):
            headers = [("x-partner-name", "acme"), ("x-partner-api-key", str(key))]
            assert asyncio.run(authenticator.authenticate(headers, "wallets")).name == "acme"
    finally:
        engine.dispose()
    with pytest.raises(SystemExit):
        main(["partner", "rotate", "acme", "--grace", "-5"])
    assert "seconds must be 0 or more" in capsys.readouterr().err


def test_totals_check_and_rebuild(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, "totals", "check") == (0, {"consistent": True, "chains": []})
    engine = create_db_engine(f"sqlite:///{data_dir / 'yieldagent.db'}")
    try:
        with engine.begin() as connection:  # totals that no wallet accounts for
            connection.execute(
                text(
                    "INSERT INTO chain_totals VALUES "
                    "(8453, '0x1', '', 0, 1, '5', 0, '0', '0', 0, '0', 3)"
                )
            )
    finally:
        engine.dispose()
    assert _run(capsys, "totals", "check") == (0, {"consistent": False, "chains": [8453]})
    assert _run(capsys, "totals", "rebuild") == (0, {"rebuilt": True})
    assert _run(capsys, "totals", "check") == (0, {"consistent": True, "chains": []})


def test_production_mode_refuses_to_start_listing_every_problem(
    data_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "YIELDAGENT_ENV": "production",
        "YIELDAGENT_GRPC_HOST": "192.0.2.10",
        "YIELDAGENT_GRPC_REFLECTION": "on",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("YIELDAGENT_WEBHOOK_SECRET_KEY", "YIELDAGENT_METRICS_HOST"):
        monkeypatch.delenv(name, raising=False)
    code = main(["serve"])
    assert code == 1
    refused = json.loads(capsys.readouterr().err.splitlines()[-1])  # after the log lines
    assert refused["error"] == "YIELDAGENT_ENV=production refuses to start:"
    problems = refused["problems"]
    assert isinstance(problems, list) and len(problems) == 4, problems
    assert "YIELDAGENT_GRPC_HOST" in problems[0] and "YIELDAGENT_TLS_CERT_FILE" in problems[0]
    assert "YIELDAGENT_GRPC_REFLECTION=off" in problems[1]
    assert "YIELDAGENT_WEBHOOK_SECRET_KEY" in problems[2]
    assert "YIELDAGENT_METRICS_HOST" in problems[3]
    assert not (data_dir / "yieldagent.db").exists()  # refused before touching anything


@pytest.mark.parametrize("event_loop", ["uvloop", "asyncio"])
def test_the_service_runs_on_the_configured_event_loop(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, event_loop: str
) -> None:
    ran: list[tuple[str, str]] = []

    def run(main: CoroutineType[Any, Any, None], loop: str) -> None:
        ran.append((main.__qualname__, loop))
        main.close()  # not served here: only where it would run

    monkeypatch.setattr(runtime, "run", run)
    monkeypatch.setenv("YIELDAGENT_EVENT_LOOP", event_loop)
    assert main(["serve"]) == 0
    assert ran == [("run_service", event_loop)]


def test_the_devnet_commands_say_where_they_run_without_the_devnet(
    data_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "yieldagent.devnet", None)  # as in an installed wheel
    code, refused = _run(capsys, "devnet", "advance", "--seconds", "60")
    assert code == 1
    assert "source checkout" in str(refused["error"])
