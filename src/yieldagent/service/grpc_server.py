"""Assembles the grpc.aio server: the API servicers, health, reflection, the interceptor."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection
from sqlalchemy import Engine

from yieldagent.catalog import load_catalog
from yieldagent.chain.operator import OperatorWallet
from yieldagent.domain.agent.runs import Agent
from yieldagent.domain.books.history import Reports
from yieldagent.domain.catalog import Catalog
from yieldagent.domain.money.lifecycle import Lifecycle
from yieldagent.domain.partners.rate_limits import RateLimiter
from yieldagent.domain.ports.chain import ChainPort
from yieldagent.servicers.auth import Authenticator
from yieldagent.servicers.catalog import CatalogServicer
from yieldagent.servicers.health import HealthcheckServicer
from yieldagent.servicers.idempotency import Idempotency
from yieldagent.servicers.interceptor import ApiInterceptor
from yieldagent.servicers.method_policy import api_services, load_policies
from yieldagent.servicers.optimizer import OptimizerServicer
from yieldagent.servicers.rewards import RewardServicer
from yieldagent.servicers.smart_accounts import SmartAccountServicer
from yieldagent.servicers.stats import StatsServicer
from yieldagent.servicers.wallets import WalletServicer
from yieldagent.storage.db import ping
from yieldagent.storage.events import EventStore
from yieldagent.storage.idempotency import IdempotencyStore
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.runs import RunStore
from yieldagent.storage.smart_accounts import SmartAccountStore
from yieldagent.storage.wallets import WalletStore
from yieldagent.v1 import (
    catalog_pb2_grpc,
    optimizer_pb2_grpc,
    rewards_pb2_grpc,
    smart_accounts_pb2_grpc,
    stats_pb2_grpc,
    wallets_pb2_grpc,
)
from yieldagent.v1 import (
    health_pb2_grpc as api_health_pb2_grpc,
)

_OPTIONS = [
    ("grpc.so_reuseport", 0),
    ("grpc.max_concurrent_streams", 1000),
    ("grpc.keepalive_permit_without_calls", 1),
]


@dataclass(slots=True)
class ApiServer:
    """A configured, not yet started, gRPC server and its standard health service."""

    server: grpc.aio.Server
    health: HealthServicer
    port: int


def build_server(
    engine: Engine,
    operator: OperatorWallet,
    chains: Mapping[int, ChainPort],
    lifecycle: Lifecycle,
    agent: Agent,
    address: str,
    idempotency: Idempotency | None = None,
    catalog: Catalog | None = None,
    limiter: RateLimiter | None = None,
    events: EventStore | None = None,
) -> ApiServer:
    """The server with every service registered, bound to ``address`` (port 0: any free one).
    ``catalog`` is the served one (default: the shipped catalog); ``limiter``, each
    partner's rate limit (default: none); ``events`` feeds WatchWallet (its ``close`` ends
    the streams)."""
    catalog = catalog or load_catalog()
    reports = Reports(WalletStore(engine), chains, catalog)
    idempotency = idempotency or Idempotency(IdempotencyStore(engine))
    interceptor = ApiInterceptor(
        load_policies(), Authenticator(PartnerStore(engine)), idempotency, limiter
    )
    server = grpc.aio.server(interceptors=[interceptor], options=_OPTIONS)

    api_health_pb2_grpc.add_HealthcheckServiceServicer_to_server(
        HealthcheckServicer(lambda: ping(engine)), server
    )
    catalog_pb2_grpc.add_CatalogServiceServicer_to_server(
        CatalogServicer(catalog, chains, RunStore(engine).paused, reports.holdings), server
    )
    smart_accounts_pb2_grpc.add_SmartAccountServiceServicer_to_server(
        SmartAccountServicer(catalog, SmartAccountStore(engine), operator.address), server
    )
    wallets_pb2_grpc.add_WalletServiceServicer_to_server(
        WalletServicer(lifecycle, agent, reports, catalog, events or EventStore(engine)), server
    )
    rewards_pb2_grpc.add_RewardServiceServicer_to_server(RewardServicer(lifecycle, reports), server)
    stats_pb2_grpc.add_StatsServiceServicer_to_server(StatsServicer(reports), server)
    optimizer_pb2_grpc.add_OptimizerServiceServicer_to_server(
        OptimizerServicer(catalog, chains, agent.thresholds), server
    )

    health = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    names = [service.full_name for service in api_services()]
    names += [health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME]
    reflection.enable_server_reflection(names, server)

    port = server.add_insecure_port(address)
    return ApiServer(server, health, port)


async def mark_serving(api: ApiServer, serving: bool) -> None:
    """Sets the standard health status of the whole server and of every API service."""
    status = (
        health_pb2.HealthCheckResponse.SERVING
        if serving
        else health_pb2.HealthCheckResponse.NOT_SERVING
    )
    for name in ["", *(service.full_name for service in api_services())]:
        await api.health.set(name, status)
