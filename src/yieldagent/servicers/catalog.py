"""CatalogService: chains, tokens and protocols (GET /chains, /{chain_id}/tokens, ...)."""

from __future__ import annotations

import grpc

from yieldagent.domain.addresses import parse_address
from yieldagent.domain.catalog import Catalog, ProtocolInfo
from yieldagent.v1 import catalog_pb2, catalog_pb2_grpc


def _protocol(chain_id: int, protocol: ProtocolInfo) -> catalog_pb2.Protocol:
    # apr, tvl and pools are market data; the catalog alone does not know them,
    # so they stay unset (JSON null and []) until a market source provides them.
    return catalog_pb2.Protocol(
        name=protocol.name,
        is_active=True,
        description=protocol.description,
        created_at=protocol.created_at,
        updated_at=protocol.updated_at,
        chain_id=chain_id,
        parent_protocol=protocol.parent_protocol,
        link=protocol.link,
        address=protocol.address,
        title=protocol.title,
    )


class CatalogServicer(catalog_pb2_grpc.CatalogServiceServicer):
    """Serves the catalog shipped with the service."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog

    async def ListChains(
        self, request: catalog_pb2.ListChainsRequest, context: grpc.aio.ServicerContext
    ) -> catalog_pb2.ListChainsResponse:
        return catalog_pb2.ListChainsResponse(chain_ids=self._catalog.chain_ids())

    async def ListTokens(
        self, request: catalog_pb2.ListTokensRequest, context: grpc.aio.ServicerContext
    ) -> catalog_pb2.ListTokensResponse:
        chain = self._catalog.chain(request.chain_id)
        return catalog_pb2.ListTokensResponse(
            tokens=[
                catalog_pb2.Token(
                    address=token.address,
                    symbol=token.symbol,
                    decimals=token.decimals,
                    balance=0.0,  # no agent can hold funds before wallet activation exists
                    current_price=token.price_usd,
                )
                for token in chain.tokens
            ]
        )

    async def ListProtocols(
        self, request: catalog_pb2.ListProtocolsRequest, context: grpc.aio.ServicerContext
    ) -> catalog_pb2.ListProtocolsResponse:
        address = parse_address(request.token, ("token",))
        token = self._catalog.token(request.chain_id, address)
        return catalog_pb2.ListProtocolsResponse(
            protocols=[_protocol(request.chain_id, p) for p in token.protocols]
        )
