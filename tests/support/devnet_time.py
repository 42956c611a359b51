"""Time on the test devnet: freeze it (every new block keeps the latest timestamp, so no
interest accrues between a test's reads and its transactions), or move it forward."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from yieldagent.devnet.anvil import rpc


@contextmanager
def frozen_time(url: str) -> Iterator[None]:
    """Blocks mined inside keep the timestamp of the block before them."""
    rpc(url, "anvil_setBlockTimestampInterval", [0])
    try:
        yield
    finally:
        rpc(url, "anvil_removeBlockTimestampInterval")


def advance(url: str, seconds: int) -> None:
    """Moves the devnet's clock ``seconds`` forward and mines a block there."""
    rpc(url, "evm_increaseTime", [seconds])
    rpc(url, "evm_mine")
