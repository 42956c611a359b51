"""CatalogService: chains, tokens and protocols (GET /chains, /{chain_id}/tokens, ...).

A protocol's listing carries its pool's verdict under the risk guards (``risk``), judged
when listed; ``is_active`` is false while the operator pauses it or the guards exit it. Its
yield comes in parts, now and averaged over the recorded history (``domain.market.yields``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import grpc

from yieldagent.domain.addresses import parse_address
from yieldagent.domain.catalog import Catalog, ProtocolInfo, TokenInfo
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.market.quotes import PoolQuote
from yieldagent.domain.market.yields import PoolYield, PoolYields, YieldParts
from yieldagent.domain.risk.guards import OK, Verdict
from yieldagent.domain.risk.survey import RiskSurvey
from yieldagent.v1 import catalog_pb2, catalog_pb2_grpc


def _protocol(
    chain_id: int,
    token: TokenInfo,
    protocol: ProtocolInfo,
    quote: PoolQuote | None,
    active: bool,
    verdict: Verdict,
    pool_yield: PoolYield | None,
) -> catalog_pb2.Protocol:
    message = catalog_pb2.Protocol(
        name=protocol.name,
        is_active=active and not verdict.exit,
        description=protocol.description,
        created_at=protocol.created_at,
        updated_at=protocol.updated_at,
        chain_id=chain_id,
        parent_protocol=protocol.parent_protocol,
        link=protocol.link,
        address=protocol.address,
        title=protocol.title,
        risk=catalog_pb2.ProtocolRisk(state=str(verdict.state), reasons=verdict.reasons),
    )
    # Market figures come from the chain; a protocol the chain does not report keeps
    # them unset (JSON null and []).
    if quote is not None:
        message.apr = quote.apr()
        message.tvl = quote.total_supply / 10**token.decimals * token.price_usd
        message.pools.extend(
            catalog_pb2.Pool(name=name, apy=apy) for name, apy in quote.market_apys()
        )
    if pool_yield is not None:
        _set_parts(message, "", pool_yield.parts)
        for found in pool_yield.averages:
            _set_parts(message, f"_{found.days}d", found.parts)
    return message


def _set_parts(message: catalog_pb2.Protocol, suffix: str, parts: YieldParts) -> None:
    """Sets the ``apy_*`` fields named with ``suffix`` that ``parts`` knows (unknown: null)."""
    figures = {
        "apy_base": parts.base,
        "apy_rewards": parts.rewards,
        "apy_total": parts.total,
        "apy_net": parts.net,
    }
    for name, figure in figures.items():
        if figure is not None:
            setattr(message, name + suffix, figure)


class CatalogServicer(catalog_pb2_grpc.CatalogServiceServicer):
    """Serves the catalog shipped with the service."""

    def __init__(
        self,
        catalog: Catalog,
        chains: Mapping[int, MarketChain],
        paused: Callable[[int], frozenset[str]] = lambda chain_id: frozenset(),
        holdings: Callable[[int], Mapping[str, int]] = lambda chain_id: {},
        risk: RiskSurvey | None = None,
        yields: PoolYields | None = None,
    ) -> None:
        self._catalog = catalog
        self._yields = yields
        self._chains = chains
        self._paused = paused
        self._holdings = holdings
        self._risk = risk

    async def ListChains(
        self, request: catalog_pb2.ListChainsRequest, context: grpc.aio.ServicerContext
    ) -> catalog_pb2.ListChainsResponse:
        return catalog_pb2.ListChainsResponse(chain_ids=self._catalog.chain_ids())

    async def ListTokens(
        self, request: catalog_pb2.ListTokensRequest, context: grpc.aio.ServicerContext
    ) -> catalog_pb2.ListTokensResponse:
        chain = self._catalog.chain(request.chain_id)
        held = self._holdings(request.chain_id)
        return catalog_pb2.ListTokensResponse(
            tokens=[
                catalog_pb2.Token(
                    address=token.address,
                    symbol=token.symbol,
                    decimals=token.decimals,
                    balance=held.get(token.address, 0) / 10**token.decimals,
                    current_price=token.price_usd,
                )
                for token in chain.tokens
            ]
        )

    async def ListProtocols(
        self, request: catalog_pb2.ListProtocolsRequest, context: grpc.aio.ServicerContext
    ) -> catalog_pb2.ListProtocolsResponse:
        address = parse_address(request.token, ("token",))
        return catalog_pb2.ListProtocolsResponse(
            protocols=await self.protocols(request.chain_id, address)
        )

    async def protocols(self, chain_id: int, address: str) -> list[catalog_pb2.Protocol]:
        """The catalog's entries of the protocols that can hold the token ``address`` on
        ``chain_id``, with their market figures and risk verdicts now."""
        token = self._catalog.token(chain_id, address)
        chain = self._chains[chain_id]
        names = [p.name for p in token.protocols]
        quotes = {quote.protocol: quote for quote in await chain.quotes(address, names)}
        paused = self._paused(chain_id)
        verdicts: dict[str, Verdict] = {}
        head = await chain.head() if self._risk is not None or self._yields is not None else None
        yields: dict[str, PoolYield] = {}
        if self._yields is not None and head is not None:
            yields = {
                p.name: self._yields.of(
                    chain_id, quotes.get(p.name), p.name, address, head.timestamp
                )
                for p in token.protocols
            }
        if self._risk is not None and head is not None:
            judged = await self._risk.judge(chain_id, chain, address, quotes, head.timestamp)
            verdicts = {pool.protocol: pool.verdict for pool in judged}
        return [
            _protocol(
                chain_id,
                token,
                p,
                quotes.get(p.name),
                p.name not in paused,
                verdicts.get(p.name, OK),
                yields.get(p.name),
            )
            for p in token.protocols
        ]

    async def ListProtocolSupply(
        self, request: catalog_pb2.ListProtocolSupplyRequest, context: grpc.aio.ServicerContext
    ) -> catalog_pb2.ListProtocolSupplyResponse:
        address = parse_address(request.token, ("token",))
        token = self._catalog.token(request.chain_id, address)
        chain = self._chains[request.chain_id]
        quotes = await chain.quotes(address, [p.name for p in token.protocols])
        holds: dict[str, list[str]] = {}
        for listed in self._catalog.chain(request.chain_id).tokens:
            for protocol in listed.protocols:
                holds.setdefault(protocol.name, []).append(listed.address)
        scale: int = 10**token.decimals
        return catalog_pb2.ListProtocolSupplyResponse(
            protocols=[
                catalog_pb2.ProtocolSupply(
                    protocol=quote.protocol,
                    supply=quote.total_supply / scale,
                    tokens=holds.get(quote.protocol, [address]),
                    supply_amount=str(quote.total_supply),
                )
                for quote in sorted(quotes, key=lambda q: q.protocol)
            ]
        )
