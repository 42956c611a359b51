"""HealthcheckService through grpc_testing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import grpc
from sqlalchemy import Engine

from support.grpc_testing_harness import call, serve
from yieldagent import __version__
from yieldagent.servicers.health import HealthcheckServicer
from yieldagent.storage.db import ping
from yieldagent.v1 import health_pb2

SERVICE = health_pb2.DESCRIPTOR.services_by_name["HealthcheckService"]


def test_a_healthy_service_reports_its_version_and_the_time(engine: Engine) -> None:
    server = serve(HealthcheckServicer(lambda: ping(engine)), SERVICE)
    response, _, code, _ = call(
        server, SERVICE.methods_by_name["Healthcheck"], health_pb2.HealthcheckRequest()
    )
    assert code is grpc.StatusCode.OK
    assert response.message == "Service is healthy"
    assert response.version == __version__
    assert response.time.endswith("Z")
    moment = datetime.fromisoformat(response.time)
    assert moment.utcoffset() == timedelta(0)
    assert abs(moment - datetime.now(UTC)) < timedelta(minutes=5)  # "now", not a fixed value
