"""What every lending protocol class shares: the calls it builds and its shape.

Each answers the same questions (``LendingPool``): which contract holds the token for it
(``custody``, to classify transfers), its pool quoted at one block from its on-chain
parameters and state, what a holder has supplied, the contract's own current supply rate
(to check quotes against), and the calls a smart account makes to supply and withdraw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from yieldagent.chain.web3.abis import APPROVE, Fn
from yieldagent.chain.web3.reader import BlockId, Read
from yieldagent.domain.market.quotes import PoolQuote
from yieldagent.domain.market.rate_models import SECONDS_PER_YEAR
from yieldagent.domain.ports.chain import Block

PER_SECOND_WAD_TO_ANNUAL_RAY = SECONDS_PER_YEAR * 10**9
"""Multiplies a per-second rate scaled by 1e18 into an annual rate scaled by 1e27."""


@dataclass(frozen=True, slots=True)
class Call:
    """One call a smart account makes: ``fn(*args)`` on ``target`` with ``value`` wei."""

    target: str
    fn: Fn
    args: tuple[Any, ...] = ()
    value: int = 0
    description: str = ""

    @property
    def data(self) -> bytes:
        """The call's ABI-encoded data."""
        return self.fn.encode(*self.args)

    def arguments(self) -> tuple[str, ...]:
        """The arguments as strings: integers in decimal, bytes in 0x hex, booleans in
        lower case, addresses as given."""
        return tuple(_abi_text(a) for a in self.args)


def _abi_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes | bytearray):
        return "0x" + bytes(value).hex()
    return str(value)


def approve(token: str, spender: str, amount: int) -> Call:
    """The ERC-20 approval of ``amount`` of ``token`` to ``spender``."""
    return Call(token, APPROVE, (spender, amount), description=f"Allow {spender} to take {amount}")


def supplying(protocol: str, amount: int) -> str:
    """What a supply call does, for people reading a plan."""
    return f"Supply {amount} to {protocol}"


def withdrawing(protocol: str, amount: int) -> str:
    """What a withdrawal call does, for people reading a plan."""
    return f"Withdraw {amount} from {protocol}"


def exiting(protocol: str) -> str:
    """What a whole withdrawal does."""
    return f"Withdraw everything from {protocol}"


MAX_UINT = 2**256 - 1
"""What Aave's and Comet's ``withdraw`` take as "the whole balance"."""


class LendingPool(Protocol):
    """One protocol's pool of the chain's token."""

    @property
    def name(self) -> str:
        """The catalog's name."""

    @property
    def custody(self) -> str:
        """The address that holds the token for the pool: supplies are transfers to it,
        withdrawals transfers from it (valid once ``resolve`` ran)."""

    async def resolve(self) -> None:
        """Reads, once, the addresses the pool's contracts derive (tokens, IRM, models)."""

    async def quote(self, block: Block) -> PoolQuote:
        """The pool at ``block``, from its on-chain rate parameters and state."""

    async def position(self, holder: str, block: BlockId) -> int:
        """What ``holder`` has supplied, interest included, in the token's units."""

    def position_read(self, holder: str) -> Read:
        """The one read whose answer is ``position`` (a vault's: the holder's shares,
        which ``VaultPool.assets_read`` turns into the token)."""

    async def contract_rate(self, block: BlockId) -> int:
        """The supply rate the contracts themselves report now (annual, RAY)."""

    def supply_calls(self, account: str, amount: int) -> list[Call]:
        """Approve and supply ``amount`` from ``account``."""

    def withdraw_calls(self, account: str, amount: int) -> list[Call]:
        """Withdraw ``amount`` to ``account``."""

    async def exit_calls(self, account: str) -> list[Call]:
        """Withdraw all of ``account``'s position, interest to the second it is mined."""
