"""Lending protocols as the web3 adapter sees them: one class per protocol kind.

Each answers the same questions (``LendingPool``): which contract holds the token for it
(``custody``, to classify transfers), its pool quoted at one block from its on-chain
parameters and state, what a holder has supplied, the contract's own current supply rate
(to check quotes against), and the calls a smart account makes to supply and withdraw.
"""

from __future__ import annotations

from yieldagent.chain.web3.config import ProtocolConfig
from yieldagent.chain.web3.protocols.aave import AavePool
from yieldagent.chain.web3.protocols.base import Call, LendingPool, approve
from yieldagent.chain.web3.protocols.compound import CometPool
from yieldagent.chain.web3.protocols.moonwell import MTokenPool
from yieldagent.chain.web3.protocols.morpho import VaultPool
from yieldagent.chain.web3.reader import RpcReader
from yieldagent.domain.errors import ConfigurationError

__all__ = [
    "AavePool",
    "Call",
    "CometPool",
    "LendingPool",
    "MTokenPool",
    "VaultPool",
    "approve",
    "pool_for",
]

KINDS: dict[str, type[AavePool | CometPool | MTokenPool | VaultPool]] = {
    "aave_v3": AavePool,
    "compound_v3": CometPool,
    "moonwell": MTokenPool,
    "morpho_blue": VaultPool,
}


def pool_for(reader: RpcReader, token: str, config: ProtocolConfig) -> LendingPool:
    """The pool of ``config``, by its kind."""
    try:
        kind = KINDS[config.kind]
    except KeyError:
        raise ConfigurationError(f"protocol {config.name}: unknown kind {config.kind!r}") from None
    return kind(reader, token, config)
