"""Settings, read once from ``YIELDAGENT_*`` environment variables.

Every setting has a default that runs the whole service on embedded parts:
SQLite under the data directory and the simulated chain. docs/configuration.md lists them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from yieldagent.domain.errors import ConfigurationError
from yieldagent.domain.risk.settings import RiskSettings

DEV_KEY_PASSWORD = "yieldagent-development"  # noqa: S105  (documented; set your own outside dev)


@dataclass(frozen=True, slots=True)
class Settings:
    """The service's configuration."""

    http_host: str
    http_port: int
    grpc_host: str
    grpc_port: int
    envoy_admin_port: int | None
    """Envoy's admin port (stats, config dump) on 127.0.0.1; 0 (the default): any free
    port, written to ``<data dir>/envoy-admin.address``; None: no admin listener."""
    data_dir: Path
    database_url: str
    operator_private_key: str | None
    operator_key_password: str
    log_level: str
    log_format: str
    worker_interval_seconds: float
    shutdown_grace_seconds: float
    envoy_config: Path
    descriptor_set: Path
    sim_seed: int
    sim_speed: float
    agent_interval_seconds: float
    min_apr_gain: float
    max_break_even_days: float
    performance_fee_bps: int
    max_deposit_usd: float
    fee_collector: str | None
    idempotency_ttl_seconds: float
    idempotency_wait_seconds: float
    lease_seconds: float = 60.0
    swap_slippage_bps: int = 50
    stuck_retry_seconds: float = 0.0
    rpc_urls: Mapping[int, str] = field(default_factory=dict)
    """Chains served by web3 against a JSON-RPC node (``YIELDAGENT_RPC_URL_<chain_id>``);
    the others stay simulated."""
    deployments: Mapping[int, Path] = field(default_factory=dict)
    """Deployment manifests (``YIELDAGENT_DEPLOYMENT_<chain_id>``) naming the contracts of
    a chain that is not where the catalog says (a devnet)."""
    confirmations: int = 1
    tx_timeout_seconds: float = 60.0
    log_range: int = 2_000
    events_poll_seconds: float = 1.0
    """How often a WatchWallet stream looks for events another process recorded."""
    webhook_interval_seconds: float = 1.0
    webhook_timeout_seconds: float = 5.0
    webhook_max_backoff_seconds: float = 3600.0
    webhook_batch: int = 50
    webhook_secret_key: str | None = field(default=None, repr=False)
    """Seals webhook secrets at rest; unset: a key generated under the data dir."""
    metrics_port: int | None = 9464
    """Where ``/metrics`` is served on 127.0.0.1; 0: any free port, None: not served."""
    partner_rate_limit: float = 100.0
    """Calls a second each partner may make (per process); 0: unlimited."""
    envoy_access_log: Path | None = None
    """Envoy's JSON access log; None: none."""
    risk: RiskSettings = field(default_factory=RiskSettings)
    """The risk guards' thresholds (``YIELDAGENT_RISK_*``)."""

    @property
    def partner_rate_burst(self) -> float:
        """The calls a partner may make at once: two seconds' worth of its rate, at least 1."""
        return max(2.0 * self.partner_rate_limit, 1.0)

    def deployment(self, chain_id: int) -> Path | None:
        """The deployment manifest for ``chain_id``: the configured one, else the devnet's
        (``<data dir>/devnet.json``, written by ``make devnet``) if it exists."""
        configured = self.deployments.get(chain_id)
        if configured is not None:
            return configured
        devnet = self.data_dir / "devnet.json"
        return devnet if devnet.exists() else None

    @property
    def grpc_target(self) -> str:
        """Address the gRPC server listens on, as host:port."""
        return f"{self.grpc_host}:{self.grpc_port}"

    @property
    def operator_keystore(self) -> Path:
        """Where the generated operator key is kept, encrypted (Web3 Secret Storage)."""
        return self.data_dir / "operator-keystore.json"


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be an integer, got {raw!r}") from None


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be a number, got {raw!r}") from None


OFF = frozenset({"off", "none", "disabled"})


def _port_or_off(env: Mapping[str, str], name: str, default: int) -> int | None:
    """A port setting that ``off`` disables (None)."""
    raw = (env.get(name) or "").strip().lower()
    if raw in OFF:
        return None
    port = _int(env, name, default)
    if not 0 <= port <= 65_535:
        raise ConfigurationError(f"{name} must be a port (0-65535) or 'off', got {port}")
    return port


def _access_log(env: Mapping[str, str], data_dir: Path) -> Path | None:
    raw = env.get("YIELDAGENT_ENVOY_ACCESS_LOG")
    if raw is None or raw == "":
        return data_dir / "envoy-access.log"
    if raw.strip().lower() in OFF:
        return None
    return Path(raw).resolve()


def _per_chain(env: Mapping[str, str], prefix: str) -> dict[int, str]:
    """``<prefix><chain_id>`` variables, by chain id."""
    found = {}
    for name, value in env.items():
        if name.startswith(prefix) and value:
            suffix = name.removeprefix(prefix)
            if not suffix.isdigit():
                raise ConfigurationError(f"{name}: the suffix must be a chain id")
            found[int(suffix)] = value
    return found


def _ratio(env: Mapping[str, str], name: str, default: float) -> float:
    """A share between 0 (exclusive) and 1 (inclusive)."""
    value = _float(env, name, default)
    if not 0 < value <= 1:
        raise ConfigurationError(f"{name} must be above 0 and at most 1, got {value}")
    return value


def _risk(env: Mapping[str, str]) -> RiskSettings:
    """The risk guards' thresholds; docs/configuration.md says what each guards."""
    default = RiskSettings()
    return RiskSettings(
        max_pool_share=_ratio(env, "YIELDAGENT_RISK_MAX_POOL_SHARE", default.max_pool_share),
        min_pool_multiple=max(
            _int(env, "YIELDAGENT_RISK_MIN_POOL_MULTIPLE", default.min_pool_multiple), 1
        ),
        max_tvl_drop=_ratio(env, "YIELDAGENT_RISK_MAX_TVL_DROP", default.max_tvl_drop),
        window_seconds=max(_int(env, "YIELDAGENT_RISK_WINDOW_SECONDS", default.window_seconds), 1),
        max_utilisation=_ratio(env, "YIELDAGENT_RISK_MAX_UTILISATION", default.max_utilisation),
        utilisation_seconds=max(
            _int(env, "YIELDAGENT_RISK_UTILISATION_SECONDS", default.utilisation_seconds), 0
        ),
        min_free_liquidity=_ratio(
            env, "YIELDAGENT_RISK_MIN_FREE_LIQUIDITY", default.min_free_liquidity
        ),
        max_depeg=_ratio(env, "YIELDAGENT_RISK_MAX_DEPEG", default.max_depeg),
        max_move_loss_bps=max(
            _int(env, "YIELDAGENT_RISK_MAX_MOVE_LOSS_BPS", default.max_move_loss_bps), 0
        ),
        min_wait_seconds=max(
            _int(env, "YIELDAGENT_RISK_MIN_WAIT_SECONDS", default.min_wait_seconds), 0
        ),
    )


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Reads the settings from ``env`` (the process environment by default)."""
    env = os.environ if env is None else env
    data_dir = Path(env.get("YIELDAGENT_DATA_DIR") or "var").resolve()
    database_url = env.get("YIELDAGENT_DATABASE_URL") or f"sqlite:///{data_dir / 'yieldagent.db'}"
    return Settings(
        http_host=env.get("YIELDAGENT_HTTP_HOST") or "127.0.0.1",
        http_port=_int(env, "YIELDAGENT_HTTP_PORT", 8080),
        grpc_host=env.get("YIELDAGENT_GRPC_HOST") or "127.0.0.1",
        grpc_port=_int(env, "YIELDAGENT_GRPC_PORT", 50051),
        envoy_admin_port=_port_or_off(env, "YIELDAGENT_ENVOY_ADMIN_PORT", 0),
        data_dir=data_dir,
        database_url=database_url,
        operator_private_key=env.get("YIELDAGENT_OPERATOR_PRIVATE_KEY") or None,
        operator_key_password=env.get("YIELDAGENT_OPERATOR_KEY_PASSWORD") or DEV_KEY_PASSWORD,
        log_level=(env.get("YIELDAGENT_LOG_LEVEL") or "INFO").upper(),
        log_format=env.get("YIELDAGENT_LOG_FORMAT") or "json",
        worker_interval_seconds=_float(env, "YIELDAGENT_WORKER_INTERVAL_SECONDS", 60.0),
        shutdown_grace_seconds=_float(env, "YIELDAGENT_SHUTDOWN_GRACE_SECONDS", 30.0),
        envoy_config=Path(env.get("YIELDAGENT_ENVOY_CONFIG") or "envoy/envoy.yaml").resolve(),
        descriptor_set=Path(
            env.get("YIELDAGENT_DESCRIPTOR_SET") or "build/yieldagent.pb"
        ).resolve(),
        sim_seed=_int(env, "YIELDAGENT_SIM_SEED", 7),
        sim_speed=_float(env, "YIELDAGENT_SIM_SPEED", 1.0),
        agent_interval_seconds=_float(env, "YIELDAGENT_AGENT_INTERVAL_SECONDS", 3600.0),
        min_apr_gain=_float(env, "YIELDAGENT_MIN_APR_GAIN", 0.25),
        max_break_even_days=_float(env, "YIELDAGENT_MAX_BREAK_EVEN_DAYS", 10.0),
        performance_fee_bps=_int(env, "YIELDAGENT_PERFORMANCE_FEE_BPS", 1000),
        max_deposit_usd=_float(env, "YIELDAGENT_MAX_DEPOSIT_USD", 1_000_000.0),
        fee_collector=env.get("YIELDAGENT_FEE_COLLECTOR") or None,
        idempotency_ttl_seconds=_float(env, "YIELDAGENT_IDEMPOTENCY_TTL_SECONDS", 86_400.0),
        idempotency_wait_seconds=_float(env, "YIELDAGENT_IDEMPOTENCY_WAIT_SECONDS", 30.0),
        lease_seconds=_float(env, "YIELDAGENT_LEASE_SECONDS", 60.0),
        swap_slippage_bps=_int(env, "YIELDAGENT_SWAP_SLIPPAGE_BPS", 50),
        stuck_retry_seconds=_float(env, "YIELDAGENT_STUCK_RETRY_SECONDS", 0.0),
        rpc_urls=_per_chain(env, "YIELDAGENT_RPC_URL_"),
        deployments={
            chain_id: Path(path).resolve()
            for chain_id, path in _per_chain(env, "YIELDAGENT_DEPLOYMENT_").items()
        },
        confirmations=max(_int(env, "YIELDAGENT_CONFIRMATIONS", 1), 1),
        tx_timeout_seconds=_float(env, "YIELDAGENT_TX_TIMEOUT_SECONDS", 60.0),
        log_range=max(_int(env, "YIELDAGENT_LOG_RANGE", 2_000), 1),
        events_poll_seconds=max(_float(env, "YIELDAGENT_EVENTS_POLL_SECONDS", 1.0), 0.01),
        webhook_interval_seconds=max(_float(env, "YIELDAGENT_WEBHOOK_INTERVAL_SECONDS", 1.0), 0.01),
        webhook_timeout_seconds=max(_float(env, "YIELDAGENT_WEBHOOK_TIMEOUT_SECONDS", 5.0), 0.1),
        webhook_max_backoff_seconds=max(
            _float(env, "YIELDAGENT_WEBHOOK_MAX_BACKOFF_SECONDS", 3600.0), 0.01
        ),
        webhook_batch=max(_int(env, "YIELDAGENT_WEBHOOK_BATCH", 50), 1),
        webhook_secret_key=env.get("YIELDAGENT_WEBHOOK_SECRET_KEY") or None,
        metrics_port=_port_or_off(env, "YIELDAGENT_METRICS_PORT", 9464),
        partner_rate_limit=max(_float(env, "YIELDAGENT_PARTNER_RATE_LIMIT", 100.0), 0.0),
        envoy_access_log=_access_log(env, data_dir),
        risk=_risk(env),
    )
