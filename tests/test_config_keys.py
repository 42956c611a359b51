"""The operator key's settings: secrets out of the settings' repr, and a real chain refuses
a development key."""

from __future__ import annotations

from pathlib import Path

import pytest

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
        ({"YIELDAGENT_OPERATOR_KEY_PASSWORD": "own"}, "set YIELDAGENT_OPERATOR_PRIVATE_KEY"),
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
