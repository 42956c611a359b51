"""A wallet's details beside its record, for its owner: its deposits, its performance fee,
the deposit limit, its protocols, its constraints and its whitelist.

**The fee** is the policy's share of yield (``fee_bps``). What it comes to now is what
withdrawing everything would charge (``accounting.split_withdrawal`` of the whole value),
as of the wallet's last valuation; what withdrawals charged before is the sum of their
``fee_amount``.

**The deposit limit** is ``deposits.deposit_limit``: the largest single deposit that
activation and top-up accept. It applies to each deposit, so it is the same whatever the
wallet already holds.

**Constraints** read back as activation took them (``constraints.listed``). Replacing
them holds the wallet's lease, as a protocol update does, and is refused when the
wallet's funds could not be placed under them over its protocols now (the check
activation makes).

**The whitelist** is where the service sends the wallet's token: the contracts of its
selected protocols (supplies and withdrawals), its owner (withdrawals' payouts) and the
fee collector (the performance fee).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from yieldagent.domain.books.accounting import BPS, split_withdrawal
from yieldagent.domain.books.books import Books
from yieldagent.domain.books.wallet_states import WalletAction, transition
from yieldagent.domain.books.wallets import DepositRecord, Journal, Wallet
from yieldagent.domain.catalog import TokenInfo
from yieldagent.domain.constraints import RawConstraint, listed, parse_constraints
from yieldagent.domain.errors import InvalidRequest
from yieldagent.domain.market.curves import Candidate
from yieldagent.domain.money.deposits import deposit_limit
from yieldagent.domain.optimizer.search import allocate

PROTOCOL, OWNER, FEE_COLLECTOR = "protocol", "owner", "fee_collector"


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
class Whitelisted:
    """An address the service sends a wallet's token to, and why."""

    address: str
    role: str
    """``protocol``, ``owner`` or ``fee_collector``."""
    protocol: str = ""


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

    def protocols(self, partner_id: int, chain_id: int, address: str) -> tuple[str, list[str]]:
        """The wallet's token and its selected protocols, in the catalog's order."""
        wallet = self._owned(partner_id, chain_id, address)
        token = self._books.token_info(wallet)
        chosen = set(wallet.selected_protocols)
        return token.address, [p.name for p in token.protocols if p.name in chosen]

    def constraints(self, partner_id: int, chain_id: int, address: str) -> list[RawConstraint]:
        """The wallet's constraints, as activation takes them."""
        return listed(self._owned(partner_id, chain_id, address).constraints)

    async def update_constraints(
        self, partner_id: int, chain_id: int, address: str, raw: Sequence[RawConstraint]
    ) -> None:
        """Replaces the wallet's constraints; the next run follows them."""
        rules = parse_constraints(raw)
        books = self._books
        wallet = books.wallet(chain_id, address, partner_id)
        token = books.token_info(wallet)
        books.catalog.check_protocols(token, sorted(rules.protocols()))
        transition(wallet.status, WalletAction.UPDATE_CONSTRAINTS)
        chain = books.chain(chain_id)
        async with books.leases.hold(wallet.id) as owner:
            current = books.reread(wallet)
            status = transition(current.status, WalletAction.UPDATE_CONSTRAINTS)
            total = current.idle + sum(current.positions.values())
            if total > 0:
                quotes = await chain.quotes(token.address, current.selected_protocols)
                allocate(total, [Candidate(q.protocol, q) for q in quotes], rules)
            updated = replace(current, status=status, constraints=rules)
            books.commits.commit(Journal(updated, owner=owner))

    def whitelist(self, partner_id: int, chain_id: int, address: str) -> list[Whitelisted]:
        """Where the service sends the wallet's token."""
        wallet = self._owned(partner_id, chain_id, address)
        token = self._books.token_info(wallet)
        chosen = set(wallet.selected_protocols)
        found = [
            Whitelisted(p.address, PROTOCOL, p.name) for p in token.protocols if p.name in chosen
        ]
        found.append(Whitelisted(wallet.eoa, OWNER))
        if self._books.policy.fee_collector:
            found.append(Whitelisted(self._books.policy.fee_collector, FEE_COLLECTOR))
        return found
