"""Money out: partial withdrawals, deactivation, and the operator's emergency exit.

**Withdrawal.** Under the wallet's lease, the books are brought up to date first (a
deposit nobody announced is principal, not yield). The split (principal, yield, fee) is
decided then and stored with the intent, before any chain call. Funds come from idle
first, then from protocols from the lowest APR up, each within its pool's cash; the user
is paid ``amount − fee`` and the fee goes to the fee collector, in one call (an account's
operator module pays a fee only with a payment to the owner). If the chain refuses
before the user is paid, nothing was withdrawn: the operation fails and the partner gets
a 503 (funds already taken out of protocols stay idle for the agent). Once the user is
paid, the withdrawal stands; a fee transfer still owed is retried by reconciliation.

**Minimum.** A partial withdrawal worth less than the policy's minimum in USD is refused
before anything is stored: each one is a payout the operator pays gas for. Deactivation
takes out any balance, however small.

**Deactivation.** The wallet turns ``deactivating`` with the intent (and its ``transfer``
flag) in one commit. Each attempt takes what each pool can give, goes on to the next, and
with ``transfer`` pays out what is idle (split and fee as for a withdrawal). When nothing
is left in any protocol the wallet is ``deactivated``; otherwise it stays
``deactivating`` with the reason visible, and reconciliation tries again later.

**Emergency.** Takes what each pool can give into the account and keeps it idle; a pool
short of cash is left partially.

A crash anywhere is finished by ``reconciliation`` through the same code: the stored split
is paid, owed fees are sent, deactivations drained.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from fractions import Fraction

from yieldagent.domain.books.accounting import (
    Source,
    WithdrawalSplit,
    plan_withdrawal,
    split_withdrawal,
)
from yieldagent.domain.books.books import Books
from yieldagent.domain.books.operations import (
    Operation,
    OperationKind,
    OperationStatus,
    Step,
    StepAction,
    failure,
    outcome,
    scoped,
)
from yieldagent.domain.books.reconciliation import Settled
from yieldagent.domain.books.valuation import Valuation, moment_of, value
from yieldagent.domain.books.wallet_states import WalletAction, WalletStatus, transition
from yieldagent.domain.books.wallets import Wallet, WithdrawalRecord
from yieldagent.domain.catalog import TokenInfo
from yieldagent.domain.errors import (
    ChainRejected,
    ChainUnavailable,
    InvalidInput,
    InvalidRequest,
    YieldAgentError,
)
from yieldagent.domain.market.ports import MarketChain


def _sources(valuation: Valuation, idle: bool = True) -> list[Source]:
    """Where the wallet's funds sit, each with what its pool can give now."""
    return valuation.sources(idle)


def smallest_withdrawal(token: TokenInfo, minimum_usd: Decimal) -> int:
    """The fewest smallest units of ``token`` worth ``minimum_usd`` at its catalog price,
    rounded up, in exact arithmetic (the price as the catalog writes it, never a float's
    binary error). 0 for a token without a positive price: no USD value to hold it to."""
    price = Fraction(Decimal(repr(token.price_usd)))
    minimum = Fraction(minimum_usd)
    if price <= 0 or minimum <= 0:
        return 0
    # minimum × 10^decimals ÷ price, rounded up, in integers.
    units: int = minimum.numerator * 10**token.decimals * price.denominator
    per: int = minimum.denominator * price.numerator
    return -(-units // per)


def check_minimum(amount: int, token: TokenInfo, minimum_usd: Decimal) -> None:
    """InvalidRequest, naming the minimum, for a withdrawal of ``amount`` worth less than
    ``minimum_usd``."""
    least = smallest_withdrawal(token, minimum_usd)
    if amount < least:
        raise InvalidRequest(
            f"Amount {amount} is below the minimum withdrawal of {minimum_usd} USD "
            f"({least} in {token.symbol}'s smallest unit); a smaller balance leaves "
            "with the wallet's deactivation"
        )


class Withdrawals:
    """Withdrawals, deactivation and emergency exits."""

    def __init__(self, books: Books, settled: Settled) -> None:
        self._books = books
        self._settled = settled

    # -- withdrawal -----------------------------------------------------------------------

    async def withdraw(
        self, partner_id: int, chain_id: int, address: str, amount: int, key: str | None = None
    ) -> WithdrawalRecord:
        """Withdraws ``amount`` to the EOA; the agent stays active."""
        if amount <= 0:
            raise InvalidInput.field(("amount",), "Input should be greater than 0", "greater_than")
        books = self._books
        wallet = books.wallet(chain_id, address, partner_id)
        done = await self._settled(scoped(partner_id, OperationKind.WITHDRAW, key))
        if done is not None:
            return WithdrawalRecord.from_json(outcome(done))
        transition(wallet.status, WalletAction.WITHDRAW)
        check_minimum(amount, books.token_info(wallet), books.policy.min_withdraw_usd)
        chain = books.chain(chain_id)
        async with books.leases.hold(wallet.id) as owner:
            current = books.reread(wallet)
            transition(current.status, WalletAction.WITHDRAW)
            head = await chain.head()
            plan_withdrawal(amount, _sources(await value(chain, current)))  # or refuses
            current = await books.close(chain, current, owner)  # book what is new first
            valuation = await value(chain, current)
            split = split_withdrawal(
                amount, valuation.total, current.principal, books.policy.fee_bps
            )
            operation = books.begin(
                current,
                OperationKind.WITHDRAW,
                head.number,
                owner,
                {"amount": str(amount), "split": split.as_json()},
                scoped(partner_id, OperationKind.WITHDRAW, key),
            )
            books.operations.start(operation)
            ended, paid = await self._pay(chain, current, operation, owner)
            outcome(ended)  # raises what a failed withdrawal failed with
            assert paid is not None  # an operation that did not fail paid the user
            return paid

    async def _pay(
        self, chain: MarketChain, wallet: Wallet, operation: Operation, owner: str
    ) -> tuple[Operation, WithdrawalRecord | None]:
        """Pays the user the stored split (taking from protocols what idle funds lack),
        then the fee; closes the operation as it ended. Returns it, with what the user was
        paid (None: the withdrawal failed before)."""
        books = self._books
        split = WithdrawalSplit.from_json(operation.params["split"])
        try:
            if not operation.payouts():
                valuation = await value(chain, wallet)
                lacking = split.amount - valuation.idle
                if lacking > 0:
                    for protocol, part in plan_withdrawal(lacking, _sources(valuation, False)):
                        assert protocol is not None
                        operation = await books.perform(
                            chain, wallet, operation, self._take(wallet, protocol, part, valuation)
                        )
                operation = await self._pay_out(chain, wallet, operation, split)
            operation = await self._send_fees(chain, wallet, operation)
        except YieldAgentError as refused:
            operation = await books.recover_steps(chain, wallet, operation)
            if not operation.payouts():
                failed = operation.closed(OperationStatus.FAILED, refused.detail, failure(refused))
                await books.close(chain, wallet, owner, failed)
                return failed, None
            paid = self._paid(wallet, operation)
            retry = operation.closed(
                OperationStatus.WAITING, f"fee transfer owed: {refused.detail}"
            )
            retry = replace(retry, result=paid.as_json(), retry_at=self._later())
            await books.close(chain, wallet, owner, retry)
            return retry, paid
        paid = self._paid(wallet, operation)
        closed = operation.closed(OperationStatus.COMPLETED, "", paid.as_json())
        await books.close(chain, wallet, owner, closed)
        return closed, paid

    async def resume_withdrawal(
        self, chain: MarketChain, wallet: Wallet, operation: Operation, owner: str
    ) -> Operation:
        """After a crash or a due retry: pays what the stored split still owes."""
        ended, _ = await self._pay(chain, wallet, operation, owner)
        return ended

    def _paid(self, wallet: Wallet, operation: Operation) -> WithdrawalRecord:
        """The withdrawal the operation's (first) payout made: what its call answers."""
        payout = operation.payouts()[0]
        assert payout.split is not None and payout.timestamp is not None
        return WithdrawalRecord.priced(
            wallet.token,
            payout.split,
            self._books.token_info(wallet),
            payout.tx_hash,
            payout.block_number,
            moment_of(payout.timestamp),
        )

    @staticmethod
    def _take(wallet: Wallet, protocol: str, amount: int, valuation: Valuation) -> Step:
        quote = valuation.quotes.get(protocol)
        return Step(
            StepAction.WITHDRAW,
            wallet.token,
            amount,
            protocol=protocol,
            apr=quote.apr() if quote else None,
        )

    @staticmethod
    def _payout(wallet: Wallet, split: WithdrawalSplit) -> Step:
        return Step(
            StepAction.PAYOUT, wallet.token, split.to_user, recipient=wallet.eoa, split=split
        )

    async def _pay_out(
        self, chain: MarketChain, wallet: Wallet, operation: Operation, split: WithdrawalSplit
    ) -> Operation:
        """Pays the user ``split``'s part and, in the same call, every fee the operation's
        payouts owe by then (this one's included)."""
        owed = split.fee + sum(p.split.fee for p in operation.payouts() if p.split is not None)
        sent = sum(s.amount for s in operation.steps if s.action == StepAction.FEE and s.done)
        collector = self._books.policy.fee_collector
        fee = (
            Step(StepAction.FEE, wallet.token, owed - sent, recipient=collector)
            if owed > sent
            else None
        )
        return await self._books.perform_payout(
            chain, wallet, operation, self._payout(wallet, split), fee
        )

    async def _send_fees(
        self, chain: MarketChain, wallet: Wallet, operation: Operation
    ) -> Operation:
        """Sends the fee collector what the operation's payouts owe it."""
        owed = sum(p.split.fee for p in operation.payouts() if p.split is not None)
        sent = sum(s.amount for s in operation.steps if s.action == StepAction.FEE and s.done)
        if owed > sent:
            collector = self._books.policy.fee_collector
            fee = Step(StepAction.FEE, wallet.token, owed - sent, recipient=collector)
            operation = await self._books.perform(chain, wallet, operation, fee)
        return operation

    def _later(self) -> float:
        return self._books.clock.time() + self._books.policy.retry_seconds

    # -- deactivation ---------------------------------------------------------------------

    async def deactivate(
        self, partner_id: int, chain_id: int, address: str, transfer: bool, key: str | None = None
    ) -> WithdrawalRecord | None:
        """Stops the agent and withdraws everything: to the EOA, or left idle in the smart
        account when ``transfer`` is false (no fee is taken then: nothing left). Returns the
        payout, if this attempt made one."""
        books = self._books
        wallet = books.wallet(chain_id, address, partner_id)
        done = await self._settled(scoped(partner_id, OperationKind.DEACTIVATE, key))
        if done is not None:
            return self._payout_of(done)
        transition(wallet.status, WalletAction.DEACTIVATE)
        chain = books.chain(chain_id)
        async with books.leases.hold(wallet.id) as owner:
            current = books.reread(wallet)
            deactivating = replace(
                current, status=transition(current.status, WalletAction.DEACTIVATE)
            )
            head = await chain.head()
            operation = books.begin(
                current,
                OperationKind.DEACTIVATE,
                head.number,
                owner,
                {"transfer": transfer},
                scoped(partner_id, OperationKind.DEACTIVATE, key),
            )
            deactivating = await books.close(chain, deactivating, owner, operation)
            ended = await self.drain(chain, deactivating, operation, owner)
            return self._paid(deactivating, ended) if ended.payouts() else None

    @staticmethod
    def _payout_of(operation: Operation) -> WithdrawalRecord | None:
        """The payout a settled deactivation answered, as it stored it."""
        result = operation.result or {}
        return WithdrawalRecord.from_json(result) if "split" in result else None

    async def drain(
        self, chain: MarketChain, wallet: Wallet, operation: Operation, owner: str
    ) -> Operation:
        """One attempt at a deactivation: owed fees first, then what each pool can give,
        then (with ``transfer``) a payout of what is idle. Deactivated when nothing is left
        in any protocol; otherwise waiting, with the reason on the wallet."""
        books = self._books
        problems: list[str] = []
        try:
            operation = await self._send_fees(chain, wallet, operation)
        except YieldAgentError as refused:
            problems.append(refused.detail)
        operation = await self._take_all(chain, wallet, operation, problems)
        if operation.params.get("transfer", True) and not problems:
            valuation = await value(chain, wallet)
            if valuation.idle > 0:
                split = split_withdrawal(
                    valuation.idle, valuation.total, wallet.principal, books.policy.fee_bps
                )
                try:
                    operation = await self._pay_out(chain, wallet, operation, split)
                    operation = await self._send_fees(chain, wallet, operation)
                except YieldAgentError as refused:
                    problems.append(refused.detail)
        operation = await books.recover_steps(chain, wallet, operation)
        left = (await value(chain, wallet)).positions
        answer = self._paid(wallet, operation).as_json() if operation.payouts() else None
        if left or problems:
            stuck = ", ".join(
                f"{amount} in {protocol}" for protocol, amount in sorted(left.items())
            )
            # A pool that refused says why (its withdrawals paused, say); one that paid
            # what it could lacked the cash.
            held = f"still {stuck}" + ("" if problems else ": not enough cash")
            reason = "; ".join([*([held] if stuck else []), *problems])
            waiting = replace(
                operation.closed(OperationStatus.WAITING, reason, answer), retry_at=self._later()
            )
            await books.close(chain, replace(wallet, status_reason=reason), owner, waiting)
            return waiting
        head = await chain.head()
        deactivated = replace(
            wallet,
            status=transition(wallet.status, WalletAction.DEACTIVATION_DONE),
            status_reason="",
            last_deactivation_date=moment_of(head.timestamp),
        )
        closed = operation.closed(OperationStatus.COMPLETED, "", answer)
        await books.close(chain, deactivated, owner, closed)
        return closed

    async def _take_all(
        self, chain: MarketChain, wallet: Wallet, operation: Operation, problems: list[str]
    ) -> Operation:
        """Takes what each pool can give of the wallet's positions into the account."""
        valuation = await value(chain, wallet)
        for source in _sources(valuation, idle=False):
            assert source.protocol is not None
            take = min(source.value, source.withdrawable)
            if take <= 0:
                continue
            step = self._take(wallet, source.protocol, take, valuation)
            step = replace(step, whole=take == source.value)
            try:
                operation = await self._books.perform(chain, wallet, operation, step)
            except (ChainUnavailable, ChainRejected) as refused:
                problems.append(refused.detail)
        return operation

    # -- emergency ------------------------------------------------------------------------

    async def emergency(self, chain: MarketChain, wallet: Wallet, owner: str) -> Wallet:
        """Moves the wallet (held under ``owner``'s lease) to ``emergency`` and takes what
        each pool can give into the account."""
        books = self._books
        head = await chain.head()
        operation = books.begin(wallet, OperationKind.EMERGENCY, head.number, owner)
        emergency = replace(wallet, status=transition(wallet.status, WalletAction.EMERGENCY))
        emergency = await books.close(chain, emergency, owner, operation)
        await self.exit_pools(chain, emergency, operation, owner)
        return books.reread(emergency)

    async def exit_pools(
        self, chain: MarketChain, wallet: Wallet, operation: Operation, owner: str
    ) -> Operation:
        """One attempt at an emergency exit: takes what each pool can give now and leaves it
        idle; what a pool could not give is named in the operation's reason."""
        problems: list[str] = []
        operation = await self._take_all(chain, wallet, operation, problems)
        operation = await self._books.recover_steps(chain, wallet, operation)
        left = (await value(chain, wallet)).positions
        reason = "; ".join(
            [*(f"{a} left in {p}: not enough cash" for p, a in sorted(left.items())), *problems]
        )
        closed = operation.closed(OperationStatus.COMPLETED, reason)
        await self._books.close(chain, wallet, owner, closed)
        return closed


__all__ = ["WalletStatus", "Withdrawals"]
