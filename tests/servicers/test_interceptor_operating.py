"""The interceptor's operating duties on a real grpc.aio server: each call counted by its
final status code (the servicer's own aborts included) and timed, and its request id bound
to the log lines of the call and returned to callers that sent none."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import grpc
import pytest

from yieldagent.domain.errors import NotFound
from yieldagent.observability import metrics
from yieldagent.observability.logs import RequestIdFilter
from yieldagent.observability.metrics import REGISTRY
from yieldagent.servicers.auth import Authenticator
from yieldagent.servicers.interceptor import ApiInterceptor
from yieldagent.servicers.method_policy import load_policies
from yieldagent.v1 import health_pb2, health_pb2_grpc

METHOD = "/yieldagent.v1.HealthcheckService/Healthcheck"
log = logging.getLogger("tests.servicer")


class Scripted(health_pb2_grpc.HealthcheckServiceServicer):
    """Answers, refuses with a domain error, or aborts by itself, as the next call says."""

    mode = "ok"

    async def Healthcheck(
        self, request: health_pb2.HealthcheckRequest, context: grpc.aio.ServicerContext
    ) -> health_pb2.HealthcheckResponse:
        log.warning("serving")
        if self.mode == "domain":
            raise NotFound("nothing here")
        if self.mode == "abort":
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "too slow")
        return health_pb2.HealthcheckResponse(message="ok")


@pytest.fixture
async def stub() -> AsyncIterator[tuple[health_pb2_grpc.HealthcheckServiceStub, Scripted]]:
    servicer = Scripted()
    # The method is public: the authenticator's store is never read.
    authenticator = Authenticator(None)  # type: ignore[arg-type]
    server = grpc.aio.server(interceptors=[ApiInterceptor(load_policies(), authenticator)])
    health_pb2_grpc.add_HealthcheckServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield health_pb2_grpc.HealthcheckServiceStub(channel), servicer
    await server.stop(0)


def _count(code: str) -> float:
    labels = {"method": METHOD, "code": code}
    return REGISTRY.get_sample_value("yieldagent_grpc_requests_total", labels) or 0.0


async def test_calls_are_counted_by_their_final_code(
    stub: tuple[health_pb2_grpc.HealthcheckServiceStub, Scripted],
) -> None:
    client, servicer = stub
    before = {code: _count(code) for code in ("OK", "NOT_FOUND", "DEADLINE_EXCEEDED")}
    timed = REGISTRY.get_sample_value(
        "yieldagent_grpc_request_duration_seconds_count", {"method": METHOD}
    )
    await client.Healthcheck(health_pb2.HealthcheckRequest())
    for mode, code in (("domain", "NOT_FOUND"), ("abort", "DEADLINE_EXCEEDED")):
        servicer.mode = mode
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await client.Healthcheck(health_pb2.HealthcheckRequest())
        assert refused.value.code().name == code
    expected = {"OK": 1, "NOT_FOUND": 1, "DEADLINE_EXCEEDED": 1}

    def counted() -> dict[str, float]:
        return {code: _count(code) - before[code] for code in before}

    # An abort sends its status before the interceptor's wrapper ends (where the call is
    # counted), so the client may see the refusal a moment before the count.
    for _ in range(500):
        if counted() == expected:
            break
        await asyncio.sleep(0.01)
    assert counted() == expected
    timed_after = REGISTRY.get_sample_value(
        "yieldagent_grpc_request_duration_seconds_count", {"method": METHOD}
    )
    assert timed_after == (timed or 0) + 3


async def test_the_request_id_is_in_the_calls_log_lines_and_made_when_missing(
    stub: tuple[health_pb2_grpc.HealthcheckServiceStub, Scripted],
    caplog: pytest.LogCaptureFixture,
) -> None:
    client, _ = stub
    caplog.handler.addFilter(RequestIdFilter())
    call = client.Healthcheck(health_pb2.HealthcheckRequest(), metadata=[("x-request-id", "r-1")])
    await call
    assert "x-request-id" not in dict(await call.trailing_metadata() or ())
    call = client.Healthcheck(health_pb2.HealthcheckRequest())
    await call
    made = dict(await call.trailing_metadata() or ())["x-request-id"]
    served = [getattr(r, "request_id", None) for r in caplog.records if r.name == log.name]
    assert served == ["r-1", made]
    assert len(made) == 36 and made.count("-") == 4  # shaped like Envoy's UUIDs


async def test_each_method_is_wrapped_and_measured_once(
    stub: tuple[health_pb2_grpc.HealthcheckServiceStub, Scripted],
) -> None:
    client, _ = stub
    await client.Healthcheck(health_pb2.HealthcheckRequest())
    bound = len(metrics._API_CALLS)
    for _ in range(20):
        await client.Healthcheck(health_pb2.HealthcheckRequest())
    assert len(metrics._API_CALLS) == bound  # no per-call binding, nothing grows
