"""The ceiling of the partner-read benchmark: a bare grpc.aio server (no interceptor, no
storage) answering ``GET /api/v1/chains`` with one constant reply, behind an Envoy
rendered from our own config.

Run by ``benchmarks.partner_reads`` as ``python -m benchmarks.constant_edge PORT``; it
serves until killed. It measures what Envoy, the REST filters, the transcoder and
grpc.aio (on uvloop, as the service's processes run) cost per request.
"""

from __future__ import annotations

import sys

import grpc
import uvloop

from yieldagent.v1 import catalog_pb2, catalog_pb2_grpc

REPLY = catalog_pb2.ListChainsResponse(chain_ids=[1, 137, 8453, 42161, 84532, 11155111])


class _Constant(catalog_pb2_grpc.CatalogServiceServicer):
    async def ListChains(
        self, request: catalog_pb2.ListChainsRequest, context: grpc.aio.ServicerContext
    ) -> catalog_pb2.ListChainsResponse:
        return REPLY


async def _serve(port: int) -> None:
    server = grpc.aio.server()
    catalog_pb2_grpc.add_CatalogServiceServicer_to_server(_Constant(), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


if __name__ == "__main__":
    uvloop.run(_serve(int(sys.argv[1])))  # the loop the service's own processes run on
