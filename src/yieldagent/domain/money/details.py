"""A wallet's details beside its record, for its owner: its deposits, its performance fee
and the deposit limit.

**The fee** is the policy's share of yield (``fee_bps``). What it comes to now is what
withdrawing everything would charge (``accounting.split_withdrawal`` of the whole value),
as of the wallet's last valuation; what withdrawals charged before is the sum of their
``fee_amount``.

**The deposit limit** is ``deposits.deposit_limit``: the largest single deposit that
activation and top-up accept. It applies to each deposit, so it is the same whatever the
wallet already holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from yieldagent.domain.books.accounting import BPS, split_withdrawal
from yieldagent.domain.books.books import Books
from yieldagent.domain.books.wallets import DepositRecord, Wallet
from yieldagent.domain.catalog import TokenInfo
from yieldagent.domain.errors import InvalidRequest
from yieldagent.domain.money.deposits import deposit_limit


@dataclass(frozen=True, slots=True)
class FeeView:
    """A wallet's performance fee: its rate, what it comes to now, and what was charged."""

    token: TokenInfo
    fee_bps: int
    due: int
    """The fee on the yield accrued in the wallet's value, in the token's smallest unit."""
    charged: int
    """The fee its withdrawals charged, in the token's smallest unit."""

    @property
    def fraction(self) -> float:
        """The fee's share of yield, as a fraction (0.1 is 10%)."""
        return self.fee_bps / BPS


@dataclass(frozen=True, slots=True)
class DepositLimit:
    """The largest deposit accepted, in the token's smallest unit and in US dollars."""

    token: TokenInfo
    amount: int
    usd: float


def fee_due(wallet: Wallet, fee_bps: int) -> int:
    """What withdrawing all of ``wallet`` (as last valued) would charge."""
    total = wallet.idle + sum(wallet.positions.values())
    if total <= 0:
        return 0
    return split_withdrawal(total, total, wallet.principal, fee_bps).fee


class WalletDetails:
    """The owner's reads of a wallet's deposits, fee and deposit limit."""

    def __init__(self, books: Books) -> None:
        self._books = books

    def _owned(self, partner_id: int, chain_id: int, address: str) -> Wallet:
        self._books.catalog.chain(chain_id)
        return self._books.wallet(chain_id, address, partner_id)

    def deposits(self, partner_id: int, chain_id: int, address: str) -> list[DepositRecord]:
        """The deposits the books credited to the wallet, oldest first."""
        wallet = self._owned(partner_id, chain_id, address)
        return self._books.wallets.deposits(wallet.id)

    def fee(self, partner_id: int, chain_id: int, address: str) -> FeeView:
        """The wallet's fee rate, the fee due now and the fee charged so far."""
        wallet = self._owned(partner_id, chain_id, address)
        fee_bps = self._books.policy.fee_bps
        charged = sum(w.fee for w in self._books.wallets.withdrawals(wallet.id))
        return FeeView(self._books.token_info(wallet), fee_bps, fee_due(wallet, fee_bps), charged)

    def deposit_limit(self, partner_id: int, chain_id: int, address: str, eoa: str) -> DepositLimit:
        """The largest deposit the wallet's owner ``eoa`` may make to it."""
        wallet = self._owned(partner_id, chain_id, address)
        if eoa != wallet.eoa:
            raise InvalidRequest(f"{eoa} is not the owner of wallet {wallet.address}")
        token = self._books.token_info(wallet)
        max_usd = self._books.policy.max_deposit_usd
        return DepositLimit(token, deposit_limit(token, max_usd), max_usd)
