"""Settings come from YIELDAGENT_* variables, with documented defaults."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from yieldagent.config import (
    MIN_CONFIRMATIONS,
    check_production,
    load_settings,
    production_problems,
)
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
    assert settings.envoy_access_log == Path("/dev/stdout")  # rotated by what runs us
    assert load_settings({"YIELDAGENT_ENVOY_ACCESS_LOG": "stdout"}).envoy_access_log == Path(
        "/dev/stdout"
    )
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


def test_tls_files_come_together_and_must_exist(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    with pytest.raises(ConfigurationError, match="set together"):
        load_settings({"YIELDAGENT_TLS_CERT_FILE": str(cert)})
    with pytest.raises(ConfigurationError, match="YIELDAGENT_TLS_CERT_FILE: no such file"):
        load_settings({"YIELDAGENT_TLS_CERT_FILE": str(cert), "YIELDAGENT_TLS_KEY_FILE": str(key)})
    cert.write_text("certificate")
    key.write_text("key")
    settings = load_settings(
        {"YIELDAGENT_TLS_CERT_FILE": str(cert), "YIELDAGENT_TLS_KEY_FILE": str(key)}
    )
    assert settings.tls and (settings.tls_cert_file, settings.tls_key_file) == (cert, key)
    assert not load_settings({}).tls


def test_reflection_is_on_in_development_and_off_in_production() -> None:
    assert load_settings({}).grpc_reflection
    assert not load_settings({"YIELDAGENT_GRPC_REFLECTION": "off"}).grpc_reflection
    assert not load_settings({"YIELDAGENT_ENV": "production"}).grpc_reflection
    with pytest.raises(ConfigurationError, match="YIELDAGENT_GRPC_REFLECTION must be"):
        load_settings({"YIELDAGENT_GRPC_REFLECTION": "maybe"})
    with pytest.raises(ConfigurationError, match="YIELDAGENT_ENV must be"):
        load_settings({"YIELDAGENT_ENV": "staging"})


def test_the_grpc_edge_listener_is_off_unless_given_a_port() -> None:
    assert load_settings({}).grpc_edge_port is None
    assert load_settings({"YIELDAGENT_GRPC_EDGE_PORT": "50052"}).grpc_edge_port == 50052


def _production(tmp_path: Path, **overrides: str) -> dict[str, str]:
    """A production environment with no problem, plus ``overrides``."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_text("certificate")
    key.write_text("key")
    return {
        "YIELDAGENT_ENV": "production",
        "YIELDAGENT_HTTP_HOST": "192.0.2.10",
        "YIELDAGENT_GRPC_HOST": "192.0.2.10",
        "YIELDAGENT_TLS_CERT_FILE": str(cert),
        "YIELDAGENT_TLS_KEY_FILE": str(key),
        "YIELDAGENT_RPC_URL_8453": "http://node:8545",
        "YIELDAGENT_RPC_URL_1": "http://node:8546",
        "YIELDAGENT_CONFIRMATIONS": "10",
        "YIELDAGENT_WEBHOOK_SECRET_KEY": "sealing",
        "YIELDAGENT_METRICS_HOST": "10.0.0.5",
        **overrides,
    }


def test_a_safe_production_configuration_starts(tmp_path: Path) -> None:
    settings = load_settings(_production(tmp_path))
    assert production_problems(settings) == []
    check_production(settings)
    # Metrics off, or kept on loopback on purpose, are fine too.
    for metrics in ({"YIELDAGENT_METRICS_PORT": "off"}, {"YIELDAGENT_METRICS_HOST": "127.0.0.1"}):
        assert production_problems(load_settings(_production(tmp_path, **metrics))) == []


def test_production_lists_every_problem_at_once(tmp_path: Path) -> None:
    env = _production(tmp_path, YIELDAGENT_GRPC_REFLECTION="on", YIELDAGENT_CONFIRMATIONS="2")
    for name in (
        "YIELDAGENT_TLS_CERT_FILE",
        "YIELDAGENT_TLS_KEY_FILE",
        "YIELDAGENT_WEBHOOK_SECRET_KEY",
        "YIELDAGENT_METRICS_HOST",
    ):
        del env[name]
    with pytest.raises(ConfigurationError) as refused:
        check_production(load_settings(env))
    lines = refused.value.detail.splitlines()
    assert lines[0] == "YIELDAGENT_ENV=production refuses to start:"
    assert [line.split(" ")[1] for line in lines[1:3]] == ["REST", "gRPC"]
    assert "YIELDAGENT_GRPC_REFLECTION=off" in lines[3]
    assert lines[4:6] == [
        "chain 1 needs at least 3 confirmations, YIELDAGENT_CONFIRMATIONS is 2",
        "chain 8453 needs at least 10 confirmations, YIELDAGENT_CONFIRMATIONS is 2",
    ]
    assert "YIELDAGENT_WEBHOOK_SECRET_KEY" in lines[6]
    assert "YIELDAGENT_METRICS_HOST" in lines[7]
    assert len(lines) == 8


def test_plaintext_is_fine_on_loopback_and_without_the_edge(tmp_path: Path) -> None:
    env = _production(tmp_path, YIELDAGENT_HTTP_HOST="::1", YIELDAGENT_GRPC_HOST="localhost")
    del env["YIELDAGENT_TLS_CERT_FILE"], env["YIELDAGENT_TLS_KEY_FILE"]
    assert production_problems(load_settings(env)) == []
    env["YIELDAGENT_HTTP_HOST"] = "192.0.2.10"
    assert production_problems(load_settings(env), with_edge=False) == []
    assert len(production_problems(load_settings(env))) == 1


def test_development_refuses_nothing() -> None:
    settings = load_settings({"YIELDAGENT_GRPC_HOST": "192.0.2.10"})
    assert production_problems(settings)  # what production would refuse ...
    check_production(settings)  # ... development accepts


def test_every_catalog_chain_has_a_documented_minimum() -> None:
    from yieldagent.catalog import load_catalog

    assert set(load_catalog().chain_ids()) <= set(MIN_CONFIRMATIONS)
    page = (Path(__file__).parents[1] / "docs" / "configuration.md").read_text()
    for chain_id, least in MIN_CONFIRMATIONS.items():
        assert f"| {chain_id} | {least} |" in page


def test_webhook_and_retention_defaults() -> None:
    settings = load_settings({})
    assert settings.environment == "development" and not settings.production
    assert not settings.webhook_allow_loopback
    assert settings.webhook_dead_after_seconds == 3 * 86_400
    assert settings.event_retention_seconds == 30 * 86_400
    assert settings.prune_batch == 1_000


def test_loopback_webhooks_are_for_development_only() -> None:
    allowed = load_settings({"YIELDAGENT_WEBHOOK_ALLOW_LOOPBACK": "true"})
    assert allowed.webhook_allow_loopback
    assert load_settings({"YIELDAGENT_ENV": "production"}).production
    with pytest.raises(ConfigurationError, match="YIELDAGENT_WEBHOOK_ALLOW_LOOPBACK"):
        load_settings({"YIELDAGENT_ENV": "production", "YIELDAGENT_WEBHOOK_ALLOW_LOOPBACK": "1"})
    with pytest.raises(ConfigurationError, match="YIELDAGENT_ENV"):
        load_settings({"YIELDAGENT_ENV": "prod"})
    with pytest.raises(ConfigurationError, match="must be 'on' or 'off'"):
        load_settings({"YIELDAGENT_WEBHOOK_ALLOW_LOOPBACK": "maybe"})


def test_the_risk_guards_read_their_settings_and_refuse_a_share_out_of_range() -> None:
    assert load_settings({}).risk == RiskSettings()
    risk = load_settings(
        {"YIELDAGENT_RISK_MAX_POOL_SHARE": "0.2", "YIELDAGENT_RISK_MIN_WAIT_SECONDS": "60"}
    ).risk
    assert (risk.max_pool_share, risk.min_wait_seconds) == (0.2, 60)
    with pytest.raises(ConfigurationError, match="YIELDAGENT_RISK_MAX_TVL_DROP"):
        load_settings({"YIELDAGENT_RISK_MAX_TVL_DROP": "1.5"})


def test_serving_processes_are_one_by_default_and_at_least_one() -> None:
    assert load_settings({}).grpc_processes == 1
    assert load_settings({"YIELDAGENT_GRPC_PROCESSES": "2"}).grpc_processes == 2
    for bad in ("0", "-1"):
        with pytest.raises(
            ConfigurationError, match="YIELDAGENT_GRPC_PROCESSES must be at least 1"
        ):
            load_settings({"YIELDAGENT_GRPC_PROCESSES": bad})
    with pytest.raises(ConfigurationError, match="YIELDAGENT_GRPC_PROCESSES must be an integer"):
        load_settings({"YIELDAGENT_GRPC_PROCESSES": "two"})


def test_activations_are_placed_inline_unless_set_to_background() -> None:
    assert load_settings({}).activation_placement == "inline"
    env = {"YIELDAGENT_ACTIVATION_PLACEMENT": "Background"}
    assert load_settings(env).activation_placement == "background"
    with pytest.raises(ConfigurationError, match="YIELDAGENT_ACTIVATION_PLACEMENT must be"):
        load_settings({"YIELDAGENT_ACTIVATION_PLACEMENT": "later"})


def test_the_serving_event_loop_is_uvloop_unless_set_to_asyncio() -> None:
    assert load_settings({}).event_loop == "uvloop"
    assert load_settings({"YIELDAGENT_EVENT_LOOP": " AsyncIO "}).event_loop == "asyncio"
    with pytest.raises(ConfigurationError, match="YIELDAGENT_EVENT_LOOP must be one of"):
        load_settings({"YIELDAGENT_EVENT_LOOP": "trio"})


def test_envoy_has_one_worker_by_default_and_at_least_one() -> None:
    assert load_settings({}).envoy_workers == 1
    assert load_settings({"YIELDAGENT_ENVOY_WORKERS": "4"}).envoy_workers == 4
    with pytest.raises(ConfigurationError, match="YIELDAGENT_ENVOY_WORKERS must be at least 1"):
        load_settings({"YIELDAGENT_ENVOY_WORKERS": "0"})


def test_a_nodes_url_with_no_environment_named_refuses_to_start() -> None:
    """A mistaken operator sets a provider's URL and forgets YIELDAGENT_ENV: the service
    would serve real money in development mode (plaintext anywhere, reflection on)."""
    for env in ({}, {"YIELDAGENT_ENV": "development"}):
        settings = load_settings({**env, "YIELDAGENT_RPC_URL_8453": "https://base.example/v2/k"})
        with pytest.raises(ConfigurationError) as refused:
            check_production(settings)
        assert refused.value.detail.startswith("YIELDAGENT_RPC_URL_8453 is set, so the service")
        assert "set YIELDAGENT_ENV=production, or YIELDAGENT_ENV=devnet" in refused.value.detail
        assert "base.example" not in refused.value.detail  # names the variable, not its URL


def test_the_devnet_named_serves_a_local_node_only() -> None:
    local = {"YIELDAGENT_ENV": "devnet", "YIELDAGENT_RPC_URL_8453": "http://127.0.0.1:8545"}
    settings = load_settings(local)
    check_production(settings)  # development's leniency, on purpose
    assert settings.devnet and not settings.production and settings.grpc_reflection
    remote = load_settings({**local, "YIELDAGENT_RPC_URL_1": "https://eth.example/v2/key"})
    with pytest.raises(ConfigurationError, match="YIELDAGENT_RPC_URL_1 names a node elsewhere"):
        check_production(remote)


def test_production_refuses_turned_off_rate_limits(tmp_path: Path) -> None:
    for name in ("YIELDAGENT_CLIENT_RATE_LIMIT", "YIELDAGENT_PARTNER_RATE_LIMIT"):
        problems = production_problems(load_settings(_production(tmp_path, **{name: "0"})))
        assert problems == [
            f"per-{name.split('_')[1].lower()} limits are off ({name}=0): set a rate a second"
        ]


def test_production_refuses_unlimited_money_calls(tmp_path: Path) -> None:
    env = _production(tmp_path, YIELDAGENT_WALLET_MONEY_CALLS_PER_MINUTE="0")
    assert production_problems(load_settings(env)) == [
        "per-wallet money call limits are off (YIELDAGENT_WALLET_MONEY_CALLS_PER_MINUTE=0):"
        " set calls a minute"
    ]


def test_the_minimum_withdrawal_is_read_exactly() -> None:
    assert load_settings({}).min_withdraw_usd == Decimal(10)
    assert load_settings({}).wallet_money_calls_per_minute == 10
    exact = load_settings({"YIELDAGENT_MIN_WITHDRAW_USD": "0.1"}).min_withdraw_usd
    assert exact == Decimal("0.1")  # the string's value: Decimal(0.1) is 0.1000000000000000055…
    for wrong in ("ten", "-1", "NaN", "Infinity"):
        with pytest.raises(ConfigurationError, match="YIELDAGENT_MIN_WITHDRAW_USD"):
            load_settings({"YIELDAGENT_MIN_WITHDRAW_USD": wrong})


def test_production_refuses_a_plaintext_grpc_server_off_loopback_without_the_edge(
    tmp_path: Path,
) -> None:
    env = _production(tmp_path, YIELDAGENT_HTTP_HOST="127.0.0.1")
    del env["YIELDAGENT_TLS_CERT_FILE"], env["YIELDAGENT_TLS_KEY_FILE"]
    [problem] = production_problems(load_settings(env), with_edge=False)
    assert problem.startswith("the gRPC server listener on 192.0.2.10 (YIELDAGENT_GRPC_HOST)")


def test_transactions_in_flight_are_capped_at_least_at_one() -> None:
    assert load_settings({}).tx_max_in_flight == 256
    assert load_settings({"YIELDAGENT_TX_MAX_IN_FLIGHT": "16"}).tx_max_in_flight == 16
    assert load_settings({"YIELDAGENT_TX_MAX_IN_FLIGHT": "0"}).tx_max_in_flight == 1


def test_the_wait_before_a_dropped_transaction_goes_out_again_is_at_least_a_second() -> None:
    assert load_settings({}).tx_resend_seconds == 6.0
    assert load_settings({"YIELDAGENT_TX_RESEND_SECONDS": "12"}).tx_resend_seconds == 12.0
    assert load_settings({"YIELDAGENT_TX_RESEND_SECONDS": "0"}).tx_resend_seconds == 1.0
