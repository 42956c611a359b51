"""HealthcheckService: liveness for partners (GET /api/v1/healthcheck)."""

from __future__ import annotations

from collections.abc import Callable

import grpc

from yieldagent import __version__
from yieldagent.domain.dates import iso, utc_now
from yieldagent.v1 import health_pb2, health_pb2_grpc


class HealthcheckServicer(health_pb2_grpc.HealthcheckServiceServicer):
    """Answers when the service and its database respond."""

    def __init__(self, database_responds: Callable[[], None]) -> None:
        self._database_responds = database_responds
        """Raises when the database does not answer (the health check then fails)."""

    async def Healthcheck(
        self, request: health_pb2.HealthcheckRequest, context: grpc.aio.ServicerContext
    ) -> health_pb2.HealthcheckResponse:
        self._database_responds()
        return health_pb2.HealthcheckResponse(
            message="Service is healthy", version=__version__, time=iso(utc_now())
        )
