"""A funded smart account, as the REST tests prepare it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
PROTOCOLS = ["aave", "compound", "moonwell", "morpho_gauntlet_usdc_prime"]


@dataclass(frozen=True)
class Funded:
    """A smart account created through REST and funded on the simulated chain."""

    eoa: str
    wallet: str
    tx_hash: str
    headers: dict[str, str]

    def activation(self, **overrides: Any) -> dict[str, Any]:
        """An activation body for this account."""
        return {
            "wallet": self.wallet,
            "eoa": self.eoa,
            "initial_token": USDC,
            "selected_protocols": PROTOCOLS,
            "tx_hash": self.tx_hash,
            **overrides,
        }
