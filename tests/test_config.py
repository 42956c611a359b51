"""Settings come from YIELDAGENT_* variables, with documented defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from yieldagent.config import load_settings
from yieldagent.domain.errors import ConfigurationError
from yieldagent.domain.risk.settings import RiskSettings


def test_defaults() -> None:
    settings = load_settings({})
    assert (settings.http_host, settings.http_port) == ("127.0.0.1", 8080)
    assert settings.grpc_target == "127.0.0.1:50051"
    assert settings.data_dir == Path("var").resolve()
    assert settings.database_url == f"sqlite:///{Path('var').resolve() / 'yieldagent.db'}"


def test_overrides() -> None:
    settings = load_settings(
        {
            "YIELDAGENT_HTTP_PORT": "9000",
            "YIELDAGENT_GRPC_PORT": "9001",
            "YIELDAGENT_DATA_DIR": "/tmp/ya",
            "YIELDAGENT_DATABASE_URL": "postgresql://h/db",
        }
    )
    assert settings.http_port == 9000
    assert settings.grpc_port == 9001
    assert settings.data_dir == Path("/tmp/ya")
    assert settings.database_url == "postgresql://h/db"


def test_a_bad_number_is_a_clear_error() -> None:
    with pytest.raises(ConfigurationError, match="YIELDAGENT_HTTP_PORT must be an integer"):
        load_settings({"YIELDAGENT_HTTP_PORT": "eighty"})


def test_rpc_urls_and_deployments_are_per_chain(tmp_path: Path) -> None:
    settings = load_settings(
        {
            "YIELDAGENT_DATA_DIR": str(tmp_path),
            "YIELDAGENT_RPC_URL_8453": "http://127.0.0.1:8545",
            "YIELDAGENT_DEPLOYMENT_1": "/tmp/mainnet-fork.json",
            "YIELDAGENT_CONFIRMATIONS": "3",
        }
    )
    assert settings.rpc_urls == {8453: "http://127.0.0.1:8545"}
    assert settings.deployment(1) == Path("/tmp/mainnet-fork.json")
    assert settings.confirmations == 3
    assert settings.deployment(8453) is None  # no devnet manifest yet
    (tmp_path / "devnet.json").write_text("{}")
    assert settings.deployment(8453) == tmp_path / "devnet.json"


def test_a_per_chain_variable_needs_a_chain_id() -> None:
    with pytest.raises(ConfigurationError, match="YIELDAGENT_RPC_URL_base"):
        load_settings({"YIELDAGENT_RPC_URL_base": "http://node"})


def test_operating_defaults() -> None:
    settings = load_settings({"YIELDAGENT_DATA_DIR": "/srv/ya"})
    assert settings.metrics_port == 9464
    assert settings.envoy_admin_port == 0  # any free port; its address under the data dir
    assert settings.envoy_access_log == Path("/srv/ya/envoy-access.log")
    assert (settings.partner_rate_limit, settings.partner_rate_burst) == (100.0, 200.0)


def test_operating_settings_can_be_set_or_turned_off() -> None:
    settings = load_settings(
        {
            "YIELDAGENT_METRICS_PORT": "0",
            "YIELDAGENT_ENVOY_ADMIN_PORT": "9901",
            "YIELDAGENT_ENVOY_ACCESS_LOG": "/var/log/ya/access.log",
            "YIELDAGENT_PARTNER_RATE_LIMIT": "0.5",
        }
    )
    assert (settings.metrics_port, settings.envoy_admin_port) == (0, 9901)
    assert settings.envoy_access_log == Path("/var/log/ya/access.log")
    assert (settings.partner_rate_limit, settings.partner_rate_burst) == (0.5, 1.0)
    off = load_settings(
        {
            "YIELDAGENT_METRICS_PORT": "off",
            "YIELDAGENT_ENVOY_ADMIN_PORT": "OFF",
            "YIELDAGENT_ENVOY_ACCESS_LOG": "off",
            "YIELDAGENT_PARTNER_RATE_LIMIT": "0",
        }
    )
    assert off.metrics_port is None and off.envoy_admin_port is None
    assert off.envoy_access_log is None and off.partner_rate_limit == 0


def test_a_port_out_of_range_is_a_clear_error() -> None:
    with pytest.raises(ConfigurationError, match="YIELDAGENT_METRICS_PORT must be a port"):
        load_settings({"YIELDAGENT_METRICS_PORT": "70000"})


def test_the_risk_guards_read_their_settings_and_refuse_a_share_out_of_range() -> None:
    assert load_settings({}).risk == RiskSettings()
    risk = load_settings(
        {"YIELDAGENT_RISK_MAX_POOL_SHARE": "0.2", "YIELDAGENT_RISK_MIN_WAIT_SECONDS": "60"}
    ).risk
    assert (risk.max_pool_share, risk.min_wait_seconds) == (0.2, 60)
    with pytest.raises(ConfigurationError, match="YIELDAGENT_RISK_MAX_TVL_DROP"):
        load_settings({"YIELDAGENT_RISK_MAX_TVL_DROP": "1.5"})
