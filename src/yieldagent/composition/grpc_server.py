"""The grpc.aio server: the API's servicers behind one interceptor, with the standard health
service and, when enabled, server reflection; plaintext, or TLS with the configured
certificate. What backs each servicer is decided by the composition root
(``composition.compose``); this module knows only gRPC.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection

from yieldagent.servicers.method_policy import api_services

METADATA_LIMIT = 16 * 1024
"""The request metadata the server takes (gRPC's default is 8 KiB). Above anything Envoy
admits (8 KiB of client headers, at most 100 of them, plus its own), so that a REST request
Envoy takes is never refused for its size by gRPC, which would answer it with a 5xx."""

_OPTIONS = [
    ("grpc.so_reuseport", 0),
    ("grpc.max_concurrent_streams", 1000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.max_metadata_size", METADATA_LIMIT),
    ("grpc.absolute_max_metadata_size", METADATA_LIMIT),
]

Registration = tuple[Callable[[Any, grpc.aio.Server], None], object]
"""A generated ``add_…Servicer_to_server`` function and the servicer it registers."""


@dataclass(slots=True)
class ApiServer:
    """A configured, not yet started, gRPC server and its standard health service."""

    server: grpc.aio.Server
    health: HealthServicer
    port: int


@dataclass(frozen=True, slots=True)
class Tls:
    """The PEM files of the certificate the server presents."""

    cert_file: Path
    key_file: Path = field(repr=False)

    def credentials(self) -> grpc.ServerCredentials:
        """Server credentials over the files' current contents."""
        pair = (self.key_file.read_bytes(), self.cert_file.read_bytes())
        return grpc.ssl_server_credentials([pair])


def api_server(
    registrations: Sequence[Registration],
    interceptor: grpc.aio.ServerInterceptor,
    address: str,
    tls: Tls | None = None,
    reflect: bool = True,
) -> ApiServer:
    """A server with every servicer of ``registrations`` behind ``interceptor``, the
    standard health service and, if ``reflect``, reflection, bound to ``address`` (port 0:
    any free one) in plaintext, or with ``tls``."""
    server = grpc.aio.server(interceptors=[interceptor], options=_OPTIONS)
    for add, servicer in registrations:
        add(servicer, server)
    health = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    if reflect:
        names = [service.full_name for service in api_services()]
        names += [health_pb2.DESCRIPTOR.services_by_name["Health"].full_name]
        reflection.enable_server_reflection([*names, reflection.SERVICE_NAME], server)
    if tls is None:
        port = server.add_insecure_port(address)
    else:
        port = server.add_secure_port(address, tls.credentials())
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
