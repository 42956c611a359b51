"""TLS through a real Envoy and the real gRPC server, with a certificate made here.

With a certificate and key configured, Envoy serves REST over TLS (HTTP/2 and HTTP/1.1
by ALPN) and gRPC clients over TLS on its gRPC listener, and the gRPC server itself
serves TLS. Reflection is switched off here, as production requires.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from support.certificates import Certificate, make_certificate
from support.databases import temporary_database
from support.service import RunningService, free_port, running_service
from yieldagent.v1 import health_pb2, health_pb2_grpc


@dataclass(frozen=True)
class Served:
    service: RunningService
    grpc_edge_port: int
    certificate: Certificate


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    directory = tmp_path_factory.mktemp("tls")
    certificate = make_certificate(directory)
    edge_port = free_port()
    env = {
        "YIELDAGENT_TLS_CERT_FILE": str(certificate.cert_file),
        "YIELDAGENT_TLS_KEY_FILE": str(certificate.key_file),
        "YIELDAGENT_GRPC_EDGE_PORT": str(edge_port),
        "YIELDAGENT_GRPC_REFLECTION": "off",
    }
    with (
        temporary_database("sqlite", directory) as url,
        running_service(url, directory, env) as service,
    ):
        yield Served(service, edge_port, certificate)


def _curl(served: Served, *options: str) -> subprocess.CompletedProcess[str]:
    url = f"https://localhost:{served.service.http_port}/api/v1/healthcheck"
    return subprocess.run(
        ["curl", "--silent", "--show-error", "--max-time", "20", *options, url],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("version", ["--http1.1", "--http2"])
def test_rest_answers_over_tls(served: Served, version: str) -> None:
    done = _curl(
        served,
        version,
        "--cacert",
        str(served.certificate.cert_file),
        "--write-out",
        "\n%{http_code} %{http_version}",
    )
    assert done.returncode == 0, done.stderr
    body, status = done.stdout.rsplit("\n", 1)
    assert status == ("200 1.1" if version == "--http1.1" else "200 2")
    assert json.loads(body)["message"] == "Service is healthy"


def test_rest_refuses_an_untrusted_client_and_plaintext(served: Served) -> None:
    assert _curl(served).returncode != 0  # the certificate is not in the system's roots
    plain = subprocess.run(
        [
            "curl", "--silent", "--max-time", "20", "--write-out", "%{http_code}",
            f"http://127.0.0.1:{served.service.http_port}/api/v1/healthcheck",
        ],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    assert plain.stdout in ("", "000")


def _healthcheck(target: str, certificate: Certificate) -> health_pb2.HealthcheckResponse:
    credentials = grpc.ssl_channel_credentials(root_certificates=certificate.pem)
    with grpc.secure_channel(target, credentials) as channel:
        stub = health_pb2_grpc.HealthcheckServiceStub(channel)
        reply: health_pb2.HealthcheckResponse = stub.Healthcheck(
            health_pb2.HealthcheckRequest(), timeout=20
        )
        return reply


def test_grpc_answers_over_tls_from_the_server_and_through_envoy(served: Served) -> None:
    direct = _healthcheck(served.service.grpc_target, served.certificate)
    through_envoy = _healthcheck(f"localhost:{served.grpc_edge_port}", served.certificate)
    assert direct.message == through_envoy.message == "Service is healthy"


def test_the_grpc_server_refuses_plaintext(served: Served) -> None:
    with grpc.insecure_channel(served.service.grpc_target) as channel:
        stub = health_pb2_grpc.HealthcheckServiceStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.Healthcheck(health_pb2.HealthcheckRequest(), timeout=5)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


def test_reflection_is_off_when_switched_off(served: Served) -> None:
    credentials = grpc.ssl_channel_credentials(root_certificates=served.certificate.pem)
    with grpc.secure_channel(served.service.grpc_target, credentials) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        with pytest.raises(grpc.RpcError) as refused:
            next(iter(stub.ServerReflectionInfo(iter([request]), timeout=20)))
    assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED
