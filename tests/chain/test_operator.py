"""The operator's key: generated once for development, refused on a real chain unless it is
fit for money, decrypted once, and one key however many processes start together."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from eth_account import Account
from eth_account.messages import encode_defunct

from yieldagent.chain.operator import (
    DEVELOPMENT_SCRYPT_N,
    create_keystore,
    load_operator_wallet,
)
from yieldagent.config import load_settings
from yieldagent.domain.errors import ConfigurationError

RPC = {"YIELDAGENT_RPC_URL_8453": "http://127.0.0.1:1"}
PASSWORD = "correct horse battery staple"


def _tx(nonce: int) -> dict[str, int | str]:
    return {
        "type": 2,
        "chainId": 8453,
        "nonce": nonce,
        "to": "0x" + "11" * 20,
        "value": 0,
        "data": "0x",
        "gas": 21_000,
        "maxFeePerGas": 10**9,
        "maxPriorityFeePerGas": 10**8,
    }


def test_the_development_key_is_generated_once_and_stored_encrypted(tmp_path: Path) -> None:
    settings = load_settings({"YIELDAGENT_DATA_DIR": str(tmp_path)})
    first = load_operator_wallet(settings)
    again = load_operator_wallet(settings)
    assert first.address == again.address
    keystore = settings.operator_keystore
    assert stat.S_IMODE(keystore.stat().st_mode) == 0o600
    assert "crypto" in json.loads(keystore.read_text())
    assert json.loads(keystore.read_text())["address"].lower() == first.address[2:].lower()
    assert [p.name for p in tmp_path.iterdir()] == [keystore.name]  # no temporary file left
    assert "Secret('********')" in repr(settings)
    assert json.loads(keystore.read_text())["crypto"]["kdfparams"]["n"] == DEVELOPMENT_SCRYPT_N


def test_a_keystore_under_a_real_password_gets_the_full_scrypt_cost(tmp_path: Path) -> None:
    path = tmp_path / "operator-keystore.json"
    assert create_keystore(path, PASSWORD)
    assert json.loads(path.read_text())["crypto"]["kdfparams"]["n"] == 2**18


def test_a_configured_key_is_used_and_not_written(tmp_path: Path) -> None:
    account = Account.create()
    settings = load_settings(
        {
            "YIELDAGENT_DATA_DIR": str(tmp_path),
            "YIELDAGENT_OPERATOR_PRIVATE_KEY": account.key.to_0x_hex(),
            **RPC,
        }
    )
    signer = load_operator_wallet(settings)
    assert signer.address == account.address
    assert not settings.operator_keystore.exists()
    assert account.key.hex() not in repr(signer)


def test_a_malformed_key_is_a_configuration_error(tmp_path: Path) -> None:
    settings = load_settings(
        {"YIELDAGENT_DATA_DIR": str(tmp_path), "YIELDAGENT_OPERATOR_PRIVATE_KEY": "0x1234"}
    )
    with pytest.raises(ConfigurationError, match="YIELDAGENT_OPERATOR_PRIVATE_KEY"):
        load_operator_wallet(settings)


def test_a_real_chain_refuses_the_development_password(tmp_path: Path) -> None:
    create_keystore(tmp_path / "operator-keystore.json", "yieldagent-development")
    settings = load_settings({"YIELDAGENT_DATA_DIR": str(tmp_path), **RPC})
    with pytest.raises(ConfigurationError) as refused:
        load_operator_wallet(settings)
    message = str(refused.value)
    assert "YIELDAGENT_RPC_URL_8453 is set" in message
    assert "set YIELDAGENT_OPERATOR_KEY_PASSWORD" in message


def test_a_real_chain_refuses_a_missing_key_and_creates_none(tmp_path: Path) -> None:
    settings = load_settings(
        {
            "YIELDAGENT_DATA_DIR": str(tmp_path),
            "YIELDAGENT_OPERATOR_KEY_PASSWORD": PASSWORD,
            **RPC,
        }
    )
    with pytest.raises(ConfigurationError, match="set YIELDAGENT_OPERATOR_PRIVATE_KEY"):
        load_operator_wallet(settings)
    assert not settings.operator_keystore.exists()


def test_a_real_chain_opens_a_keystore_with_its_own_password(tmp_path: Path) -> None:
    assert create_keystore(tmp_path / "operator-keystore.json", PASSWORD)
    env = {"YIELDAGENT_DATA_DIR": str(tmp_path), **RPC}
    signer = load_operator_wallet(
        load_settings({**env, "YIELDAGENT_OPERATOR_KEY_PASSWORD": PASSWORD})
    )
    keystore = json.loads((tmp_path / "operator-keystore.json").read_text())
    assert signer.address.lower() == "0x" + keystore["address"].lower()
    with pytest.raises(ConfigurationError, match="does not open with"):
        load_operator_wallet(
            load_settings({**env, "YIELDAGENT_OPERATOR_KEY_PASSWORD": "a wrong but long password"})
        )


async def test_the_key_is_decrypted_once_not_per_signature(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decrypt = Account.decrypt
    calls: list[str] = []

    def counted(keystore: dict[str, Any], password: str) -> bytes:
        calls.append("decrypt")
        return bytes(decrypt(keystore, password))

    monkeypatch.setattr(Account, "decrypt", staticmethod(counted))
    signer = load_operator_wallet(load_settings({"YIELDAGENT_DATA_DIR": str(tmp_path)}))
    assert calls == ["decrypt"]
    for nonce in range(3):
        signed = await signer.sign_transaction(_tx(nonce))
        assert Account.recover_transaction(signed.raw) == signer.address
    signature = await signer.sign_message(b"hello")
    assert Account.recover_message(encode_defunct(b"hello"), signature=signature) == signer.address
    assert calls == ["decrypt"]


def test_a_second_keystore_never_replaces_the_first(tmp_path: Path) -> None:
    path = tmp_path / "operator-keystore.json"
    assert create_keystore(path, PASSWORD)
    first = path.read_text()
    assert not create_keystore(path, PASSWORD)
    assert path.read_text() == first
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


_STARTER = """
import sys
from yieldagent.chain.operator import load_operator_wallet
from yieldagent.config import load_settings

settings = load_settings(
    {"YIELDAGENT_DATA_DIR": sys.argv[1], "YIELDAGENT_OPERATOR_KEY_PASSWORD": sys.argv[2]}
)
sys.stdin.readline()  # every process starts at once
print(load_operator_wallet(settings).address, flush=True)
"""


def test_processes_that_start_together_use_one_key(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _STARTER, str(tmp_path), PASSWORD],  # a slow scrypt
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        for _ in range(3)
    ]
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("\n")
        process.stdin.flush()
    addresses = {process.communicate(timeout=60)[0].strip() for process in processes}
    assert all(process.returncode == 0 for process in processes)
    keystore = json.loads((tmp_path / "operator-keystore.json").read_text())
    assert len(addresses) == 1
    assert addresses.pop().lower() == "0x" + keystore["address"].lower()
    assert [p.name for p in tmp_path.iterdir()] == ["operator-keystore.json"]
