"""Money in: activation (and reactivation) and top-ups.

**Activation** checks the request against the catalog, the smart account and the chain
(reads only: what the account received, whether the rules can be met, whether the chain
can act through the account) before storing anything. It then stores the wallet,
``activating``, with its operation's intent and its lease, books every deposit the chain
shows (from any sender, each once), deploys the account if it is not on chain yet, places
the funds as the optimizer plans, and ends ``activated``. A placement the chain refuses midway
leaves the rest idle, for the agent's next run; the activation still succeeds.

With ``ActivationPlacement.BACKGROUND`` the call stops once the deposits are booked: it
answers the wallet ``activating``, its operation open and its lease given back, and the
worker finishes such activations many at once (``Lifecycle.finish_activations``: the
account deployed, the wallet ``activated``, due for the agent, which places the funds).

**Top-up** books a deposit at once, found by its transaction (and any other inflow the
chain shows), then places the idle funds. A deposit already booked (the worker finds
unannounced ones) is not booked again: the call still places what is idle.

Deposits nobody announces are booked by the worker (``Lifecycle.refresh``), from the
chain's history.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from fractions import Fraction

from yieldagent.domain.books.books import Books
from yieldagent.domain.books.ledger import book, hold_back
from yieldagent.domain.books.operations import (
    Operation,
    OperationKind,
    OperationStatus,
    Step,
    outcome,
    scoped,
)
from yieldagent.domain.books.reconciliation import Settled
from yieldagent.domain.books.valuation import Valuation, moment_of, value
from yieldagent.domain.books.wallet_states import WalletAction, WalletStatus, transition
from yieldagent.domain.books.wallets import Journal, Wallet
from yieldagent.domain.catalog import TokenInfo
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.errors import (
    AccessDenied,
    ChainRejected,
    ChainUnavailable,
    Conflict,
    InvalidRequest,
    NotFound,
)
from yieldagent.domain.market.curves import Candidate
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.optimizer.placement import moving_costs, placement
from yieldagent.domain.optimizer.search import allocate
from yieldagent.domain.ports.accounts import SmartAccount
from yieldagent.domain.ports.chain import BatchDeploys, Transfer
from yieldagent.domain.risk.survey import RiskSurvey, risk_view

DEPOSIT_TOO_LARGE = "Access denied or deposit too large"

UNCONFIRMED_RETRY_SECONDS = 5
"""When to retry announcing a deposit that still waits for its confirmations."""


def deposit_limit(token: TokenInfo, max_usd: float) -> int:
    """The largest deposit of ``token`` accepted, in its smallest unit: ``max_usd`` at the
    token's catalog price, rounded down (computed exactly, from the numbers as written).
    The limit applies to each deposit: a wallet may grow past it by several, and by
    yield."""
    if token.price_usd <= 0:
        raise ValueError(f"{token.symbol} has no positive price")
    scale: int = 10**token.decimals
    return math.floor(Fraction(str(max_usd)) * scale / Fraction(str(token.price_usd)))


class ActivationPlacement(StrEnum):
    """Where an activation's funds are placed (``YIELDAGENT_ACTIVATION_PLACEMENT``)."""

    INLINE = "inline"
    """Within the partner's call: it answers once the funds are placed."""
    BACKGROUND = "background"
    """By the worker: the call answers the wallet ``activating`` once its deposits are
    booked."""


@dataclass(frozen=True, slots=True)
class ActivationRequest:
    """A checked activation request."""

    wallet: str
    eoa: str
    token: str
    protocols: tuple[str, ...]
    tx_hash: str | None
    constraints: Constraints


class Deposits:
    """Activation, reactivation and top-up."""

    def __init__(
        self,
        books: Books,
        settled: Settled,
        paused: Callable[[int], frozenset[str]],
        risk: RiskSurvey | None = None,
        placement: ActivationPlacement = ActivationPlacement.INLINE,
    ) -> None:
        self._books = books
        self._settled = settled
        self._paused = paused
        self._risk = risk
        self.placement = placement

    # -- activation ---------------------------------------------------------------------

    async def activate(
        self, partner_id: int, chain_id: int, request: ActivationRequest, key: str | None = None
    ) -> Wallet:
        """Activates (or reactivates) the agent of a funded smart account."""
        books = self._books
        chain = books.chain(chain_id)
        token = self._token(chain_id, request.token)
        books.catalog.check_protocols(token, [*request.protocols, *request.constraints.protocols()])
        account = books.wallets.smart_account(chain_id, request.wallet)
        if account is None or account.eoa != request.eoa:
            raise InvalidRequest(
                f"{request.wallet} is not a smart account created for {request.eoa}"
            )
        if account.partner_id != partner_id:
            raise AccessDenied("Access denied: the smart account belongs to another partner")
        queued = self._queued(scoped(partner_id, OperationKind.ACTIVATE, key))
        if queued is not None:
            return queued
        done = await self._settled(scoped(partner_id, OperationKind.ACTIVATE, key))
        if done is not None:
            outcome(done)
            return books.wallet(chain_id, request.wallet)
        existing = books.wallets.get(chain_id, request.wallet)
        if existing is not None:
            transition(existing.owned_by(partner_id).status, "activate")
        if request.tx_hash is not None:
            await self._check_announced(chain, request.wallet, token, request.tx_hash)
        if existing is None:
            return await self._first_activation(partner_id, chain, request, token, key)
        async with books.leases.hold(existing.id) as owner:
            current = books.reread(existing)
            transition(current.status, WalletAction.ACTIVATE)
            await self._check_funds(chain, current, token, request)
            head = await chain.head()
            operation = books.begin(
                current,
                OperationKind.ACTIVATE,
                head.number,
                owner,
                {"reactivation": True},
                scoped(partner_id, OperationKind.ACTIVATE, key),
            )
            activating = replace(
                current,
                status=WalletStatus.ACTIVATING,
                token=request.token,
                selected_protocols=request.protocols,
                constraints=request.constraints,
                last_reactivation_date=moment_of(head.timestamp),
                status_reason="",
            )
            activating = await books.close(chain, activating, owner, operation)
            if self.placement == ActivationPlacement.BACKGROUND:
                return activating
            return await self._place_and_activate(chain, activating, operation, owner)

    async def _first_activation(
        self,
        partner_id: int,
        chain: MarketChain,
        request: ActivationRequest,
        token: TokenInfo,
        key: str | None,
    ) -> Wallet:
        books = self._books
        head = await chain.head()
        wallet = Wallet(
            id=0,
            chain_id=chain.chain_id,
            address=request.wallet,
            eoa=request.eoa,
            partner_id=partner_id,
            status=WalletStatus.ACTIVATING,
            token=request.token,
            selected_protocols=request.protocols,
            constraints=request.constraints,
            principal=0,
            positions={},
            idle=0,
            current_apr=0.0,
            valued_at=moment_of(head.timestamp),
            is_staked=False,
            activation_date=moment_of(head.timestamp),
            last_deactivation_date=None,
            last_reactivation_date=None,
        )
        await self._check_funds(chain, wallet, token, request)
        owner = books.leases.owner()
        operation = books.begin(
            wallet,
            OperationKind.ACTIVATE,
            head.number,
            owner,
            {},
            scoped(partner_id, OperationKind.ACTIVATE, key),
        )
        created = books.commits.create(
            Journal(wallet, operation=operation, owner=owner),
            books.clock.time() + books.leases.seconds,
        )
        operation = replace(operation, wallet_id=created.id)
        try:
            async with books.leases.hold(created.id, owner):
                created = await books.close(chain, books.reread(created), owner, operation)
                if self.placement == ActivationPlacement.BACKGROUND:
                    return created
                return await self._place_and_activate(chain, created, operation, owner)
        finally:
            books.leases.release(created.id, owner)

    def _queued(self, key: str | None) -> Wallet | None:
        """In background placement, a retry of an activation the worker has not finished
        yet: the wallet as it stands (``activating``), when no live call or job holds it;
        None otherwise (the retry then waits for its holder, as inline)."""
        books = self._books
        if self.placement != ActivationPlacement.BACKGROUND or key is None:
            return None
        operation = books.operations.by_key(key)
        if operation is None or not operation.open or operation.kind != OperationKind.ACTIVATE:
            return None
        wallet = books.wallets.get_by_id(operation.wallet_id)
        owner = books.leases.owner("retry")
        if wallet is None or not books.leases.try_acquire(wallet.id, owner):
            return None
        books.leases.release(wallet.id, owner)
        return books.reread(wallet)

    async def _check_announced(
        self, chain: MarketChain, address: str, token: TokenInfo, tx_hash: str
    ) -> None:
        """An activation's announced deposit: mined to the account, and not booked before
        (Conflict)."""
        await _announced(chain, address, token, tx_hash)
        if self._books.wallets.deposit_known(chain.chain_id, tx_hash):
            raise Conflict(f"Deposit {tx_hash} was already credited")

    async def _check_funds(
        self, chain: MarketChain, wallet: Wallet, token: TokenInfo, request: ActivationRequest
    ) -> None:
        """Reads what the account holds and what it received that is not booked yet;
        refuses, before anything is stored, an account the chain cannot act through, an
        account without funds, a deposit above the limit, or rules the funds cannot meet."""
        books = self._books
        account = books.wallets.smart_account(chain.chain_id, wallet.address)
        head = await chain.head()
        # Reads only, all at the head the chain keeps: together, in one round trip where
        # the chain batches; a refusal of the account still comes first.
        checked, events, valuation = await asyncio.gather(
            _checked(chain, account),
            chain.history(wallet.address, wallet.synced_block),
            value(chain, wallet),
            return_exceptions=True,
        )
        for got in (checked, events, valuation):
            if isinstance(got, BaseException):
                raise got
        assert isinstance(events, list) and isinstance(valuation, Valuation)
        events, pending = hold_back(events, wallet, head.final_number, set())
        known = books.wallets.booked(wallet.id, wallet.synced_block) if wallet.id else set()
        booking = book(wallet, token, events, known, {}, valuation.total - pending)
        added = sum(d.amount for d in booking.deposits)
        if valuation.total == 0:
            raise InvalidRequest(f"No deposit of {token.symbol} found in the smart account")
        self.check_size(token, added)
        quotes = await chain.quotes(token.address, request.protocols)
        allocate(valuation.total, [Candidate(q.protocol, q) for q in quotes], request.constraints)

    def check_size(self, token: TokenInfo, amount: int) -> None:
        """AccessDenied for a deposit worth more than the policy accepts."""
        if amount > deposit_limit(token, self._books.policy.max_deposit_usd):
            raise AccessDenied(DEPOSIT_TOO_LARGE)

    def _token(self, chain_id: int, address: str) -> TokenInfo:
        try:
            return self._books.catalog.token(chain_id, address)
        except NotFound as missing:
            raise InvalidRequest(missing.detail) from None

    async def _place_and_activate(
        self, chain: MarketChain, wallet: Wallet, operation: Operation, owner: str
    ) -> Wallet:
        operation, reason = await self.place(chain, wallet, operation)
        return await self._activated(chain, wallet, operation, owner, reason)

    async def _activated(
        self, chain: MarketChain, wallet: Wallet, operation: Operation, owner: str, reason: str
    ) -> Wallet:
        activated = replace(
            wallet, status=transition(wallet.status, WalletAction.ACTIVATION_PLACED)
        )
        closed = operation.closed(OperationStatus.COMPLETED, reason, {"wallet": wallet.address})
        return await self._books.close(chain, activated, owner, closed)

    async def resume_activation(
        self, chain: MarketChain, wallet: Wallet, operation: Operation, owner: str
    ) -> Operation:
        """After a crash, or for background placement: the account is deployed if its
        deployment never landed (a deployment that did shows as code at its address),
        then the wallet is activated; what is idle waits for the agent."""
        await self._prepare(chain, wallet)
        after = await self._activated(chain, wallet, operation, owner, self._recovered_reason())
        ended = self._books.operations.get(operation.id)
        assert ended is not None and after.status == WalletStatus.ACTIVATED
        return ended

    async def resume_activations(
        self, chain: MarketChain, opened: Sequence[tuple[Wallet, Operation]], owner: str
    ) -> list[Operation | Exception]:
        """``resume_activation`` of many wallets of ``chain`` (leased by ``owner``), as the
        worker finishes background placement: the accounts not on chain deployed together
        (``BatchDeploys``, else each at once), then every wallet whose account is on chain
        booked, valued and committed ``activated`` with its operation, in one transaction.
        For each, its operation as it ended, or why it stays open (its deployment failed,
        or its wallet changed meanwhile): the next pass tries it again."""
        books = self._books
        accounts = {
            wallet.id: account
            for wallet, _ in opened
            if (account := books.wallets.smart_account(chain.chain_id, wallet.address))
        }
        prepared = dict(
            zip(accounts, await _prepare_many(chain, list(accounts.values())), strict=True)
        )
        reason = self._recovered_reason()
        outcomes: list[Operation | Exception] = []
        closing: list[tuple[Wallet, Operation]] = []
        for wallet, operation in opened:
            failure = prepared.get(wallet.id)
            if failure is not None:
                outcomes.append(failure)
                continue
            try:
                status = transition(wallet.status, WalletAction.ACTIVATION_PLACED)
            except Exception as refused:  # not activating: this wallet's alone
                outcomes.append(refused)
                continue
            closed = operation.closed(OperationStatus.COMPLETED, reason, {"wallet": wallet.address})
            outcomes.append(closed)
            closing.append((replace(wallet, status=status), closed))
        committed = iter(await books.close_many(chain, closing, owner))
        ended: list[Operation | Exception] = []
        for end in outcomes:
            if isinstance(end, Operation) and next(committed) is None:
                end = Conflict("The wallet changed meanwhile; the next pass finishes it")
            ended.append(end)
        return ended

    def _recovered_reason(self) -> str:
        """The reason a resumed activation closes with."""
        if self.placement == ActivationPlacement.BACKGROUND:
            return "the agent places the funds"
        return "recovered after a crash; the agent places what is idle"

    # -- placing idle funds -------------------------------------------------------------

    async def place(
        self, chain: MarketChain, wallet: Wallet, operation: Operation
    ) -> tuple[Operation, str]:
        """Places the wallet's idle funds as the optimizer plans, a step at a time. A step
        the chain refuses ends the placement (what is left stays idle for the agent);
        returns the operation and why it stopped short, if it did."""
        books = self._books
        try:
            await self._prepare(chain, wallet)  # with the operation's intent stored
            head = await chain.head()
            valuation = await value(chain, wallet, head=head)
            costs = await moving_costs(chain, books.token_info(wallet))
            risk = await risk_view(
                self._risk,
                wallet.chain_id,
                chain,
                [wallet],
                {wallet.id: valuation},
                head.timestamp,
                books.clock.time(),
            )
            paused = self._paused(wallet.chain_id)
            for move in placement(wallet, valuation, costs, paused, risk):
                quote = valuation.quotes.get(move.protocol)
                step = Step(
                    move.action,
                    wallet.token,
                    move.amount,
                    protocol=move.protocol,
                    apr=quote.apr() if quote else None,
                )
                operation = await books.perform(chain, wallet, operation, step)
        except (ChainUnavailable, ChainRejected) as refused:
            operation = await books.recover_steps(chain, wallet, operation)
            return operation, f"placement stopped: {refused.detail}; the agent places the rest"
        return operation, ""

    async def _prepare(self, chain: MarketChain, wallet: Wallet) -> None:
        """Deploys the wallet's account if it is not on chain yet."""
        account = self._books.wallets.smart_account(chain.chain_id, wallet.address)
        if account is not None:
            await chain.prepare_account(account)

    # -- top-up ---------------------------------------------------------------------------

    async def top_up(
        self, partner_id: int, chain_id: int, address: str, tx_hash: str, key: str | None = None
    ) -> None:
        """Books a further deposit, verified on chain, and places it."""
        books = self._books
        wallet = books.wallet(chain_id, address, partner_id)
        done = await self._settled(scoped(partner_id, OperationKind.TOP_UP, key))
        if done is not None:  # a retry answers what the first call did, whatever came since
            outcome(done)
            return
        transition(wallet.status, WalletAction.TOP_UP)
        chain = books.chain(chain_id)
        token = books.token_info(wallet)
        async with books.leases.hold(wallet.id) as owner:
            current = books.reread(wallet)
            transition(current.status, WalletAction.TOP_UP)
            transfer = await _announced(chain, current.address, token, tx_hash)
            if books.wallets.deposit_known(chain_id, tx_hash):
                if (await value(chain, current)).idle == 0:
                    return  # booked already, and nothing waits to be placed: nothing to do
            else:
                self.check_size(token, transfer.amount)
            head = await chain.head()
            operation = books.begin(
                current,
                OperationKind.TOP_UP,
                head.number,
                owner,
                {"tx_hash": tx_hash},
                scoped(partner_id, OperationKind.TOP_UP, key),
            )
            current = await books.close(chain, current, owner, operation)
            operation, reason = await self.place(chain, current, operation)
            closed = operation.closed(OperationStatus.COMPLETED, reason, {"tx_hash": tx_hash})
            await books.close(chain, current, owner, closed)

    async def resume_top_up(
        self, chain: MarketChain, wallet: Wallet, operation: Operation, owner: str
    ) -> Operation:
        """After a crash: the deposit is booked; what is idle waits for the agent."""
        reason = "recovered after a crash; the agent places what is idle"
        closed = operation.closed(
            OperationStatus.COMPLETED, reason, {"tx_hash": operation.params.get("tx_hash")}
        )
        await self._books.close(chain, wallet, owner, closed)
        return closed


async def _checked(chain: MarketChain, account: SmartAccount | None) -> None:
    """``check_account`` of ``account``, if the wallet has one."""
    if account is not None:
        await chain.check_account(account)


async def _prepare_many(
    chain: MarketChain, accounts: Sequence[SmartAccount]
) -> list[Exception | None]:
    """``prepare_account`` of each of ``accounts``: None for each on chain now, else why
    not; sent together where the chain deploys many at once."""
    if not accounts:
        return []
    if isinstance(chain, BatchDeploys):
        return await chain.prepare_accounts(accounts)
    done = await asyncio.gather(
        *(chain.prepare_account(account) for account in accounts), return_exceptions=True
    )
    failures: list[Exception | None] = []
    for got in done:
        if isinstance(got, BaseException) and not isinstance(got, Exception):
            raise got
        failures.append(got)
    return failures


async def _announced(chain: MarketChain, address: str, token: TokenInfo, tx_hash: str) -> Transfer:
    """The announced deposit: a mined transfer of ``token`` to ``address``, with its
    confirmations; InvalidRequest if it is not one, Conflict (retry later) while it waits
    for confirmations."""
    transfer, head = await asyncio.gather(chain.find_transfer(tx_hash), chain.head())
    if transfer is None:
        raise InvalidRequest(f"Deposit transaction {tx_hash} not found on the chain")
    if transfer.recipient != address or transfer.token != token.address:
        raise InvalidRequest(f"Transaction {tx_hash} is not a {token.symbol} transfer to {address}")
    if transfer.block_number > head.final_number:
        waiting = transfer.block_number - head.final_number
        raise Conflict(
            f"Deposit {tx_hash} waits for {waiting} more confirmation(s); retry",
            retry_after_seconds=UNCONFIRMED_RETRY_SECONDS,
        )
    return transfer
