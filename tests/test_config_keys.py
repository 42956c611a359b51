"""The operator key's settings: secrets out of the settings' repr, and a real chain refuses
a development key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from support.anvil import dev_key
from yieldagent.chain.operator import WELL_KNOWN_ADDRESSES, load_operator_wallet
from yieldagent.config import DEV_KEY_PASSWORD, load_settings, require_operator_key
from yieldagent.domain.errors import ConfigurationError


def test_the_settings_repr_carries_no_secret() -> None:
    secrets = {
        "YIELDAGENT_OPERATOR_PRIVATE_KEY": "0x" + "5e" * 32,
        "YIELDAGENT_OPERATOR_KEY_PASSWORD": "operator-keystore-password",
        "YIELDAGENT_WEBHOOK_SECRET_KEY": "webhook-sealing-key",
        "YIELDAGENT_DATABASE_URL": "postgresql://app:database-password@db/app",
        "YIELDAGENT_RPC_URL_8453": "https://base.example/v2/rpc-api-key",
    }
    settings = load_settings(secrets)
    shown = repr(settings) + str(settings)
    for value in secrets.values():
        assert value not in shown
    assert "5e5e" not in shown
    assert settings.operator_private_key is not None
    assert settings.operator_private_key.reveal() == secrets["YIELDAGENT_OPERATOR_PRIVATE_KEY"]
    assert settings.operator_key_password.reveal() == "operator-keystore-password"


def test_the_development_password_is_the_default_off_a_real_chain(tmp_path: Path) -> None:
    settings = load_settings({"YIELDAGENT_DATA_DIR": str(tmp_path)})
    assert settings.operator_key_password.reveal() == DEV_KEY_PASSWORD
    require_operator_key(settings)  # the simulated chain: nothing to refuse


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({}, "set YIELDAGENT_OPERATOR_KEY_PASSWORD"),
        (
            {"YIELDAGENT_OPERATOR_KEY_PASSWORD": "a password of its own"},
            "set YIELDAGENT_OPERATOR_PRIVATE_KEY",
        ),
        ({"YIELDAGENT_OPERATOR_KEY_PASSWORD": "hunter2"}, "weak: it has fewer than 16"),
        ({"YIELDAGENT_OPERATOR_KEY_PASSWORD": "abababababababababab"}, "weak: it repeats"),
    ],
)
def test_a_real_chain_needs_a_key_fit_for_money(
    tmp_path: Path, env: dict[str, str], names: str
) -> None:
    settings = load_settings(
        {
            "YIELDAGENT_DATA_DIR": str(tmp_path),
            "YIELDAGENT_RPC_URL_8453": "http://127.0.0.1:8545",
            "YIELDAGENT_RPC_URL_1": "http://127.0.0.1:8546",
            **env,
        }
    )
    with pytest.raises(ConfigurationError, match=names) as refused:
        require_operator_key(settings)
    assert "YIELDAGENT_RPC_URL_1, YIELDAGENT_RPC_URL_8453 are set" in str(refused.value)
    configured = load_settings(
        {"YIELDAGENT_RPC_URL_8453": "x", "YIELDAGENT_OPERATOR_PRIVATE_KEY": "0x" + "5e" * 32}
    )
    require_operator_key(configured)


def test_a_devnet_takes_a_short_keystore_password(tmp_path: Path) -> None:
    settings = load_settings(
        {
            "YIELDAGENT_DATA_DIR": str(tmp_path),
            "YIELDAGENT_ENV": "devnet",
            "YIELDAGENT_RPC_URL_8453": "http://127.0.0.1:8545",
            "YIELDAGENT_OPERATOR_KEY_PASSWORD": "devnet-only",
        }
    )
    with pytest.raises(ConfigurationError, match="there is no operator key"):
        require_operator_key(settings)  # past the password, to the missing keystore


ANVIL_KEY_0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"


def test_a_real_chain_refuses_anvils_published_keys(tmp_path: Path) -> None:
    """A mistaken operator copies the devnet's key to production: bots sweep whatever
    reaches those addresses on every chain."""
    real = {
        "YIELDAGENT_DATA_DIR": str(tmp_path),
        "YIELDAGENT_ENV": "production",
        "YIELDAGENT_RPC_URL_8453": "https://base.example/v2/key",
    }
    for index in range(10):
        key = dev_key(index).hex()
        with pytest.raises(ConfigurationError, match="one of anvil's published development"):
            load_operator_wallet(load_settings({**real, "YIELDAGENT_OPERATOR_PRIVATE_KEY": key}))
    own = load_settings({**real, "YIELDAGENT_OPERATOR_PRIVATE_KEY": "0x" + "5e" * 32})
    assert load_operator_wallet(own).address not in WELL_KNOWN_ADDRESSES
    devnet = {**real, "YIELDAGENT_ENV": "devnet", "YIELDAGENT_RPC_URL_8453": "http://127.0.0.1:1"}
    signer = load_operator_wallet(
        load_settings({**devnet, "YIELDAGENT_OPERATOR_PRIVATE_KEY": ANVIL_KEY_0})
    )
    assert signer.address == "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"


def test_the_private_key_leaves_the_environment_once_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("YIELDAGENT_OPERATOR_PRIVATE_KEY", "0x" + "5e" * 32)
    settings = load_settings()
    assert "YIELDAGENT_OPERATOR_PRIVATE_KEY" not in os.environ
    assert settings.operator_private_key is not None
    assert settings.operator_private_key.reveal() == "0x" + "5e" * 32
