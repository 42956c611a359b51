"""STAND-IN (devnet-contracts branch): what a deployed protocol is made of.

devnet-core owns this module (with ``Manifest``); only ``ProtocolDeployment`` is used here.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ProtocolDeployment:
    """One protocol on the devnet, as an adapter needs it."""

    name: str  # catalog name: aave, compound, moonwell, morpho_gauntlet_usdc_prime
    kind: str  # rate model kind: aave_v3, compound_v3, moonwell, morpho_blue
    address: str  # the contract an account supplies to
    contracts: dict[str, str] = field(default_factory=dict)  # everything else, by role
    markets: tuple[str, ...] = ()  # Morpho market ids (0x hex)
