"""The catalog: which chains, tokens and protocols the service supports.

Pure data and lookups; ``yieldagent.catalog.load_catalog`` reads it from the
registry file shipped in the package.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from yieldagent.domain.errors import InvalidRequest, NotFound


@dataclass(frozen=True, slots=True)
class ProtocolInfo:
    """A protocol that can hold a token on a chain."""

    name: str
    title: str
    parent_protocol: str
    rate_model: str
    description: str
    link: str
    address: str
    created_at: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """A token an agent can manage, and the protocols that can hold it."""

    address: str
    symbol: str
    decimals: int
    price_usd: float
    protocols: tuple[ProtocolInfo, ...]

    def protocol(self, name: str) -> ProtocolInfo | None:
        """The protocol called ``name``, if it can hold this token."""
        return next((p for p in self.protocols if p.name == name), None)


@dataclass(frozen=True, slots=True)
class ChainInfo:
    """A supported EVM chain."""

    chain_id: int
    name: str
    tokens: tuple[TokenInfo, ...]


@dataclass(frozen=True, slots=True)
class Catalog:
    """Every supported chain, by chain id."""

    chains: Mapping[int, ChainInfo]

    def chain_ids(self) -> list[int]:
        """The supported chain ids, ascending."""
        return sorted(self.chains)

    def chain(self, chain_id: int) -> ChainInfo:
        """The chain ``chain_id``; NotFound when the service does not run there."""
        chain = self.chains.get(chain_id)
        if chain is None:
            supported = ", ".join(map(str, self.chain_ids()))
            raise NotFound(f"Chain {chain_id} is not supported; supported chains: {supported}")
        return chain

    def token(self, chain_id: int, address: str) -> TokenInfo:
        """The token at checksummed ``address`` on ``chain_id``; NotFound when unsupported."""
        for token in self.chain(chain_id).tokens:
            if token.address == address:
                return token
        raise NotFound(f"Token {address} is not supported on chain {chain_id}")

    def check_protocols(self, token: TokenInfo, names: Sequence[str]) -> None:
        """Raises InvalidRequest naming every protocol in ``names`` that cannot hold ``token``."""
        unknown = [name for name in names if token.protocol(name) is None]
        if unknown:
            known = ", ".join(p.name for p in token.protocols)
            raise InvalidRequest(
                f"Invalid protocol name: {', '.join(unknown)}; "
                f"protocols for {token.symbol}: {known}"
            )


def relocate(
    catalog: Catalog, chain_id: int, token_address: str, addresses: Mapping[str, str]
) -> Catalog:
    """The catalog with chain ``chain_id``'s token (its first: USDC) at ``token_address``
    and only the protocols named in ``addresses``, each at its address there: a devnet
    that deployed the same protocols at its own addresses."""
    chain = catalog.chain(chain_id)
    template = chain.tokens[0]
    protocols = []
    for name, address in sorted(addresses.items()):
        info = template.protocol(name)
        if info is None:
            raise InvalidRequest(f"Protocol {name} is not in the catalog for chain {chain_id}")
        protocols.append(replace(info, address=address))
    token = replace(template, address=token_address, protocols=tuple(protocols))
    return Catalog({**catalog.chains, chain_id: replace(chain, tokens=(token,))})


def parse_catalog(data: Mapping[str, Any]) -> Catalog:
    """Builds a Catalog from the registry file's JSON structure."""
    chains = {}
    for chain in data["chains"]:
        tokens = tuple(
            TokenInfo(
                address=token["address"],
                symbol=token["symbol"],
                decimals=int(token["decimals"]),
                price_usd=float(token["price_usd"]),
                protocols=tuple(
                    ProtocolInfo(**protocol)
                    for protocol in sorted(token["protocols"], key=lambda p: p["name"])
                ),
            )
            for token in sorted(chain["tokens"], key=lambda t: t["symbol"])
        )
        chains[int(chain["chain_id"])] = ChainInfo(int(chain["chain_id"]), chain["name"], tokens)
    return Catalog(chains)
