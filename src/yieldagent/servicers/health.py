"""HealthcheckService: liveness for partners (GET /api/v1/healthcheck)."""

from __future__ import annotations

import grpc
from sqlalchemy import Engine

from yieldagent import __version__
from yieldagent.domain.dates import iso, utc_now
from yieldagent.storage.db import ping
from yieldagent.v1 import health_pb2, health_pb2_grpc


class HealthcheckServicer(health_pb2_grpc.HealthcheckServiceServicer):
    """Answers when the service and its database respond."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    async def Healthcheck(
        self, request: health_pb2.HealthcheckRequest, context: grpc.aio.ServicerContext
    ) -> health_pb2.HealthcheckResponse:
        ping(self._engine)
        return health_pb2.HealthcheckResponse(
            message="Service is healthy", version=__version__, time=iso(utc_now())
        )
