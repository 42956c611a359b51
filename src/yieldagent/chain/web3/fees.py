"""EIP-1559 fees from the chain's recent blocks (``eth_feeHistory``), and replacement fees.

- The priority fee (tip) is the median, over the last ``blocks`` blocks, of each block's
  ``percentile``-th reward, never below ``priority_floor`` wei (L2 sequencers order by
  arrival, and their blocks often carry no tips at all: a small floor suffices there).
- The fee cap is twice the next block's base fee plus the tip: it stays valid while the
  base fee rises by 12.5% a block for six blocks in a row.
- A replacement (``bumped``) raises both by 12.5%, at least 1 wei each: geth and most
  nodes refuse a replacement that does not raise both by 10% at least.

All amounts are integers in wei.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from web3 import AsyncWeb3

GWEI = 10**9


@dataclass(frozen=True, slots=True)
class Fees:
    """The EIP-1559 fee fields of a transaction, in wei."""

    max_fee_per_gas: int
    max_priority_fee_per_gas: int

    def __post_init__(self) -> None:
        if self.max_priority_fee_per_gas < 0 or self.max_fee_per_gas < 0:
            raise ValueError("fees cannot be negative")
        if self.max_fee_per_gas < self.max_priority_fee_per_gas:
            raise ValueError("the fee cap cannot be below the priority fee")

    def at_least(self, other: Fees) -> Fees:
        """The higher of each field of ``self`` and ``other``."""
        tip = max(self.max_priority_fee_per_gas, other.max_priority_fee_per_gas)
        return Fees(max(self.max_fee_per_gas, other.max_fee_per_gas), tip)


@dataclass(frozen=True, slots=True)
class FeeSettings:
    """How fees are drawn from the fee history."""

    blocks: int = 5
    percentile: float = 50.0
    priority_floor: int = GWEI // 1000  # 0.001 gwei: enough on L2s; raise it on mainnet
    base_fee_multiplier: int = 2

    def __post_init__(self) -> None:
        if self.blocks < 1:
            raise ValueError("the fee history needs at least one block")
        if not 0 <= self.percentile <= 100:
            raise ValueError("the reward percentile lies between 0 and 100")
        if self.priority_floor < 0 or self.base_fee_multiplier < 1:
            raise ValueError("the priority floor is >= 0 and the base fee multiplier >= 1")


def _median(values: Sequence[int]) -> int:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) // 2


def fees_from_history(history: Mapping[str, Any], settings: FeeSettings) -> Fees:
    """Fees from an ``eth_feeHistory`` answer asked for ``settings.percentile``.

    ``baseFeePerGas`` lists one more entry than blocks: the last is the next block's.
    """
    base_fees = [int(fee) for fee in history["baseFeePerGas"]]
    if not base_fees:
        raise ValueError("the fee history has no base fee")
    rewards = [int(block[0]) for block in history.get("reward") or [] if block]
    tip = max(_median(rewards) if rewards else 0, settings.priority_floor)
    return Fees(settings.base_fee_multiplier * base_fees[-1] + tip, tip)


async def suggest_fees(w3: AsyncWeb3[Any], settings: FeeSettings) -> Fees:
    """Fees for a transaction sent now, from the last ``settings.blocks`` blocks."""
    history = await w3.eth.fee_history(settings.blocks, "latest", [settings.percentile])
    return fees_from_history(history, settings)


def _raised(amount: int) -> int:
    return amount + max(-(-amount // 8), 1)


def bumped(fees: Fees) -> Fees:
    """The fees of a replacement: both fields raised by 12.5% (rounded up), at least by
    1 wei, which every node's replacement rule (geth: 10%) accepts."""
    return Fees(_raised(fees.max_fee_per_gas), _raised(fees.max_priority_fee_per_gas))
