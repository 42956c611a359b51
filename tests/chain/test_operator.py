"""The operator wallet: generated once, kept encrypted, never shown."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from eth_account import Account

from yieldagent.chain.operator import load_operator_wallet
from yieldagent.config import load_settings
from yieldagent.domain.errors import ConfigurationError


def test_the_development_key_is_generated_once_and_stored_encrypted(tmp_path: Path) -> None:
    settings = load_settings({"YIELDAGENT_DATA_DIR": str(tmp_path)})
    first = load_operator_wallet(settings)
    again = load_operator_wallet(settings)
    assert first.address == again.address
    keystore = settings.operator_keystore
    assert stat.S_IMODE(keystore.stat().st_mode) == 0o600
    key = first.private_key()
    assert Account.from_key(key).address == first.address
    assert key.hex() not in keystore.read_text()
    assert "crypto" in json.loads(keystore.read_text())
    assert key.hex() not in repr(first)


def test_a_configured_key_is_used_and_not_written(tmp_path: Path) -> None:
    account = Account.create()
    settings = load_settings(
        {
            "YIELDAGENT_DATA_DIR": str(tmp_path),
            "YIELDAGENT_OPERATOR_PRIVATE_KEY": account.key.to_0x_hex(),
        }
    )
    wallet = load_operator_wallet(settings)
    assert wallet.address == account.address
    assert not settings.operator_keystore.exists()


def test_a_malformed_key_is_a_configuration_error(tmp_path: Path) -> None:
    settings = load_settings(
        {"YIELDAGENT_DATA_DIR": str(tmp_path), "YIELDAGENT_OPERATOR_PRIVATE_KEY": "0x1234"}
    )
    with pytest.raises(ConfigurationError):
        load_operator_wallet(settings)
