"""A chain's totals, kept with the ledger: what the statistics and the catalog's token
balances read without loading every wallet.

Every wallet adds to its chain's totals in two ways:

- through its **standing**: its token, its status, its idle funds, its positions and its
  APR as of its last valuation. A wallet that is not deactivated *holds* its value (idle
  plus positions) and each of its positions; an active one counts as a user
  with its APR.
- through its **history**: each deposit (by the deposit's token), its first deposit (the
  earliest by date; among equal dates, the one booked first), and how many transactions it
  has (counted under the wallet's token).

A commit changes the totals by the difference between the wallet's standing before and
after it, plus what its journal adds; ``domain.books.effects`` derives that change with
the journal, and storage applies it in the commit's own transaction, so the totals always
equal a full recomputation (``effects.recompute``; ``tests/support/books.py`` checks it
after every scenario).

Amounts are exact integers. APRs are floats; their sum is kept exactly too, as an integer
count of ``2**-APR_BITS`` (every APR above about 1e-23 is a whole number of those), so that
adding and removing APRs never drifts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from fractions import Fraction
from typing import TYPE_CHECKING

from yieldagent.domain.books.wallet_states import WalletStatus

if TYPE_CHECKING:
    from yieldagent.domain.books.wallets import DepositRecord

APR_BITS = 128
"""APR sums are kept in units of 2**-128 percent."""

STRIPES = 8
"""Each key's totals are split over this many rows (a wallet writes row ``id % STRIPES``),
so that concurrent commits of different wallets rarely wait for each other's row lock."""


def apr_units(apr: float) -> int:
    """``apr`` in units of ``2**-APR_BITS``: exact for any APR above about 1e-23 (smaller
    ones round to the nearest unit); 0 for a value that is not finite."""
    if not math.isfinite(apr):
        return 0
    numerator, denominator = apr.as_integer_ratio()
    return round(Fraction(numerator << APR_BITS, denominator))


def mean_apr(units: int, count: int) -> float:
    """The average of ``count`` APRs whose units sum to ``units``; 0 with none."""
    if count <= 0:
        return 0.0
    return float(Fraction(units, 1 << APR_BITS)) / count


@dataclass(slots=True)
class TokenTotals:
    """What the wallets of a chain add up to for one token."""

    held_wallets: int = 0
    """Wallets of this token that are not deactivated."""
    held: int = 0
    """Their idle funds plus positions."""
    active_wallets: int = 0
    """Wallets of this token whose agent is active (users)."""
    apr_units: int = 0
    """The sum of the active wallets' APRs, in units of 2**-APR_BITS."""
    deposited: int = 0
    """Every deposit of this token, of any wallet."""
    first_wallets: int = 0
    """Wallets whose first deposit is of this token."""
    first_deposited: int = 0
    """The sum of those first deposits."""
    transactions: int = 0
    """Transactions of the wallets of this token."""

    def add(self, other: TokenTotals, sign: int = 1) -> None:
        """Adds ``other`` (times ``sign``) to these totals."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + sign * getattr(other, f.name))

    def is_zero(self) -> bool:
        """Whether every figure is 0."""
        return not any(getattr(self, f.name) for f in fields(self))


@dataclass(slots=True)
class ProtocolTotals:
    """What the holding wallets of one token have placed in one protocol."""

    wallets: int = 0
    """Holding wallets with a position in the protocol (even of 0)."""
    amount: int = 0

    def add(self, other: ProtocolTotals, sign: int = 1) -> None:
        """Adds ``other`` (times ``sign``) to these totals."""
        self.wallets += sign * other.wallets
        self.amount += sign * other.amount

    def is_zero(self) -> bool:
        """Whether both figures are 0."""
        return not (self.wallets or self.amount)


@dataclass(slots=True)
class Totals:
    """A chain's totals (or a change to them): by token, and by (protocol, token)."""

    tokens: dict[str, TokenTotals] = field(default_factory=dict)
    protocols: dict[tuple[str, str], ProtocolTotals] = field(default_factory=dict)

    def token(self, token: str) -> TokenTotals:
        """The totals of ``token``, created empty when missing."""
        found = self.tokens.get(token)
        if found is None:
            found = self.tokens[token] = TokenTotals()
        return found

    def protocol(self, protocol: str, token: str) -> ProtocolTotals:
        """The totals of ``token`` in ``protocol``, created empty when missing."""
        found = self.protocols.get((protocol, token))
        if found is None:
            found = self.protocols[(protocol, token)] = ProtocolTotals()
        return found

    def add(self, other: Totals, sign: int = 1) -> None:
        """Adds ``other`` (times ``sign``) to these totals."""
        for token, totals in other.tokens.items():
            self.token(token).add(totals, sign)
        for (protocol, token), placed in other.protocols.items():
            self.protocol(protocol, token).add(placed, sign)

    def pruned(self) -> Totals:
        """These totals without the keys whose figures are all 0."""
        return Totals(
            {k: v for k, v in self.tokens.items() if not v.is_zero()},
            {k: v for k, v in self.protocols.items() if not v.is_zero()},
        )

    def __bool__(self) -> bool:
        return any(not v.is_zero() for v in self.tokens.values()) or any(
            not v.is_zero() for v in self.protocols.values()
        )


@dataclass(frozen=True, slots=True)
class Standing:
    """What of a wallet's state its chain's totals count."""

    token: str
    status: WalletStatus
    idle: int
    positions: tuple[tuple[str, int], ...]
    apr: float


@dataclass(frozen=True, slots=True)
class StoredWallet:
    """A wallet as stored now, as far as a commit's effects depend on it."""

    version: int
    standing: Standing
    lease_owner: str | None
    """Who holds the wallet's lease (a commit naming another owner is refused)."""


@dataclass(frozen=True, slots=True)
class WalletFacts:
    """What of one stored wallet its chain's totals count (``effects.recompute``)."""

    chain_id: int
    wallet_id: int
    standing: Standing
    deposits: Sequence[DepositRecord]
    """In booking order: by date, then as booked."""
    transactions: int


@dataclass(frozen=True, slots=True)
class FirstDeposit:
    """A wallet's earliest deposit."""

    token: str
    amount: int
    date: datetime


def merged(parts: Iterable[Totals]) -> Totals:
    """The sum of ``parts`` (a key's stripes, say), without all-zero keys."""
    total = Totals()
    for part in parts:
        total.add(part)
    return total.pruned()


def held_by_token(totals: Totals) -> Mapping[str, int]:
    """What the holding wallets hold per token (tokens no holding wallet has are absent)."""
    return {token: t.held for token, t in totals.tokens.items() if t.held_wallets > 0}
