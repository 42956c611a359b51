"""Money rules of a wallet, in exact integers of the token's smallest unit.

- **Principal** is what the user deposited and has not withdrawn; the wallet's value
  above it is **yield**.
- A withdrawal of ``amount`` is split pro rata: ``yield = amount × yield_available ÷
  value`` (rounded down), ``principal = amount − yield``, so principal + yield = amount.
- The **performance fee** is ``yield × fee_bps ÷ 10 000`` (rounded down), taken from the
  yield only; the user receives ``amount − fee``.
- Funds leave **most sensibly first**: idle funds in the smart account, then positions
  from the lowest APR up (least yield given up), each within its pool's liquidity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from yieldagent.domain.errors import InvalidRequest

BPS = 10_000


@dataclass(frozen=True, slots=True)
class WithdrawalSplit:
    """How one withdrawal divides. ``amount == principal + yield_``; ``fee <= yield_``."""

    amount: int
    principal: int
    yield_: int
    fee: int

    @property
    def to_user(self) -> int:
        """What the user receives: the amount less the fee."""
        return self.amount - self.fee

    def as_json(self) -> dict[str, str]:
        """The split as stored in an operation (amounts as decimal strings)."""
        return {
            "amount": str(self.amount),
            "principal": str(self.principal),
            "yield": str(self.yield_),
            "fee": str(self.fee),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, str]) -> WithdrawalSplit:
        """A split stored by ``as_json``."""
        return cls(
            int(data["amount"]), int(data["principal"]), int(data["yield"]), int(data["fee"])
        )


def split_withdrawal(amount: int, value: int, principal: int, fee_bps: int) -> WithdrawalSplit:
    """Splits withdrawing ``amount`` from a wallet worth ``value`` holding ``principal``."""
    if not 0 < amount <= value:
        raise ValueError("amount must be positive and at most the value")
    if not 0 <= fee_bps <= BPS:
        raise ValueError("fee_bps must lie in 0..10000")
    if principal < 0:
        raise ValueError("principal cannot be negative")
    available_yield = max(value - principal, 0)
    yield_ = amount * available_yield // value
    fee = yield_ * fee_bps // BPS
    return WithdrawalSplit(amount, amount - yield_, yield_, fee)


@dataclass(frozen=True, slots=True)
class Source:
    """Where a withdrawal may take funds from: a position in a protocol, or the idle
    balance (protocol None), with its APR and what its pool can pay out now."""

    protocol: str | None
    value: int
    apr: float
    withdrawable: int


def withdrawable(sources: Sequence[Source]) -> int:
    """What can be withdrawn now: each source's value, capped by its pool's liquidity."""
    return sum(min(s.value, s.withdrawable) for s in sources)


def plan_withdrawal(amount: int, sources: Sequence[Source]) -> list[tuple[str | None, int]]:
    """Where to take ``amount`` from: (protocol or None for idle funds, amount) pairs.

    InvalidRequest when ``amount`` exceeds what is withdrawable.
    """
    available = withdrawable(sources)
    if amount > available:
        raise InvalidRequest(f"Amount {amount} exceeds the withdrawable balance of {available}")
    ordered = sorted(sources, key=lambda s: (s.protocol is not None, s.apr, s.protocol or ""))
    plan: list[tuple[str | None, int]] = []
    remaining = amount
    for source in ordered:
        take = min(source.value, source.withdrawable, remaining)
        if take > 0:
            plan.append((source.protocol, take))
            remaining -= take
    return plan
