"""``yieldagent operator``: the keystore a real chain needs is created on purpose, once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from yieldagent.cli import main

PASSWORD = "correct horse battery staple"


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("YIELDAGENT_DATA_DIR", str(tmp_path))
    for name in ("YIELDAGENT_OPERATOR_PRIVATE_KEY", "YIELDAGENT_OPERATOR_KEY_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out if code == 0 else err)


def test_create_key_needs_a_password_of_its_own(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, error = _run(capsys, "operator", "create-key")
    assert code == 1 and "set YIELDAGENT_OPERATOR_KEY_PASSWORD" in str(error["error"])
    assert not (data_dir / "operator-keystore.json").exists()


def test_create_key_creates_once_and_a_real_chain_then_starts_with_it(
    data_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("YIELDAGENT_OPERATOR_KEY_PASSWORD", PASSWORD)
    code, created = _run(capsys, "operator", "create-key")
    keystore = data_dir / "operator-keystore.json"
    assert code == 0 and created["keystore"] == str(keystore)
    assert (
        str(created["address"]).lower()
        == "0x" + json.loads(keystore.read_text())["address"].lower()
    )
    first = keystore.read_text()
    # Each command is a process of its own, which takes the password out of its environment.
    monkeypatch.setenv("YIELDAGENT_OPERATOR_KEY_PASSWORD", PASSWORD)
    code, error = _run(capsys, "operator", "create-key")
    assert code == 1 and "already holds an operator key" in str(error["error"])
    assert keystore.read_text() == first
    monkeypatch.setenv("YIELDAGENT_RPC_URL_8453", "http://127.0.0.1:1")
    monkeypatch.setenv("YIELDAGENT_OPERATOR_KEY_PASSWORD", PASSWORD)
    code, shown = _run(capsys, "operator", "address")
    assert code == 0 and shown == {"address": created["address"]}
    assert PASSWORD not in json.dumps(shown) + first
