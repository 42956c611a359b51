"""The composition root: the one place that builds the service from its settings and
decides which adapter backs each port (stores over one engine, the chains, the clock), then
runs it in one process: storage, gRPC server, worker loop and, optionally, Envoy.

``yieldagent run`` (what ``make run`` starts) runs all of it; ``yieldagent serve``
runs it without Envoy, for deployments that put their own edge in front.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from multiprocessing.connection import Connection

from sqlalchemy import Engine

from yieldagent.catalog import load_catalog
from yieldagent.chain.operator import load_operator_wallet
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.composition import runtime
from yieldagent.composition.chains import (
    build_chains,
    fee_collector,
    module_change_sources,
    safe_chains,
    served_catalog,
    simulated_market,
    verify_deployments,
)
from yieldagent.composition.clock import SYSTEM_CLOCK
from yieldagent.composition.edge import EnvoyProcess
from yieldagent.composition.grpc_server import (
    ApiServer,
    Registration,
    Tls,
    api_server,
    mark_serving,
)
from yieldagent.composition.processes import ServingProcesses, serve_until_stopped
from yieldagent.composition.worker import Job, Worker
from yieldagent.config import Settings, check_production, logged_secrets
from yieldagent.domain.agent.runs import Agent
from yieldagent.domain.agent.scheduler import AgentSettings
from yieldagent.domain.books.executions import Executions
from yieldagent.domain.books.history import Reports
from yieldagent.domain.books.module_changes import watch_module_changes
from yieldagent.domain.books.numbers import WalletNumbers
from yieldagent.domain.catalog import Catalog
from yieldagent.domain.constraints import Thresholds
from yieldagent.domain.errors import ChainUnavailable, ConfigurationError
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.market.yields import PoolYields, YieldRecorder
from yieldagent.domain.money.details import WalletDetails
from yieldagent.domain.money.lifecycle import ActivationPlacement, Lifecycle, Policy
from yieldagent.domain.optimizer.optimize import Optimizer
from yieldagent.domain.partners.money_calls import MoneyCallLimit
from yieldagent.domain.partners.rate_limits import RateLimiter
from yieldagent.domain.partners.service_config import ConfigReader, Rules
from yieldagent.domain.partners.smart_accounts import SafeChains
from yieldagent.domain.ports.module_changes import ModuleChangeSource
from yieldagent.domain.ports.signer import Signer
from yieldagent.domain.risk.settings import RiskSettings
from yieldagent.domain.risk.survey import RiskSurvey
from yieldagent.observability.agent_metrics import RunMetrics, count_recovered
from yieldagent.observability.logs import configure_logging
from yieldagent.observability.metrics import (
    PRUNED_ROWS,
    WEBHOOK_DELIVERIES,
    MetricsServer,
    service_registry,
)
from yieldagent.observability.risk_metrics import RiskMetrics
from yieldagent.servicers.auth import Authenticator
from yieldagent.servicers.catalog import CatalogServicer
from yieldagent.servicers.config import ConfigServicer
from yieldagent.servicers.health import HealthcheckServicer
from yieldagent.servicers.history import HistoryServicer
from yieldagent.servicers.idempotency import Idempotency
from yieldagent.servicers.interceptor import ApiInterceptor
from yieldagent.servicers.method_policy import load_policies
from yieldagent.servicers.optimizer import OptimizerServicer
from yieldagent.servicers.rewards import RewardServicer
from yieldagent.servicers.smart_accounts import SmartAccountServicer
from yieldagent.servicers.stats import StatsServicer
from yieldagent.servicers.streams import OpenStreams
from yieldagent.servicers.wallet_details import WalletDetailServicer
from yieldagent.servicers.wallets import WalletServicer
from yieldagent.storage.db import create_db_engine, migrate, ping
from yieldagent.storage.events import EventStore
from yieldagent.storage.idempotency import IdempotencyStore
from yieldagent.storage.module_changes import ModuleChangeStore
from yieldagent.storage.money_calls import MoneyCallStore
from yieldagent.storage.operations import OperationStore
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.risk import RiskStore
from yieldagent.storage.runs import RunStore
from yieldagent.storage.smart_accounts import SmartAccountStore
from yieldagent.storage.wallets import WalletStore
from yieldagent.storage.watch_cursors import WatchCursorStore
from yieldagent.storage.webhooks import WebhookStore
from yieldagent.storage.yields import YieldStore
from yieldagent.v1 import (
    catalog_pb2_grpc,
    config_pb2_grpc,
    health_pb2_grpc,
    history_pb2_grpc,
    optimizer_pb2_grpc,
    rewards_pb2_grpc,
    smart_accounts_pb2_grpc,
    stats_pb2_grpc,
    wallet_details_pb2_grpc,
    wallets_pb2_grpc,
)
from yieldagent.webhooks.delivery import Deliverer, DeliveryOutcome, DeliverySettings
from yieldagent.webhooks.destinations import DestinationPolicy
from yieldagent.webhooks.sealing import load_box

log = logging.getLogger(__name__)


def market_settle(market: SimulatedMarket) -> Job:
    """The worker job that stores the simulated market at the current simulated time."""

    async def settle_market() -> None:
        market.settle()

    return settle_market


def build_lifecycle(
    settings: Settings,
    engine: Engine,
    chains: Mapping[int, MarketChain],
    catalog: Catalog,
    operator_address: str,
) -> Lifecycle:
    """The wallet lifecycle with the configured money rules."""
    policy = Policy(
        fee_bps=settings.performance_fee_bps,
        max_deposit_usd=settings.max_deposit_usd,
        min_withdraw_usd=settings.min_withdraw_usd,
        fee_collector=fee_collector(settings),
        lease_seconds=settings.lease_seconds,
        swap_slippage_bps=settings.swap_slippage_bps,
        retry_seconds=settings.stuck_retry_seconds,
    )
    return Lifecycle(
        WalletStore(engine),
        OperationStore(engine),
        chains,
        catalog,
        policy,
        SYSTEM_CLOCK,
        RunStore(engine).paused,
        build_risk(settings, engine),
        WatchCursorStore(engine),
        ActivationPlacement(settings.activation_placement),
        RunStore(engine).schedule,
    )


def build_risk(settings: Settings, engine: Engine) -> RiskSurvey:
    """The risk guards with the configured thresholds; their changes go to the metrics."""
    return RiskSurvey(RiskStore(engine), settings.risk, RiskMetrics())


def build_agent(settings: Settings, engine: Engine, lifecycle: Lifecycle) -> Agent:
    """The agent with the configured schedule and thresholds; its runs are counted in the
    metrics."""
    thresholds = Thresholds(
        min_apr_gain=settings.min_apr_gain, max_break_even_days=settings.max_break_even_days
    )
    return Agent(
        lifecycle,
        WalletStore(engine),
        RunStore(engine),
        AgentSettings(
            settings.agent_interval_seconds,
            thresholds,
            settings.agent_batch,
            settings.agent_concurrent_batches,
        ),
        RunMetrics(),
        lifecycle.risk,
    )


async def load_operator(settings: Settings) -> Signer:
    """The operator's signer: today its local key (``chain.signers.local``), decrypted
    once, in a thread, so the event loop never waits for the scrypt. A KMS or remote
    signer would be chosen here."""
    return await asyncio.to_thread(load_operator_wallet, settings)


def build_server(
    engine: Engine,
    operator: Signer,
    chains: Mapping[int, MarketChain],
    lifecycle: Lifecycle,
    agent: Agent,
    address: str,
    idempotency: Idempotency | None = None,
    catalog: Catalog | None = None,
    limiter: RateLimiter | None = None,
    events: EventStore | None = None,
    tls: Tls | None = None,
    reflect: bool = True,
    streams_per_partner: int = 100,
    safes: SafeChains | None = None,
    money_calls: MoneyCallLimit | None = None,
    rules: Rules | None = None,
) -> ApiServer:
    """The gRPC server with every API servicer over ``engine``'s stores, bound to
    ``address`` (port 0: any free one). ``catalog`` is the served one (default: the shipped
    catalog); ``limiter``, each partner's rate limit (default: none); ``events`` feeds
    WatchWallet (its ``close`` ends the streams); ``tls``, the certificate it serves
    (default: plaintext); ``reflect``, whether it answers server reflection;
    ``streams_per_partner``, how many streams a partner may have open (their credentials
    are checked again every ``events.poll_seconds``); ``safes``, where Safe accounts can be
    created (default: nowhere); ``money_calls``, the per-wallet limit on money calls
    (default: none); ``rules``, what ``GET /config`` tells of the settings (default: the
    lifecycle's minimum withdrawal, the default risk settings, ``money_calls``' limit)."""
    catalog = catalog or load_catalog()
    reports = Reports(WalletStore(engine), chains, catalog)
    events = events or EventStore(engine)
    interceptor = ApiInterceptor(
        load_policies(),
        Authenticator(PartnerStore(engine)),
        idempotency or Idempotency(IdempotencyStore(engine)),
        limiter,
        OpenStreams(PartnerStore(engine), streams_per_partner, events.poll_seconds),
        money_calls,
    )
    paused = RunStore(engine).paused
    rules = rules or Rules(
        lifecycle.books.policy.min_withdraw_usd,
        RiskSettings().max_pool_share,
        money_calls.limit if money_calls is not None else 0,
    )
    fee_bps = lifecycle.books.policy.fee_bps
    yields = PoolYields(YieldStore(engine), catalog, fee_bps)
    numbers = WalletNumbers(WalletStore(engine), chains, catalog, reports, fee_bps)
    listing = CatalogServicer(catalog, chains, paused, reports.holdings, lifecycle.risk, yields)
    registrations: list[Registration] = [
        (
            health_pb2_grpc.add_HealthcheckServiceServicer_to_server,
            HealthcheckServicer(lambda: ping(engine)),
        ),
        (
            catalog_pb2_grpc.add_CatalogServiceServicer_to_server,
            listing,
        ),
        (
            smart_accounts_pb2_grpc.add_SmartAccountServiceServicer_to_server,
            SmartAccountServicer(catalog, SmartAccountStore(engine), operator.address, safes),
        ),
        (
            wallets_pb2_grpc.add_WalletServiceServicer_to_server,
            WalletServicer(lifecycle, agent, reports, catalog, events),
        ),
        (
            rewards_pb2_grpc.add_RewardServiceServicer_to_server,
            RewardServicer(lifecycle, reports),
        ),
        (stats_pb2_grpc.add_StatsServiceServicer_to_server, StatsServicer(reports)),
        (
            config_pb2_grpc.add_ConfigServiceServicer_to_server,
            ConfigServicer(ConfigReader(rules, catalog, ModuleChangeStore(engine))),
        ),
        (
            history_pb2_grpc.add_HistoryServiceServicer_to_server,
            HistoryServicer(yields, numbers, catalog),
        ),
        (
            wallet_details_pb2_grpc.add_WalletDetailServiceServicer_to_server,
            WalletDetailServicer(
                WalletDetails(lifecycle.books),
                Executions(WalletStore(engine), OperationStore(engine), events, catalog),
                listing.protocols,
            ),
        ),
        (
            optimizer_pb2_grpc.add_OptimizerServiceServicer_to_server,
            OptimizerServicer(Optimizer(catalog, chains, agent.thresholds)),
        ),
    ]
    return api_server(registrations, interceptor, address, tls, reflect)


def server_tls(settings: Settings) -> Tls | None:
    """The certificate the gRPC server presents, when TLS is configured."""
    if settings.tls_cert_file is None or settings.tls_key_file is None:
        return None
    return Tls(settings.tls_cert_file, settings.tls_key_file)


def build_limiter(settings: Settings) -> RateLimiter | None:
    """Each partner's rate limit (per process), or None when unlimited."""
    if settings.partner_rate_limit <= 0:
        return None
    return RateLimiter(settings.partner_rate_limit, settings.partner_rate_burst, time.monotonic)


def build_money_limit(settings: Settings, engine: Engine) -> MoneyCallLimit | None:
    """The per-wallet limit on money calls, counted in the database (every replica shares
    it), or None when unlimited."""
    if settings.wallet_money_calls_per_minute <= 0:
        return None
    return MoneyCallLimit(MoneyCallStore(engine), settings.wallet_money_calls_per_minute, time.time)


def service_rules(settings: Settings) -> Rules:
    """What ``GET /config`` tells partners of the settings."""
    return Rules(
        settings.min_withdraw_usd,
        settings.risk.max_pool_share,
        settings.wallet_money_calls_per_minute,
    )


def wallet_refresh(lifecycle: Lifecycle, chain_ids: list[int]) -> Job:
    """The worker job that values idle wallets and records their performance."""

    async def refresh_wallets() -> None:
        for chain_id in chain_ids:
            await lifecycle.refresh(chain_id)

    return refresh_wallets


def pool_history(recorder: YieldRecorder, chains: Mapping[int, MarketChain]) -> Job:
    """The worker job that records every catalog pool's yield when a point is due on its
    chain, and prunes the points past their retention."""

    async def record_pool_yields() -> None:
        for chain_id, chain in sorted(chains.items()):
            try:
                await recorder.record(chain_id, chain)
            except ChainUnavailable:  # one chain's node down: the others still record
                log.warning("pool history not recorded", extra={"chain_id": chain_id})

    return record_pool_yields


ACTIVATION_PASS_SECONDS = 1.0
"""How often the worker looks for activations to finish in background placement: about
a block's time, so that an activation waits little for its deployment to be sent."""
ACTIVATION_PASSES_AT_MOST = 10
"""Most passes one run of the activation job makes, so that under a steady stream of
activations the worker's other jobs still get their turn."""


def activation_placement(agent: Agent, lifecycle: Lifecycle, stopping: Callable[[], bool]) -> Job:
    """The worker job of background placement: passes of ``Lifecycle.finish_activations``,
    one every ``ACTIVATION_PASS_SECONDS`` at most, deploy the open activations' accounts
    and make their wallets due, while the agent's cycle places the funds of those earlier
    passes activated, in its pipelined rounds (a cycle takes up what becomes due as it goes
    on, and another starts once it is over): so one pass's deployments and the placements
    of the pass before share blocks. The job ends once a pass finds nothing and the cycle
    is over, or after ``ACTIVATION_PASSES_AT_MOST`` passes and their cycle."""

    async def finish_activations() -> None:
        placing = asyncio.ensure_future(agent.run_cycle(stopping))
        activated = False  # whether a pass activated wallets since ``placing`` began
        try:
            for _ in range(ACTIVATION_PASSES_AT_MOST):
                if stopping():
                    break
                started = time.monotonic()
                activated = bool(await lifecycle.finish_activations()) or activated
                if placing.done():
                    await placing
                    if not activated:
                        break
                    placing = asyncio.ensure_future(agent.run_cycle(stopping))
                    activated = False
                pause = started + ACTIVATION_PASS_SECONDS - time.monotonic()
                await asyncio.wait([placing], timeout=max(pause, 0.0))
        finally:
            await placing

    return finish_activations


def reconciliation(lifecycle: Lifecycle) -> Job:
    """The worker job that finishes operations a dead process left open, and retries
    deactivations waiting for a pool's cash."""

    async def reconcile() -> None:
        count_recovered(await lifecycle.reconcile())

    return reconcile


def build_deliverer(
    settings: Settings,
    engine: Engine,
    observe: Callable[[DeliveryOutcome], None] | None = None,
) -> Deliverer:
    """The webhook deliverer with the configured timeout, backoff and batch; ``observe``
    is called with every attempt's outcome (a metrics hook)."""
    return Deliverer(
        WebhookStore(engine),
        load_box(settings.webhook_secret_key, settings.data_dir),
        DeliverySettings(
            timeout_seconds=settings.webhook_timeout_seconds,
            max_backoff_seconds=settings.webhook_max_backoff_seconds,
            batch=settings.webhook_batch,
            dead_after_seconds=settings.webhook_dead_after_seconds,
            destinations=destination_policy(settings),
        ),
        observe,
    )


def destination_policy(settings: Settings) -> DestinationPolicy:
    """Where webhooks may go: https only in production; loopback only when allowed."""
    return DestinationPolicy(
        https_only=settings.production, allow_loopback=settings.webhook_allow_loopback
    )


def count_delivery(outcome: DeliveryOutcome) -> None:
    """Counts a webhook delivery attempt in ``yieldagent_webhook_deliveries_total``."""
    WEBHOOK_DELIVERIES.labels(outcome=outcome.outcome).inc()


def webhook_delivery(deliverer: Deliverer, stopping: Callable[[], bool] = lambda: False) -> Job:
    """The worker job that posts due webhook deliveries."""

    async def deliver_webhooks() -> None:
        await deliverer.deliver_due(stopping)

    return deliver_webhooks


PRUNE_BATCHES_PER_RUN = 100
"""Most batches one run of the pruning job deletes (100,000 events at the default batch):
a backlog is worked off over several runs, between the worker's other jobs."""


def event_pruning(
    events: EventStore,
    retention_seconds: float,
    batch: int,
    stopping: Callable[[], bool] = lambda: False,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> Job:
    """The worker job that deletes events (and their webhook deliveries) older than the
    retention, a batch per transaction, until none is left, the run has pruned
    ``PRUNE_BATCHES_PER_RUN`` batches, or the service is stopping."""

    async def prune_events() -> None:
        before = now() - timedelta(seconds=retention_seconds)
        for _ in range(PRUNE_BATCHES_PER_RUN):
            pruned = events.prune(before, batch)
            PRUNED_ROWS.labels(table="wallet_events").inc(pruned.events)
            PRUNED_ROWS.labels(table="webhook_deliveries").inc(pruned.deliveries)
            if not pruned.more or stopping():
                return
            await asyncio.sleep(0)

    return prune_events


def module_change_watch(settings: Settings, engine: Engine) -> Job:
    """Reads each web3 chain's operator module changes into the books and tells every
    wallet on the chain of each proposal (``domain.books.module_changes``)."""
    store = ModuleChangeStore(engine)
    sources: dict[int, tuple[ModuleChangeSource, int]] | None = None

    async def watch_module_changes_everywhere() -> None:
        nonlocal sources
        if sources is None:  # built on the worker's loop, which owns their connections
            sources = module_change_sources(settings)
        for chain_id, (source, start) in sources.items():
            try:
                await watch_module_changes(chain_id, source, store, start, settings.log_range)
            except ChainUnavailable as error:  # the next tick reads on from the cursor
                log.warning(
                    "module changes not read", extra={"chain_id": chain_id, "error": str(error)}
                )

    return watch_module_changes_everywhere


def guard_watch(agent: Agent, stopping: Callable[[], bool] = lambda: False) -> Job:
    """The worker job that judges the pools the service holds funds in, whether or not a
    wallet is due, and, when the guards newly exit one, runs the agent's cycle at once:
    its wallets were made due, and the cycle moves them out (``Agent.watch_exits``)."""

    async def watch_guards() -> None:
        if await agent.watch_exits() and not stopping():
            await agent.run_cycle(stopping)

    return watch_guards


def agent_cycle(agent: Agent, stopping: Callable[[], bool] = lambda: False) -> Job:
    """The worker job that recovers interrupted runs, then runs every due wallet, batch by
    batch until none is due or the service is stopping, then closes the runs a failing
    node left open meanwhile (their wallets ``running``), rather than a job's turn later."""

    async def run_agents() -> None:
        count_recovered(await agent.reconcile())
        await agent.run_cycle(stopping)
        count_recovered(await agent.reconcile())

    return run_agents


def build_serving(
    settings: Settings,
    engine: Engine,
    operator: Signer,
    catalog: Catalog,
    market: SimulatedMarket,
    address: str,
) -> tuple[ApiServer, EventStore]:
    """The gRPC server as every serving process runs it, bound to ``address``, with the
    event store its WatchWallet streams poll."""
    chains = build_chains(settings, engine, market, catalog, operator)
    lifecycle = build_lifecycle(settings, engine, chains, catalog, operator.address)
    agent = build_agent(settings, engine, lifecycle)
    idempotency = Idempotency(
        IdempotencyStore(engine, settings.idempotency_ttl_seconds),
        settings.idempotency_wait_seconds,
    )
    events = EventStore(engine, settings.events_poll_seconds)
    api = build_server(
        engine,
        operator,
        chains,
        lifecycle,
        agent,
        address,
        idempotency,
        catalog,
        build_limiter(settings),
        events,
        server_tls(settings),
        settings.grpc_reflection,
        settings.watch_streams_per_partner,
        safe_chains(settings, catalog, operator.address),
        build_money_limit(settings, engine),
        service_rules(settings),
    )
    return api, events


PRIVATE_ADDRESS = "127.0.0.1:0"
"""Where an extra serving process listens: a free loopback port, which it tells the main
process (Envoy's cluster lists it)."""


def serve_process(settings: Settings, connection: Connection, operator: Signer) -> None:
    """An extra serving process (``composition.processes``): the API on a private port, no
    background work, until the main process stops it or is gone. The main process has
    migrated the database and created the operator key and the simulated world; it holds
    the key, and ``operator`` asks it for each signature."""
    configure_logging(settings.log_level, settings.log_format, logged_secrets(settings))
    runtime.run(_serve_privately(settings, connection, operator), settings.event_loop)


async def _serve_privately(settings: Settings, connection: Connection, operator: Signer) -> None:
    engine = create_db_engine(settings.database_url)
    try:
        catalog = served_catalog(settings, load_catalog())
        market = simulated_market(settings, engine, catalog, set_speed=False)
        api, events = build_serving(settings, engine, operator, catalog, market, PRIVATE_ADDRESS)
        await api.server.start()
        await mark_serving(api, True)
        runtime.settle()
        await serve_until_stopped(connection, api.port)
        events.close()
        await mark_serving(api, False)
        await api.server.stop(settings.shutdown_grace_seconds)
    finally:
        engine.dispose()


class Service:
    """Starts and stops the parts of the service in order."""

    def __init__(self, settings: Settings, with_edge: bool = True) -> None:
        self.settings = settings
        self.with_edge = with_edge
        self.engine: Engine | None = None
        self.api: ApiServer | None = None
        self.worker = Worker(settings.worker_interval_seconds)
        self.deliveries = Worker(settings.webhook_interval_seconds)
        """Webhook deliveries, in a thread of their own: a long agent cycle never delays them."""
        self.events: EventStore | None = None
        self.envoy: EnvoyProcess | None = None
        self.metrics: MetricsServer | None = None
        self.processes: ServingProcesses | None = None
        """The extra serving processes (``YIELDAGENT_GRPC_PROCESSES`` above 1)."""

    @property
    def grpc_port(self) -> int:
        """The port the gRPC server listens on (known once started)."""
        assert self.api is not None, "not started"
        return self.api.port

    @property
    def serving(self) -> dict[int, int]:
        """The process id serving each port the gRPC cluster lists, by port."""
        assert self.api is not None, "not started"
        children = self.processes
        extra = dict(zip(children.ports, children.pids, strict=True)) if children else {}
        return {self.api.port: os.getpid(), **extra}

    async def start(self) -> None:
        """Checks the settings (production mode), migrates the database, then starts the
        gRPC server, the extra serving processes, the worker and Envoy."""
        settings = self.settings
        check_production(settings, self.with_edge)
        if settings.grpc_processes > 1 and not self.with_edge:
            raise ConfigurationError(
                "YIELDAGENT_GRPC_PROCESSES above 1 needs the Envoy that `yieldagent run` "
                "starts: the extra processes serve private ports only it is told of"
            )
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        operator = await load_operator(settings)  # refuses a development key on a real chain
        await verify_deployments(settings, operator.address)  # the chain, not the manifest
        self.engine = create_db_engine(settings.database_url)
        migrate(self.engine)
        catalog = served_catalog(settings, load_catalog())
        market = simulated_market(settings, self.engine, catalog)
        self.worker.add(market_settle(market))
        # The worker thread has its own lifecycle and chain ports: its locks and a web3
        # port's connections belong to its own event loop.
        worker_chains = build_chains(settings, self.engine, market, catalog, operator)
        background = build_lifecycle(
            settings, self.engine, worker_chains, catalog, operator.address
        )
        stopping = lambda: self.worker.stop_requested  # noqa: E731
        agent = build_agent(settings, self.engine, background)
        if settings.activation_placement == ActivationPlacement.BACKGROUND:
            self.worker.add(
                activation_placement(agent, background, stopping), every=ACTIVATION_PASS_SECONDS
            )
        self.worker.add(reconciliation(background), every=settings.lease_seconds / 2)
        self.worker.add(wallet_refresh(background, catalog.chain_ids()))
        recorder = YieldRecorder(
            YieldStore(self.engine),
            catalog,
            settings.pool_history_seconds,
            settings.pool_history_seconds_kept,
        )
        self.worker.add(pool_history(recorder, worker_chains))
        self.worker.add(guard_watch(agent, stopping), every=settings.guard_watch_seconds)
        self.worker.add(agent_cycle(agent, stopping))
        self.worker.add(module_change_watch(settings, self.engine))
        self.worker.add(
            event_pruning(
                EventStore(self.engine),
                settings.event_retention_seconds,
                settings.prune_batch,
                stopping,
            )
        )
        self.api, self.events = build_serving(
            settings, self.engine, operator, catalog, market, settings.grpc_target
        )
        deliverer = build_deliverer(settings, self.engine, count_delivery)
        self.deliveries.add(
            webhook_delivery(deliverer, lambda: self.deliveries.stop_requested),
            every=settings.webhook_interval_seconds,
        )
        await self.api.server.start()
        await mark_serving(self.api, True)
        log.info("grpc server started", extra={"port": self.api.port})
        if settings.grpc_processes > 1:
            self.processes = ServingProcesses(
                serve_process, settings, settings.grpc_processes - 1, operator
            )
            await self.processes.start()
        self.worker.start_thread()
        self.deliveries.start_thread()
        if settings.metrics_port is not None:
            registry = service_registry(RunStore(self.engine).oldest_due)
            self.metrics = MetricsServer(settings.metrics_port, registry, settings.metrics_bind)
            self.metrics.start()
        if self.with_edge:
            self.envoy = EnvoyProcess(
                settings, self.api.port, self.processes.ports if self.processes else ()
            )
            self.envoy.start()
            await self.envoy.wait_ready()
            log.info(
                "rest edge ready",
                extra={
                    "url": f"{'https' if settings.tls else 'http'}://{settings.http_host}:"
                    f"{settings.http_port}/api/v1/healthcheck"
                },
            )

    async def stop(self) -> None:
        """Stops accepting calls, lets running ones finish, then stops everything."""
        if self.events is not None:
            self.events.close()  # WatchWallet streams end; clients resume from their cursor
        grace = self.settings.shutdown_grace_seconds
        if self.api is not None:
            await mark_serving(self.api, False)
        await asyncio.gather(  # every serving process drains its calls at the same time
            *([self.api.server.stop(grace)] if self.api is not None else []),
            *([self.processes.stop(grace)] if self.processes is not None else []),
        )
        self.worker.stop()  # a money operation in progress finishes; no new one starts
        self.deliveries.stop()  # a post in progress finishes; an unrecorded one is posted again
        await asyncio.to_thread(self.worker.join, self.settings.shutdown_grace_seconds)
        await asyncio.to_thread(self.deliveries.join, self.settings.shutdown_grace_seconds)
        if self.envoy is not None:
            self.envoy.stop()
        if self.metrics is not None:
            self.metrics.stop()
        if self.engine is not None:
            self.engine.dispose()
        log.info("service stopped")


async def run_service(settings: Settings, with_edge: bool = True) -> None:
    """Runs the service until SIGINT (Ctrl-C) or SIGTERM, then stops it gracefully."""
    service = Service(settings, with_edge)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await service.start()
        runtime.settle()
        waits = [asyncio.ensure_future(stop.wait())]
        if service.processes is not None:
            waits.append(asyncio.ensure_future(service.processes.lost.wait()))
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for wait in waits:
            wait.cancel()
        log.info("stopping")
    finally:
        await service.stop()
    if service.processes is not None and service.processes.lost.is_set():
        raise RuntimeError("a serving process ended: the service stopped")
