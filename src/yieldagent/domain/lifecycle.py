"""A wallet's money-moving use cases: activate, top up, withdraw, deactivate, claim rewards;
and the calls that change its rules: protocols, reward staking, operator actions.

Every money-moving call on one wallet runs alone: it holds the wallet's lease, a
row-level lock in the database that works across processes (a conditional UPDATE,
expiring on its own if a process dies), plus a local lock that spares the database
from polling within one process. Each call commits one Journal: the wallet's new
state and its history records, together.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal

from yieldagent.chain.port import ChainPort
from yieldagent.domain.accounting import (
    Holding,
    WithdrawalSplit,
    plan_withdrawal,
    split_withdrawal,
    withdrawable,
)
from yieldagent.domain.allocation import Candidate, allocate
from yieldagent.domain.apr import PerformancePoint
from yieldagent.domain.catalog import Catalog, TokenInfo
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.errors import (
    AccessDenied,
    Conflict,
    InvalidInput,
    InvalidRequest,
    NotFound,
)
from yieldagent.domain.optimizer import Costs
from yieldagent.domain.valuation import Valuation, moment_of, place_idle, value
from yieldagent.domain.wallet_states import WalletStatus, allowed, transition
from yieldagent.domain.wallets import (
    DepositRecord,
    Journal,
    RewardRecord,
    TransactionRecord,
    Wallet,
    WalletRepository,
    WithdrawalRecord,
    require,
)

DEPOSIT_TOO_LARGE = "Access denied or deposit too large"
SNAPSHOT_SECONDS = 3600
"""At most one periodic performance point per wallet per simulated hour."""
VALUED_STATES = frozenset({WalletStatus.ACTIVATED, WalletStatus.BLOCKED, WalletStatus.EMERGENCY})


@dataclass(frozen=True, slots=True)
class Policy:
    """The service's money rules and limits."""

    fee_bps: int
    max_deposit_usd: float
    fee_collector: str
    lease_seconds: float = 60.0
    lease_wait_seconds: float = 30.0


@dataclass(frozen=True, slots=True)
class ActivationRequest:
    """A checked activation request."""

    wallet: str
    eoa: str
    token: str
    protocols: tuple[str, ...]
    tx_hash: str | None
    constraints: Constraints


@dataclass(frozen=True, slots=True)
class WithdrawalResult:
    """What a withdrawal did."""

    date: datetime
    token: str
    split: WithdrawalSplit
    value: float
    value_in_usd: float
    tx_hash: str | None
    block_number: int | None


@dataclass(frozen=True, slots=True)
class ClaimedReward:
    """A reward token collected by a claim."""

    token: str
    amount: int
    amount_float: float
    price_in_underlying: float


async def _send(
    chain: ChainPort,
    token: str,
    sender: str,
    recipient: str,
    amount: int,
    action: str,
    correlation: str,
) -> TransactionRecord:
    """Sends ``amount`` of ``token`` and returns the history record of the transfer."""
    receipt = await chain.transfer(token, sender, recipient, amount)
    return TransactionRecord(
        action=action,
        token=token,
        amount=amount,
        tx_hash=receipt.tx_hash,
        date=moment_of(receipt.timestamp),
        block_number=receipt.block_number,
        correlation_id=correlation,
    )


class Lifecycle:
    """The use cases that move a wallet's money or change its rules."""

    def __init__(
        self,
        wallets: WalletRepository,
        chains: Mapping[int, ChainPort],
        catalog: Catalog,
        policy: Policy,
        paused: Callable[[int], frozenset[str]] = lambda chain_id: frozenset(),
    ) -> None:
        self._wallets = wallets
        self._chains = chains
        self._catalog = catalog
        self._policy = policy
        self.paused = paused
        """The protocols the operator paused on a chain: funds are never placed there."""
        self._locks: dict[int, asyncio.Lock] = {}
        self._owner = uuid.uuid4().hex[:12]

    # -- shared steps -------------------------------------------------------------

    async def costs(self, chain: ChainPort, wallet: Wallet) -> Costs:
        """What moving the wallet's funds costs now, and what its token is worth."""
        token = self.token_info(wallet)
        gas = await chain.gas_cost("supply")
        return Costs(gas.usd, token.price_usd, token.decimals)

    @property
    def lease_seconds(self) -> float:
        """How long a wallet's lease lasts before it expires on its own."""
        return self._policy.lease_seconds

    def chain(self, chain_id: int) -> ChainPort:
        """The chain port of ``chain_id``; NotFound when the service does not run there."""
        self._catalog.chain(chain_id)
        return self._chains[chain_id]

    def wallet(self, chain_id: int, address: str, partner_id: int | None = None) -> Wallet:
        """The stored wallet, checked against its owner when ``partner_id`` is given."""
        wallet = require(self._wallets.get(chain_id, address), chain_id, address)
        return wallet if partner_id is None else wallet.owned_by(partner_id)

    def token_info(self, wallet: Wallet) -> TokenInfo:
        """Catalog facts of the wallet's token."""
        return self._catalog.token(wallet.chain_id, wallet.token)

    @asynccontextmanager
    async def exclusive(self, wallet: Wallet, owner: str | None = None) -> AsyncIterator[Wallet]:
        """Holds the wallet's lease; yields the wallet as stored once the lease is held.

        ``owner``: a lease the caller already holds (the scheduler claims wallets in
        batches); it is renewed, and left to the caller to release.
        """
        local = self._locks.setdefault(wallet.id, asyncio.Lock())
        release = owner is None
        async with local:
            owner = owner or f"{self._owner}:{uuid.uuid4().hex[:8]}"
            deadline = time.monotonic() + self._policy.lease_wait_seconds
            while not self._wallets.acquire_lease(
                wallet.id, owner, time.time() + self._policy.lease_seconds, time.time()
            ):
                if time.monotonic() > deadline:
                    raise Conflict("Another operation on this wallet is in progress; retry")
                await asyncio.sleep(0.02)
            try:
                yield self.wallet(wallet.chain_id, wallet.address)
            finally:
                if release:
                    self._wallets.release_lease(wallet.id, owner)

    def with_valuation(self, wallet: Wallet, valuation: Valuation) -> Wallet:
        return replace(
            wallet,
            idle=valuation.idle,
            allocation=dict(valuation.positions),
            current_apr=valuation.apr(),
            valued_at=valuation.moment,
        )

    # -- activation and top-up ------------------------------------------------------

    async def _new_deposits(
        self,
        chain: ChainPort,
        address: str,
        token: TokenInfo,
        tx_hash: str | None,
        wallet: Wallet | None,
    ) -> list[DepositRecord]:
        """Deposits not yet credited: the transfer ``tx_hash`` when given, plus whatever else
        the smart account holds beyond what the service knows of (credited by balance)."""
        head = await chain.head()
        known_idle = wallet.idle if wallet is not None else 0
        unexplained = await chain.token_balance(token.address, address) - known_idle
        deposits = []
        if tx_hash is not None:
            transfer = await chain.find_transfer(tx_hash)
            if transfer is None:
                raise InvalidRequest(f"Deposit transaction {tx_hash} not found on the chain")
            if transfer.recipient != address or transfer.token != token.address:
                raise InvalidRequest(
                    f"Transaction {tx_hash} is not a {token.symbol} transfer to {address}"
                )
            credited_through = (
                self._wallets.balance_credited_through(wallet.id) if wallet is not None else None
            )
            if self._wallets.deposit_known(chain.chain_id, tx_hash) or (
                credited_through is not None and transfer.block_number <= credited_through
            ):
                raise Conflict(f"Deposit {tx_hash} was already credited")
            deposits.append(
                DepositRecord(
                    transfer.amount,
                    token.address,
                    tx_hash,
                    transfer.block_number,
                    moment_of(transfer.timestamp),
                )
            )
            unexplained -= transfer.amount
        if unexplained > 0:
            deposits.append(
                DepositRecord(
                    unexplained, token.address, None, head.number, moment_of(head.timestamp)
                )
            )
        return deposits

    def _check_size(self, token: TokenInfo, amount: int) -> None:
        if amount / 10**token.decimals * token.price_usd > self._policy.max_deposit_usd:
            raise AccessDenied(DEPOSIT_TOO_LARGE)

    async def activate(self, partner_id: int, chain_id: int, request: ActivationRequest) -> Wallet:
        """Activates (or reactivates) the agent of a funded smart account."""
        chain = self.chain(chain_id)
        token = self._token(chain_id, request.token)
        self._catalog.check_protocols(token, [*request.protocols, *request.constraints.protocols()])
        account = self._wallets.smart_account(chain_id, request.wallet)
        if account is None or account.eoa != request.eoa:
            raise InvalidRequest(
                f"{request.wallet} is not a smart account created for {request.eoa}"
            )
        if account.partner_id != partner_id:
            raise AccessDenied("Access denied: the smart account belongs to another partner")
        existing = self._wallets.get(chain_id, request.wallet)
        if existing is not None:
            transition(existing.owned_by(partner_id).status, "activate")
        deposits = await self._new_deposits(chain, request.wallet, token, request.tx_hash, existing)
        held = existing.idle + sum(existing.allocation.values()) if existing else 0
        if not deposits and held == 0:
            raise InvalidRequest(f"No deposit of {token.symbol} found in the smart account")
        self._check_size(token, sum(d.amount for d in deposits))
        await self._check_feasible(chain, token, request, held + sum(d.amount for d in deposits))
        moment = deposits[-1].date if deposits else moment_of((await chain.head()).timestamp)
        journal = self._activation_journal(
            existing, partner_id, chain_id, request, deposits, moment
        )
        if existing is None:
            wallet = self._wallets.create(journal)
        else:
            self._wallets.commit(journal, expected=WalletStatus.DEACTIVATED)
            wallet = journal.wallet
        return await self._place_first_allocation(wallet)

    async def _check_feasible(
        self, chain: ChainPort, token: TokenInfo, request: ActivationRequest, total: int
    ) -> None:
        """Raises InvalidRequest, before anything is stored, if the constraints cannot be
        met for ``total`` over the selected protocols."""
        quotes = await chain.quotes(token.address, request.protocols)
        allocate(total, [Candidate(q.protocol, q) for q in quotes], request.constraints)

    def _token(self, chain_id: int, address: str) -> TokenInfo:
        try:
            return self._catalog.token(chain_id, address)
        except NotFound as missing:
            raise InvalidRequest(missing.detail) from None

    def _activation_journal(
        self,
        existing: Wallet | None,
        partner_id: int,
        chain_id: int,
        request: ActivationRequest,
        deposits: list[DepositRecord],
        moment: datetime,
    ) -> Journal:
        added = sum(d.amount for d in deposits)
        before = existing.idle + sum(existing.allocation.values()) if existing else 0
        if existing is None:
            wallet = Wallet(
                id=0,
                chain_id=chain_id,
                address=request.wallet,
                eoa=request.eoa,
                partner_id=partner_id,
                status=WalletStatus.ACTIVATING,
                token=request.token,
                selected_protocols=request.protocols,
                constraints=request.constraints,
                principal=added,
                allocation={},
                idle=added,
                current_apr=0.0,
                valued_at=moment,
                is_staked=False,
                activation_date=moment,
                last_deactivation_date=None,
                last_reactivation_date=None,
            )
        else:
            wallet = replace(
                existing,
                status=WalletStatus.ACTIVATING,
                token=request.token,
                selected_protocols=request.protocols,
                constraints=request.constraints,
                principal=existing.principal + added,
                idle=existing.idle + added,
                last_reactivation_date=moment,
            )
        return Journal(
            wallet,
            deposits=deposits,
            transactions=[self._deposit_transaction(d) for d in deposits],
            points=[PerformancePoint(moment, before, added)] if added else [],
        )

    @staticmethod
    def _deposit_transaction(deposit: DepositRecord) -> TransactionRecord:
        return TransactionRecord(
            action="deposit",
            token=deposit.token,
            amount=deposit.amount,
            tx_hash=deposit.tx_hash or "",
            date=deposit.date,
            block_number=deposit.block_number,
        )

    async def _place_first_allocation(self, wallet: Wallet) -> Wallet:
        chain = self.chain(wallet.chain_id)
        async with self.exclusive(wallet) as current:
            try:
                valuation = await value(chain, current)
                records = await place_idle(
                    chain,
                    current,
                    valuation,
                    str(uuid.uuid4()),
                    await self.costs(chain, current),
                    self.paused(current.chain_id),
                )
            except Exception:
                failed = replace(current, status=transition(current.status, "activation_failed"))
                self._wallets.commit(Journal(failed))
                raise
            valuation = await value(chain, current)
            placed = self.with_valuation(current, valuation)
            placed.status = transition(current.status, "activation_placed")
            self._wallets.commit(Journal(placed, transactions=records))
            return placed

    async def top_up(self, partner_id: int, chain_id: int, address: str, tx_hash: str) -> None:
        """Credits a further deposit, verified on chain, and places it."""
        wallet = self.wallet(chain_id, address, partner_id)
        transition(wallet.status, "top_up")
        chain = self.chain(chain_id)
        token = self.token_info(wallet)
        async with self.exclusive(wallet) as current:
            transition(current.status, "top_up")
            deposits = await self._new_deposits(chain, current.address, token, tx_hash, current)
            added = sum(d.amount for d in deposits)
            self._check_size(token, added)
            valuation = await value(chain, current)
            correlation = str(uuid.uuid4())
            records = await place_idle(
                chain,
                current,
                valuation,
                correlation,
                await self.costs(chain, current),
                self.paused(current.chain_id),
            )
            after = self.with_valuation(current, await value(chain, current))
            after.principal = current.principal + added
            self._wallets.commit(
                Journal(
                    after,
                    deposits=deposits,
                    transactions=[*(self._deposit_transaction(d) for d in deposits), *records],
                    points=[PerformancePoint(valuation.moment, valuation.total - added, added)],
                )
            )

    # -- withdrawals ---------------------------------------------------------------

    async def _take_out(
        self,
        chain: ChainPort,
        wallet: Wallet,
        amount: int,
        valuation: Valuation,
        correlation: str,
    ) -> list[TransactionRecord]:
        """Withdraws ``amount`` into the smart account, most sensible positions first."""
        holdings = [Holding(None, valuation.idle, 0.0, valuation.idle)] + [
            Holding(p, v, valuation.quotes[p].apr(), valuation.quotes[p].cash)
            for p, v in valuation.positions.items()
        ]
        records = []
        for protocol, part in plan_withdrawal(amount, holdings):
            if protocol is None:
                continue
            receipt = await chain.withdraw(wallet.address, protocol, wallet.token, part)
            records.append(
                TransactionRecord(
                    action="withdraw",
                    token=wallet.token,
                    amount=part,
                    tx_hash=receipt.tx_hash,
                    date=moment_of(receipt.timestamp),
                    protocol=protocol,
                    apr=valuation.quotes[protocol].apr(),
                    block_number=receipt.block_number,
                    correlation_id=correlation,
                )
            )
        return records

    async def _pay_out(
        self,
        chain: ChainPort,
        wallet: Wallet,
        split: WithdrawalSplit,
        correlation: str,
    ) -> tuple[list[TransactionRecord], TransactionRecord | None]:
        """Sends the user's part to the EOA and the fee to the fee collector."""
        records: list[TransactionRecord] = []
        payout = None
        if split.to_user > 0:
            payout = await _send(
                chain,
                wallet.token,
                wallet.address,
                wallet.eoa,
                split.to_user,
                "transfer",
                correlation,
            )
            records.append(payout)
        if split.fee > 0:
            records.append(
                await _send(
                    chain,
                    wallet.token,
                    wallet.address,
                    self._policy.fee_collector,
                    split.fee,
                    "fee_transfer",
                    correlation,
                )
            )
        return records, payout

    def _withdrawal(
        self,
        wallet: Wallet,
        split: WithdrawalSplit,
        payout: TransactionRecord | None,
        moment: datetime,
    ) -> WithdrawalResult:
        token = self.token_info(wallet)
        whole = float(Decimal(split.to_user) / 10**token.decimals)
        return WithdrawalResult(
            date=payout.date if payout else moment,
            token=wallet.token,
            split=split,
            value=whole,
            value_in_usd=whole * token.price_usd,
            tx_hash=payout.tx_hash if payout else None,
            block_number=payout.block_number if payout else None,
        )

    @staticmethod
    def _withdrawal_record(result: WithdrawalResult) -> WithdrawalRecord:
        split = result.split
        return WithdrawalRecord(
            token=result.token,
            amount=split.amount,
            principal=split.principal,
            yield_=split.yield_,
            fee=split.fee,
            value=result.value,
            value_in_usd=result.value_in_usd,
            tx_hash=result.tx_hash,
            block_number=result.block_number,
            date=result.date,
        )

    async def withdraw(
        self, partner_id: int, chain_id: int, address: str, amount: int
    ) -> WithdrawalResult:
        """Withdraws ``amount`` to the EOA; the agent stays active."""
        if amount <= 0:
            raise InvalidInput.field(("amount",), "Input should be greater than 0", "greater_than")
        wallet = self.wallet(chain_id, address, partner_id)
        transition(wallet.status, "withdraw")
        chain = self.chain(chain_id)
        async with self.exclusive(wallet) as current:
            transition(current.status, "withdraw")
            valuation = await value(chain, current)
            correlation = str(uuid.uuid4())
            records = await self._take_out(chain, current, amount, valuation, correlation)
            split = split_withdrawal(
                amount, valuation.total, current.principal, self._policy.fee_bps
            )
            payouts, payout = await self._pay_out(chain, current, split, correlation)
            result = self._withdrawal(current, split, payout, valuation.moment)
            after = self.with_valuation(current, await value(chain, current))
            after.principal = current.principal - split.principal
            self._wallets.commit(
                Journal(
                    after,
                    withdrawals=[self._withdrawal_record(result)],
                    transactions=[*records, *payouts],
                    points=[PerformancePoint(valuation.moment, valuation.total, -amount)],
                )
            )
            return result

    async def deactivate(
        self, partner_id: int, chain_id: int, address: str, transfer: bool
    ) -> WithdrawalResult | None:
        """Stops the agent and withdraws everything: to the EOA, or left idle in the smart
        account when ``transfer`` is false (no fee is taken then: nothing left)."""
        wallet = self.wallet(chain_id, address, partner_id)
        transition(wallet.status, "deactivate")
        chain = self.chain(chain_id)
        async with self.exclusive(wallet) as current:
            deactivating = replace(current, status=transition(current.status, "deactivate"))
            self._wallets.commit(Journal(deactivating), expected=current.status)
            valuation = await value(chain, current)
            correlation = str(uuid.uuid4())
            holdings = [
                Holding(p, v, 0.0, valuation.quotes[p].cash) for p, v in valuation.positions.items()
            ]
            available = valuation.idle + withdrawable(holdings)
            records = await self._take_out(chain, current, available, valuation, correlation)
            result = None
            withdrawals: list[WithdrawalRecord] = []
            points: list[PerformancePoint] = []
            principal = current.principal
            if transfer and available > 0:
                split = split_withdrawal(
                    available, valuation.total, current.principal, self._policy.fee_bps
                )
                payouts, payout = await self._pay_out(chain, current, split, correlation)
                records += payouts
                result = self._withdrawal(current, split, payout, valuation.moment)
                withdrawals.append(self._withdrawal_record(result))
                points.append(PerformancePoint(valuation.moment, valuation.total, -available))
                principal -= split.principal
            after = self.with_valuation(deactivating, await value(chain, current))
            after.status = transition(deactivating.status, "deactivation_done")
            after.principal = principal
            after.last_deactivation_date = valuation.moment
            self._wallets.commit(
                Journal(after, withdrawals=withdrawals, transactions=records, points=points)
            )
            return result

    # -- rewards ----------------------------------------------------------------------

    async def claim_rewards(
        self, partner_id: int, chain_id: int, address: str
    ) -> list[ClaimedReward]:
        """Claims accrued reward tokens; staked ones are swapped into the wallet's token
        and supplied, the others are sent to the EOA."""
        wallet = self.wallet(chain_id, address, partner_id)
        if not allowed(wallet.status, "claim_rewards"):
            raise Conflict("Agent not active")
        chain = self.chain(chain_id)
        async with self.exclusive(wallet) as current:
            if not allowed(current.status, "claim_rewards"):
                raise Conflict("Agent not active")
            if not await chain.accrued_rewards(current.address):
                raise InvalidRequest("No rewards to claim")
            claim = await chain.claim_rewards(current.address)
            token = self.token_info(current)
            correlation = str(uuid.uuid4())
            moment = moment_of(claim.receipt.timestamp)
            claimed, rewards, records = [], [], []
            for reward in claim.rewards:
                whole = float(Decimal(reward.amount) / 10**reward.decimals)
                claimed.append(
                    ClaimedReward(
                        reward.token, reward.amount, whole, reward.price_usd / token.price_usd
                    )
                )
                rewards.append(
                    RewardRecord(
                        reward.token,
                        reward.symbol,
                        reward.amount,
                        reward.decimals,
                        whole * reward.price_usd,
                        claim.receipt.tx_hash,
                        current.is_staked,
                        moment,
                    )
                )
                if current.is_staked:
                    swap = await chain.swap(
                        current.address, reward.token, current.token, reward.amount, 0
                    )
                    records.append(
                        TransactionRecord(
                            action="swap",
                            token=reward.token,
                            amount=reward.amount,
                            tx_hash=swap.receipt.tx_hash,
                            date=moment_of(swap.receipt.timestamp),
                            new_token=current.token,
                            amount_out=swap.amount_out,
                            block_number=swap.receipt.block_number,
                            correlation_id=correlation,
                        )
                    )
                else:
                    records.append(
                        await _send(
                            chain,
                            reward.token,
                            current.address,
                            current.eoa,
                            reward.amount,
                            "transfer",
                            correlation,
                        )
                    )
            if current.is_staked:
                records += await place_idle(
                    chain,
                    current,
                    await value(chain, current),
                    correlation,
                    await self.costs(chain, current),
                    self.paused(current.chain_id),
                )
            after = self.with_valuation(current, await value(chain, current))
            self._wallets.commit(Journal(after, transactions=records, rewards=rewards))
            return claimed

    async def set_reward_staking(
        self, partner_id: int, chain_id: int, address: str, is_staked: bool
    ) -> None:
        """Sets whether claimed rewards are compounded into the position."""
        wallet = self.wallet(chain_id, address, partner_id)
        async with self.exclusive(wallet) as current:
            transition(current.status, "set_reward_staking")
            self._wallets.commit(Journal(replace(current, is_staked=is_staked)))

    # -- rules and operator actions -------------------------------------------------------

    async def update_protocols(
        self, partner_id: int, chain_id: int, address: str, protocols: Sequence[str]
    ) -> None:
        """Replaces the protocols the agent may use; the next run follows them."""
        if not protocols:
            raise InvalidInput.field(
                ("protocols",), "List should have at least 1 item", "too_short"
            )
        wallet = self.wallet(chain_id, address, partner_id)
        self._catalog.check_protocols(self.token_info(wallet), protocols)
        transition(wallet.status, "update_protocols")
        async with self.exclusive(wallet) as current:
            status = transition(current.status, "update_protocols")
            updated = replace(
                current, selected_protocols=tuple(dict.fromkeys(protocols)), status=status
            )
            self._wallets.commit(Journal(updated), expected=current.status)

    async def operate(self, chain_id: int, address: str, action: str) -> Wallet:
        """An operator action: block, unblock, emergency or resume.

        Emergency withdraws every position into the smart account and keeps it idle.
        """
        wallet = self.wallet(chain_id, address)
        chain = self.chain(chain_id)
        async with self.exclusive(wallet) as current:
            status = transition(current.status, action)
            records: list[TransactionRecord] = []
            updated = replace(current, status=status)
            if action == "emergency":
                valuation = await value(chain, current)
                holdings = [
                    Holding(p, v, 0.0, valuation.quotes[p].cash)
                    for p, v in valuation.positions.items()
                ]
                out = withdrawable(holdings)
                records = await self._take_out(
                    chain, current, valuation.idle + out, valuation, str(uuid.uuid4())
                )
                updated = self.with_valuation(updated, await value(chain, current))
            self._wallets.commit(Journal(updated, transactions=records), expected=current.status)
            return updated

    # -- periodic valuation ------------------------------------------------------------

    async def refresh(self, chain_id: int) -> int:
        """Values every idle wallet of a chain and records a performance point when the
        last valuation is an hour old; wallets busy with another operation are skipped.
        Returns how many wallets were refreshed."""
        chain = self.chain(chain_id)
        refreshed = 0
        for wallet in self._wallets.wallets(chain_id):
            if wallet.status not in VALUED_STATES:
                continue
            owner = f"{self._owner}:refresh"
            if not self._wallets.acquire_lease(
                wallet.id, owner, time.time() + self._policy.lease_seconds, time.time()
            ):
                continue
            try:
                current = self.wallet(chain_id, wallet.address)
                valuation = await value(chain, current)
                if (valuation.moment - current.valued_at).total_seconds() < SNAPSHOT_SECONDS:
                    continue
                self._wallets.commit(
                    Journal(
                        self.with_valuation(current, valuation),
                        points=[PerformancePoint(valuation.moment, valuation.total)],
                    ),
                    expected=current.status,
                )
                refreshed += 1
            finally:
                self._wallets.release_lease(wallet.id, owner)
        return refreshed
