"""Settings, read once from ``YIELDAGENT_*`` environment variables.

Every setting has a default that runs the whole service on embedded parts:
SQLite under the data directory and the simulated chain. docs/configuration.md lists them.
Production mode's checks (``production_problems``) judge the settings before anything
starts: each is a function of its own, naming the problem and its fix. They stay beside
the settings they judge, past the house's usual length, so that one module says what every
variable means and when it is refused.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from urllib.parse import urlsplit

from yieldagent.domain.errors import ConfigurationError
from yieldagent.domain.risk.settings import RiskSettings
from yieldagent.secret_values import Secret

DEV_KEY_PASSWORD = "yieldagent-development"  # noqa: S105  (documented; refused on a real chain)


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
    database_url: str = field(repr=False)
    """Out of ``repr``: a URL may carry the database's password."""
    operator_private_key: Secret | None
    operator_key_password: Secret
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
    agent_batch: int = 100
    """Wallets one agent claims, values, plans and moves together (``YIELDAGENT_AGENT_BATCH``)."""
    agent_concurrent_batches: int = 2
    """Batches a cycle runs at once (``YIELDAGENT_AGENT_CONCURRENT_BATCHES``)."""
    guard_watch_seconds: float = 10.0
    """How often the worker judges the pools the service holds funds in, due wallets or
    not, and starts a cycle when the guards exit one (``YIELDAGENT_GUARD_WATCH_SECONDS``)."""
    swap_slippage_bps: int = 50
    stuck_retry_seconds: float = 0.0
    rpc_urls: Mapping[int, str] = field(default_factory=dict, repr=False)
    """Chains served by web3 against a JSON-RPC node (``YIELDAGENT_RPC_URL_<chain_id>``);
    the others stay simulated. Out of ``repr``: a provider's URL often carries its API key."""
    deployments: Mapping[int, Path] = field(default_factory=dict)
    """Deployment manifests (``YIELDAGENT_DEPLOYMENT_<chain_id>``) naming the contracts of
    a chain that is not where the catalog says (a devnet)."""
    collateral_feeds: Mapping[int, tuple[tuple[str, str, str], ...]] = field(default_factory=dict)
    """Pegged collaterals the depeg guard watches on a web3 chain, as (token, feed, peg)
    (``YIELDAGENT_COLLATERAL_FEEDS_<chain_id>``); a chain set here ignores its manifest's
    list."""
    confirmations: int = 1
    tx_timeout_seconds: float = 60.0
    tx_max_in_flight: int = 256
    """Most operator transactions of one process broadcast and not yet mined, per chain."""
    tx_resend_seconds: float = 6.0
    """How long the operator's next nonce may stay unmined before the node is asked
    whether it dropped that transaction."""
    log_range: int = 2_000
    multicall_batch: int = 500
    """Most calls one Multicall3 ``aggregate3`` read carries on a web3 chain."""
    log_address_batch: int = 500
    """Most accounts one ``eth_getLogs`` names in a topic on a web3 chain."""
    head_reuse_seconds: float = 1.0
    """How long a web3 chain's head is kept: the reads made within it are pinned to it."""
    events_poll_seconds: float = 1.0
    """How often a WatchWallet stream looks for events another process recorded."""
    webhook_interval_seconds: float = 1.0
    webhook_timeout_seconds: float = 5.0
    webhook_max_backoff_seconds: float = 3600.0
    webhook_batch: int = 50
    webhook_secret_key: str | None = field(default=None, repr=False)
    """Seals webhook secrets at rest; unset: a key generated under the data dir."""
    metrics_port: int | None = 9464
    """Where ``/metrics`` is served; 0: any free port, None: not served."""
    metrics_host: str | None = None
    """The address ``/metrics`` binds; None (not set): 127.0.0.1."""
    environment: str = "development"
    """``development`` (simulated chains only), ``devnet`` (a local devnet on loopback
    RPC URLs) or ``production`` (which refuses unsafe settings at start)."""
    tls_cert_file: Path | None = None
    """PEM certificate chain the REST and gRPC listeners present; None: plaintext."""
    tls_key_file: Path | None = None
    """PEM private key of ``tls_cert_file``."""
    grpc_reflection: bool = True
    """Whether the gRPC server answers server reflection."""
    grpc_processes: int = 1
    """Processes serving gRPC behind Envoy: the main one and ``grpc_processes - 1`` more,
    each on a private loopback port of its own (``composition.processes``)."""
    grpc_edge_port: int | None = None
    """Envoy's gRPC listener (on ``http_host``); None: gRPC clients reach the server only."""
    client_rate_limit: int = 100
    """Public REST requests a second per client address, at Envoy (bursts of twice
    that); 0: no per-client limits."""
    envoy_max_heap_mb: int = 512
    """Envoy's heap limit, past which its overload manager sheds load."""
    envoy_workers: int = 1
    """Envoy's worker threads (its ``--concurrency``)."""
    event_loop: str = "uvloop"
    """The serving processes' event loop: ``uvloop`` or ``asyncio`` (the standard
    library's)."""
    watch_streams_per_partner: int = 100
    """WatchWallet streams a partner may have open at once (per process)."""
    partner_rate_limit: float = 100.0
    """Calls a second each partner may make (per process); 0: unlimited."""
    envoy_access_log: Path | None = None
    """Envoy's JSON access log: ``STDOUT`` (the default), a file, or None (none)."""
    webhook_allow_loopback: bool = False
    """Webhooks may go to loopback addresses (a receiver on this machine); never in
    production."""
    webhook_dead_after_seconds: float = 3 * 86_400.0
    """A delivery failing once its event is older than this is dead (not retried)."""
    event_retention_seconds: float = 30 * 86_400.0
    """Events (and their webhook deliveries) older than this are pruned."""
    activation_placement: str = "inline"
    """Where an activation's funds are placed: ``inline`` (within the call) or
    ``background`` (the call answers ``activating``; the worker finishes the activation
    and the agent places the funds)."""
    prune_batch: int = 1_000
    """Most events pruned in one transaction."""
    pool_history_seconds: int = 3_600
    """Chain time between two recorded points of every pool's yield."""
    pool_history_seconds_kept: int = 35 * 86_400
    """Recorded pool points older than this (chain time) are pruned."""

    min_withdraw_usd: Decimal = Decimal(10)
    """The smallest partial withdrawal, in USD: each is a payout the operator pays gas
    for. Deactivation takes out any balance, however small."""
    wallet_money_calls_per_minute: int = 10
    """Money calls (activation, top-up, withdrawal, run, reward claim, deactivation) a
    partner may make on one wallet in any 60 seconds, counted in the database across
    replicas; 0: unlimited."""

    risk: RiskSettings = field(default_factory=RiskSettings)
    """The risk guards' thresholds (``YIELDAGENT_RISK_*``)."""

    @property
    def production(self) -> bool:
        """Whether the service runs in production (``YIELDAGENT_ENV=production``)."""
        return self.environment == "production"

    @property
    def devnet(self) -> bool:
        """Whether the web3 chains are a local devnet (``YIELDAGENT_ENV=devnet``)."""
        return self.environment == "devnet"

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
    def tls(self) -> bool:
        """Whether the listeners serve TLS."""
        return self.tls_cert_file is not None

    @property
    def metrics_bind(self) -> str:
        """The address ``/metrics`` binds."""
        return self.metrics_host or "127.0.0.1"

    @property
    def grpc_target(self) -> str:
        """Address the gRPC server listens on, as host:port."""
        return f"{self.grpc_host}:{self.grpc_port}"

    @property
    def operator_keystore(self) -> Path:
        """Where the generated operator key is kept, encrypted (Web3 Secret Storage)."""
        return self.data_dir / "operator-keystore.json"


def logged_secrets(settings: Settings) -> list[str]:
    """Texts no log line may carry: each node's URL, and its path and query on their own
    (a provider puts its API key in either, and an HTTP client may print them apart)."""
    found = []
    for url in settings.rpc_urls.values():
        parts = urlsplit(url)
        found += [url, parts.path, parts.query, parts.netloc.rpartition("@")[0]]
    return [text for text in found if len(text) > 1]


MIN_KEY_PASSWORD_LENGTH = 16
"""The shortest keystore password a real chain accepts: the keystore file is all a thief
needs besides it, and scrypt slows a guess, it does not stop a short password's search."""


def weak_password(password: str) -> str | None:
    """Why ``password`` is too weak to guard real money, if it is."""
    if len(password) < MIN_KEY_PASSWORD_LENGTH:
        return f"it has fewer than {MIN_KEY_PASSWORD_LENGTH} characters"
    if len(set(password)) < 6:
        return "it repeats a few characters"
    return None


def require_operator_key(settings: Settings) -> None:
    """Refuses a development operator key where money is real (any ``YIELDAGENT_RPC_URL_*``
    set): the default keystore password, which anyone who reads this file knows, or no key
    at all, since a key generated at start would give each new data directory a new
    operator, one the accounts do not know. The simulated chain needs neither."""
    if not settings.rpc_urls or settings.operator_private_key is not None:
        return
    names = [f"YIELDAGENT_RPC_URL_{chain_id}" for chain_id in sorted(settings.rpc_urls)]
    chains = f"{', '.join(names)} {'is' if len(names) == 1 else 'are'}"
    if settings.operator_key_password.reveal() == DEV_KEY_PASSWORD:
        raise ConfigurationError(
            f"{chains} set, so the operator key guards real money: set "
            "YIELDAGENT_OPERATOR_KEY_PASSWORD to the operator keystore's password (the "
            "development default is refused), or set YIELDAGENT_OPERATOR_PRIVATE_KEY"
        )
    weak = None if settings.devnet else weak_password(settings.operator_key_password.reveal())
    if weak is not None:
        raise ConfigurationError(
            f"{chains} set, so the operator key guards real money, but "
            f"YIELDAGENT_OPERATOR_KEY_PASSWORD is weak: {weak}"
        )
    if not settings.operator_keystore.exists():
        raise ConfigurationError(
            f"{chains} set, but there is no operator key: set "
            "YIELDAGENT_OPERATOR_PRIVATE_KEY, or create the keystore "
            f"{settings.operator_keystore} with `yieldagent operator create-key`"
        )


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


def _usd(env: Mapping[str, str], name: str, default: Decimal) -> Decimal:
    """An amount of USD, as a decimal string (read exactly, never through a float)."""
    raw = (env.get(name) or "").strip()
    if raw == "":
        return default
    try:
        value = Decimal(raw)
    except InvalidOperation:
        raise ConfigurationError(f"{name} must be a decimal number of USD, got {raw!r}") from None
    if not value.is_finite() or value < 0:
        raise ConfigurationError(f"{name} must be a finite amount of at least 0, got {raw!r}")
    return value


def _secret(env: Mapping[str, str], name: str) -> Secret | None:
    raw = env.get(name)
    return Secret(raw) if raw else None


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


STDOUT = Path("/dev/stdout")
"""Envoy's access log by default: the service's standard output, which whatever runs the
service (a container runtime, systemd's journal) collects and rotates. A file Envoy
writes under the data dir grows until someone rotates it."""


def _access_log(env: Mapping[str, str]) -> Path | None:
    raw = env.get("YIELDAGENT_ENVOY_ACCESS_LOG")
    if raw is None or raw == "" or raw.strip().lower() == "stdout":
        return STDOUT
    if raw.strip().lower() in OFF:
        return None
    return Path(raw).resolve()


ON = frozenset({"on", "true", "yes", "1"})
ENVIRONMENTS = ("development", "devnet", "production")
"""``YIELDAGENT_ENV``'s values, the default first."""
EVENT_LOOPS = ("uvloop", "asyncio")
"""``YIELDAGENT_EVENT_LOOP``'s values, the default first."""
ACTIVATION_PLACEMENTS = ("inline", "background")
"""``YIELDAGENT_ACTIVATION_PLACEMENT``'s values, the default first."""


def _switch(env: Mapping[str, str], name: str, default: bool) -> bool:
    """An on/off setting."""
    raw = (env.get(name) or "").strip().lower()
    if raw == "":
        return default
    if raw in ON:
        return True
    if raw in OFF | {"false", "no", "0"}:
        return False
    raise ConfigurationError(f"{name} must be 'on' or 'off', got {raw!r}")


def _choice(env: Mapping[str, str], name: str, choices: Sequence[str]) -> str:
    """One of ``choices``, in any letter case; the first when not set."""
    raw = (env.get(name) or choices[0]).strip().lower()
    if raw not in choices:
        raise ConfigurationError(f"{name} must be one of {', '.join(choices)}, got {raw!r}")
    return raw


def _tls_files(env: Mapping[str, str]) -> tuple[Path | None, Path | None]:
    """The certificate and key files: both or neither, and readable."""
    names = ("YIELDAGENT_TLS_CERT_FILE", "YIELDAGENT_TLS_KEY_FILE")
    cert, key = (env.get(name) or None for name in names)
    if cert is None and key is None:
        return None, None
    if cert is None or key is None:
        raise ConfigurationError(f"{names[0]} and {names[1]} are set together or not at all")
    paths = (Path(cert).resolve(), Path(key).resolve())
    for name, path in zip(names, paths, strict=True):
        if not path.is_file():
            raise ConfigurationError(f"{name}: no such file {path}")
    return paths


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


def _collateral_feeds(env: Mapping[str, str]) -> dict[int, tuple[tuple[str, str, str], ...]]:
    """``YIELDAGENT_COLLATERAL_FEEDS_<chain_id>``: ``TOKEN=FEED:PEG`` entries separated by
    commas (``none``: no feed on that chain), by chain id."""
    found: dict[int, tuple[tuple[str, str, str], ...]] = {}
    for chain_id, value in _per_chain(env, "YIELDAGENT_COLLATERAL_FEEDS_").items():
        entries = []
        for entry in [] if value.strip().lower() == "none" else value.split(","):
            token, equals, rest = entry.strip().partition("=")
            feed, colon, peg = rest.partition(":")
            if not (equals and colon and token and feed and peg):
                raise ConfigurationError(
                    f"YIELDAGENT_COLLATERAL_FEEDS_{chain_id}: {entry!r} is not TOKEN=FEED:PEG"
                )
            entries.append((token.strip(), feed.strip(), peg.strip()))
        found[chain_id] = tuple(entries)
    return found


def _at_least_one(env: Mapping[str, str], name: str, default: int) -> int:
    """A count of at least 1."""
    count = _int(env, name, default)
    if count < 1:
        raise ConfigurationError(f"{name} must be at least 1, got {count}")
    return count


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
        max_feed_age_seconds=max(
            _int(env, "YIELDAGENT_RISK_MAX_FEED_AGE_SECONDS", default.max_feed_age_seconds), 1
        ),
        sequencer_grace_seconds=max(
            _int(env, "YIELDAGENT_RISK_SEQUENCER_GRACE_SECONDS", default.sequencer_grace_seconds),
            0,
        ),
        max_move_loss_bps=max(
            _int(env, "YIELDAGENT_RISK_MAX_MOVE_LOSS_BPS", default.max_move_loss_bps), 0
        ),
        min_wait_seconds=max(
            _int(env, "YIELDAGENT_RISK_MIN_WAIT_SECONDS", default.min_wait_seconds), 0
        ),
    )


OPERATOR_KEY_VARIABLE = "YIELDAGENT_OPERATOR_PRIVATE_KEY"
KEY_PASSWORD_VARIABLE = "YIELDAGENT_OPERATOR_KEY_PASSWORD"  # noqa: S105  (a name, not a value)


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Reads the settings from ``env`` (the process environment by default). From the
    process environment, the operator's private key and its keystore's password are taken
    out once read: nothing started later (a serving process, a library reading the
    environment) finds them there."""
    if env is None:
        settings = load_settings(dict(os.environ))
        os.environ.pop(OPERATOR_KEY_VARIABLE, None)
        os.environ.pop(KEY_PASSWORD_VARIABLE, None)
        return settings
    data_dir = Path(env.get("YIELDAGENT_DATA_DIR") or "var").resolve()
    database_url = env.get("YIELDAGENT_DATABASE_URL") or f"sqlite:///{data_dir / 'yieldagent.db'}"
    environment = _choice(env, "YIELDAGENT_ENV", ENVIRONMENTS)
    tls_cert, tls_key = _tls_files(env)
    allow_loopback = _switch(env, "YIELDAGENT_WEBHOOK_ALLOW_LOOPBACK", False)
    if allow_loopback and environment == "production":
        raise ConfigurationError(
            "YIELDAGENT_WEBHOOK_ALLOW_LOOPBACK is for development: webhooks never reach "
            "loopback addresses in production"
        )
    return Settings(
        http_host=env.get("YIELDAGENT_HTTP_HOST") or "127.0.0.1",
        http_port=_int(env, "YIELDAGENT_HTTP_PORT", 8080),
        grpc_host=env.get("YIELDAGENT_GRPC_HOST") or "127.0.0.1",
        grpc_port=_int(env, "YIELDAGENT_GRPC_PORT", 50051),
        envoy_admin_port=_port_or_off(env, "YIELDAGENT_ENVOY_ADMIN_PORT", 0),
        data_dir=data_dir,
        database_url=database_url,
        operator_private_key=_secret(env, OPERATOR_KEY_VARIABLE),
        operator_key_password=Secret(
            env.get("YIELDAGENT_OPERATOR_KEY_PASSWORD") or DEV_KEY_PASSWORD
        ),
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
        agent_batch=max(_int(env, "YIELDAGENT_AGENT_BATCH", 100), 1),
        agent_concurrent_batches=max(_int(env, "YIELDAGENT_AGENT_CONCURRENT_BATCHES", 2), 1),
        guard_watch_seconds=max(_float(env, "YIELDAGENT_GUARD_WATCH_SECONDS", 10.0), 1.0),
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
        collateral_feeds=_collateral_feeds(env),
        confirmations=max(_int(env, "YIELDAGENT_CONFIRMATIONS", 1), 1),
        tx_timeout_seconds=_float(env, "YIELDAGENT_TX_TIMEOUT_SECONDS", 60.0),
        tx_max_in_flight=max(_int(env, "YIELDAGENT_TX_MAX_IN_FLIGHT", 256), 1),
        tx_resend_seconds=max(_float(env, "YIELDAGENT_TX_RESEND_SECONDS", 6.0), 1.0),
        log_range=max(_int(env, "YIELDAGENT_LOG_RANGE", 2_000), 1),
        multicall_batch=max(_int(env, "YIELDAGENT_MULTICALL_BATCH", 500), 1),
        log_address_batch=max(_int(env, "YIELDAGENT_LOG_ADDRESS_BATCH", 500), 1),
        head_reuse_seconds=max(_float(env, "YIELDAGENT_HEAD_REUSE_SECONDS", 1.0), 0.0),
        events_poll_seconds=max(_float(env, "YIELDAGENT_EVENTS_POLL_SECONDS", 1.0), 0.01),
        webhook_interval_seconds=max(_float(env, "YIELDAGENT_WEBHOOK_INTERVAL_SECONDS", 1.0), 0.01),
        webhook_timeout_seconds=max(_float(env, "YIELDAGENT_WEBHOOK_TIMEOUT_SECONDS", 5.0), 0.1),
        webhook_max_backoff_seconds=max(
            _float(env, "YIELDAGENT_WEBHOOK_MAX_BACKOFF_SECONDS", 3600.0), 0.01
        ),
        webhook_batch=max(_int(env, "YIELDAGENT_WEBHOOK_BATCH", 50), 1),
        webhook_secret_key=env.get("YIELDAGENT_WEBHOOK_SECRET_KEY") or None,
        metrics_port=_port_or_off(env, "YIELDAGENT_METRICS_PORT", 9464),
        metrics_host=env.get("YIELDAGENT_METRICS_HOST") or None,
        environment=environment,
        tls_cert_file=tls_cert,
        tls_key_file=tls_key,
        grpc_reflection=_switch(env, "YIELDAGENT_GRPC_REFLECTION", environment != "production"),
        client_rate_limit=max(_int(env, "YIELDAGENT_CLIENT_RATE_LIMIT", 100), 0),
        envoy_max_heap_mb=max(_int(env, "YIELDAGENT_ENVOY_MAX_HEAP_MB", 512), 64),
        envoy_workers=_at_least_one(env, "YIELDAGENT_ENVOY_WORKERS", 1),
        event_loop=_choice(env, "YIELDAGENT_EVENT_LOOP", EVENT_LOOPS),
        activation_placement=_choice(env, "YIELDAGENT_ACTIVATION_PLACEMENT", ACTIVATION_PLACEMENTS),
        watch_streams_per_partner=max(_int(env, "YIELDAGENT_WATCH_STREAMS_PER_PARTNER", 100), 1),
        grpc_processes=_at_least_one(env, "YIELDAGENT_GRPC_PROCESSES", 1),
        grpc_edge_port=(
            _port_or_off(env, "YIELDAGENT_GRPC_EDGE_PORT", 0)
            if env.get("YIELDAGENT_GRPC_EDGE_PORT")
            else None
        ),
        partner_rate_limit=max(_float(env, "YIELDAGENT_PARTNER_RATE_LIMIT", 100.0), 0.0),
        envoy_access_log=_access_log(env),
        webhook_allow_loopback=allow_loopback,
        webhook_dead_after_seconds=max(
            _float(env, "YIELDAGENT_WEBHOOK_DEAD_AFTER_SECONDS", 3 * 86_400.0), 0.0
        ),
        event_retention_seconds=max(
            _float(env, "YIELDAGENT_EVENT_RETENTION_SECONDS", 30 * 86_400.0), 3_600.0
        ),
        prune_batch=max(_int(env, "YIELDAGENT_PRUNE_BATCH", 1_000), 1),
        pool_history_seconds=max(_int(env, "YIELDAGENT_POOL_HISTORY_SECONDS", 3_600), 60),
        pool_history_seconds_kept=max(
            _int(env, "YIELDAGENT_POOL_HISTORY_RETENTION_SECONDS", 35 * 86_400), 31 * 86_400
        ),
        min_withdraw_usd=_usd(env, "YIELDAGENT_MIN_WITHDRAW_USD", Decimal(10)),
        wallet_money_calls_per_minute=max(
            _int(env, "YIELDAGENT_WALLET_MONEY_CALLS_PER_MINUTE", 10), 0
        ),
        risk=_risk(env),
    )


# Production mode: each check below names what it refuses and how to fix it; the service
# refuses to start with every problem listed together, so that one restart fixes them all.

MIN_CONFIRMATIONS: Mapping[int, int] = {
    1: 3,  # Ethereum: proof-of-stake reorgs seen are of one or two blocks; 3 is 36 s
    8453: 10,  # Base: 2 s blocks from one sequencer; 20 s covers its rare unsafe-head reorgs
    42161: 20,  # Arbitrum One: 0.25 s blocks; 20 is 5 s, past a sequencer's reordering
    137: 32,  # Polygon PoS: reorgs of tens of blocks happened; milestones finalize in ~16
    11155111: 1,  # Sepolia: test money
    84532: 1,  # Base Sepolia: test money
}
"""The fewest confirmations production accepts on a chain served by web3 (docs:
configuration.md, "Production mode")."""
DEFAULT_MIN_CONFIRMATIONS = 12
"""The minimum on a chain the table does not name: about what most exchanges ask."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``); a name is not."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def plaintext_listeners(settings: Settings, with_edge: bool = True) -> list[str]:
    """Listeners off loopback that would serve plaintext."""
    if settings.tls:
        return []
    listeners = [("gRPC server", "YIELDAGENT_GRPC_HOST", settings.grpc_host)]
    if with_edge:
        listeners.insert(0, ("REST (Envoy)", "YIELDAGENT_HTTP_HOST", settings.http_host))
    return [
        f"the {what} listener on {host} ({name}) would serve plaintext off loopback: "
        "set YIELDAGENT_TLS_CERT_FILE and YIELDAGENT_TLS_KEY_FILE"
        for what, name, host in listeners
        if not is_loopback(host)
    ]


def reflection_on(settings: Settings) -> list[str]:
    """Reflection, which maps the API for anyone."""
    if not settings.grpc_reflection:
        return []
    return ["gRPC server reflection is on: set YIELDAGENT_GRPC_REFLECTION=off"]


def too_few_confirmations(settings: Settings) -> list[str]:
    """Chains served by web3 that would count a deposit before its documented minimum."""
    problems = []
    for chain_id in sorted(settings.rpc_urls):
        least = MIN_CONFIRMATIONS.get(chain_id, DEFAULT_MIN_CONFIRMATIONS)
        if settings.confirmations < least:
            problems.append(
                f"chain {chain_id} needs at least {least} confirmations, "
                f"YIELDAGENT_CONFIRMATIONS is {settings.confirmations}"
            )
    return problems


def generated_sealing_key(settings: Settings) -> list[str]:
    """A webhook sealing key generated per data directory, which replicas do not share."""
    if settings.webhook_secret_key is not None:
        return []
    return [
        "the webhook sealing key would be generated under the data directory, which other "
        "replicas cannot read: set YIELDAGENT_WEBHOOK_SECRET_KEY, the same on every replica"
    ]


def unreachable_metrics(settings: Settings) -> list[str]:
    """Metrics left on the loopback default, where no scraper off the machine reaches."""
    if settings.metrics_port is None or settings.metrics_host is not None:
        return []
    return [
        "metrics would bind 127.0.0.1 by default, out of a scraper's reach: set "
        "YIELDAGENT_METRICS_HOST (127.0.0.1 itself if a local agent scrapes) or "
        "YIELDAGENT_METRICS_PORT=off"
    ]


def unlimited_callers(settings: Settings) -> list[str]:
    """Rate limits turned off, which let one client or one leaked partner key take the
    whole service (and the operator's gas)."""
    problems = []
    if settings.client_rate_limit == 0:
        problems.append(
            "per-client limits are off (YIELDAGENT_CLIENT_RATE_LIMIT=0): set a rate a second"
        )
    if settings.partner_rate_limit == 0:
        problems.append(
            "per-partner limits are off (YIELDAGENT_PARTNER_RATE_LIMIT=0): set a rate a second"
        )
    if settings.wallet_money_calls_per_minute == 0:
        problems.append(
            "per-wallet money call limits are off (YIELDAGENT_WALLET_MONEY_CALLS_PER_MINUTE=0):"
            " set calls a minute"
        )
    return problems


def production_problems(settings: Settings, with_edge: bool = True) -> list[str]:
    """Everything production mode refuses in ``settings``, one sentence each;
    ``with_edge``: whether Envoy's listeners run too."""
    return [
        *plaintext_listeners(settings, with_edge),
        *reflection_on(settings),
        *too_few_confirmations(settings),
        *generated_sealing_key(settings),
        *unreachable_metrics(settings),
        *unlimited_callers(settings),
    ]


def environment_problem(settings: Settings) -> str | None:
    """Why ``YIELDAGENT_ENV`` does not fit the chains served, if it does not: a node's URL
    means real money unless the environment says ``devnet``, and a devnet is local."""
    names = ", ".join(f"YIELDAGENT_RPC_URL_{chain_id}" for chain_id in sorted(settings.rpc_urls))
    if settings.environment == "development" and settings.rpc_urls:
        return (
            f"{names} {'is' if len(settings.rpc_urls) == 1 else 'are'} set, so the service "
            "may move real money, but YIELDAGENT_ENV is development (the default, for "
            "simulated chains only): set YIELDAGENT_ENV=production, or YIELDAGENT_ENV=devnet "
            "for a local devnet"
        )
    if settings.devnet:
        remote = [
            f"YIELDAGENT_RPC_URL_{chain_id}"
            for chain_id, url in sorted(settings.rpc_urls.items())
            if not is_loopback(urlsplit(url).hostname or "")
        ]
        if remote:
            return (
                f"YIELDAGENT_ENV=devnet serves a devnet on this machine, but {', '.join(remote)} "
                "names a node elsewhere: set YIELDAGENT_ENV=production for a real chain"
            )
    return None


def check_production(settings: Settings, with_edge: bool = True) -> None:
    """Raises ConfigurationError when ``YIELDAGENT_ENV`` does not fit the chains served,
    or, in production mode, listing every problem; else nothing."""
    unfit = environment_problem(settings)
    if unfit is not None:
        raise ConfigurationError(unfit)
    if not settings.production:
        return
    problems = production_problems(settings, with_edge)
    if problems:
        raise ConfigurationError(
            "YIELDAGENT_ENV=production refuses to start:\n" + "\n".join(problems)
        )
