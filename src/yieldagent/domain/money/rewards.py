"""Reward claims: collect what the protocols owe the wallet, then compound or pay it out.

The claim's intent, with what was accrued (so a crash can still name the tokens), is
stored before the claim. Then each claimed token is either swapped into the wallet's
token, with a ``min_out`` of the quote less the policy's slippage (0.5% by default), and
the proceeds are placed (reward staking on), or sent to the EOA (staking off). Swap
proceeds are yield, never principal. A crash is finished by reconciliation, which swaps
or sends whatever was claimed and not yet handled.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal

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
from yieldagent.domain.books.valuation import moment_of
from yieldagent.domain.books.wallet_states import WalletAction, allowed
from yieldagent.domain.books.wallets import RewardRecord, Wallet
from yieldagent.domain.errors import ChainUnavailable, Conflict, InvalidRequest, YieldAgentError
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.money.deposits import Deposits
from yieldagent.domain.ports.chain import RewardAmount

BPS = 10_000


@dataclass(frozen=True, slots=True)
class ClaimedReward:
    """A reward token collected by a claim."""

    token: str
    amount: int
    amount_float: float
    price_in_underlying: float


class Rewards:
    """Reward claims."""

    def __init__(
        self,
        books: Books,
        settled: Settled,
        deposits: Deposits,
    ) -> None:
        self._books = books
        self._settled = settled
        self._deposits = deposits

    async def claim_rewards(
        self, partner_id: int, chain_id: int, address: str, key: str | None = None
    ) -> list[ClaimedReward]:
        """Claims accrued reward tokens; staked ones are swapped into the wallet's token
        and supplied, the others are sent to the EOA."""
        books = self._books
        wallet = books.wallet(chain_id, address, partner_id)
        done = await self._settled(scoped(partner_id, OperationKind.CLAIM, key))
        if done is not None:
            return _claimed_of(outcome(done))
        if not allowed(wallet.status, WalletAction.CLAIM_REWARDS):
            raise Conflict("Agent not active")
        chain = books.chain(chain_id)
        async with books.leases.hold(wallet.id) as owner:
            current = books.reread(wallet)
            if not allowed(current.status, WalletAction.CLAIM_REWARDS):
                raise Conflict("Agent not active")
            accrued = await chain.accrued_rewards(current.address)
            if not accrued:
                raise InvalidRequest("No rewards to claim")
            head = await chain.head()
            operation = books.begin(
                current,
                OperationKind.CLAIM,
                head.number,
                owner,
                {"accrued": [_reward_json(r) for r in accrued], "staked": current.is_staked},
                scoped(partner_id, OperationKind.CLAIM, key),
                [Step(StepAction.CLAIM, r.token, r.amount) for r in accrued],
            )
            books.operations.start(operation)
            ended = await self._collect_and_handle(chain, current, operation, owner)
            return _claimed_of(outcome(ended))

    async def _collect_and_handle(
        self, chain: MarketChain, wallet: Wallet, operation: Operation, owner: str
    ) -> Operation:
        """Makes the claim its steps plan (stored before the call), then handles what it
        collected; fails, moving nothing, if the chain refused the claim."""
        books = self._books
        try:
            receipt = await chain.claim_rewards(wallet.address)
        except Exception as error:
            operation = await books.recover_steps(chain, wallet, operation)
            if not any(s.done for s in operation.steps):
                failed = operation.closed(
                    OperationStatus.FAILED,
                    str(error),
                    failure(ChainUnavailable(f"claim failed: {error}")),
                )
                await books.close(chain, wallet, owner, failed)
                return failed
        else:
            claimed = {r.token: r.amount for r in receipt.rewards}
            operation = replace(
                operation,
                steps=tuple(
                    s.mined(receipt.receipt, amount=claimed.get(s.token, 0))
                    if s.action == StepAction.CLAIM
                    else s
                    for s in operation.steps
                ),
            )
            books.operations.save(operation)
        return await self._handle(chain, wallet, operation, owner)

    async def resume(
        self, chain: MarketChain, wallet: Wallet, operation: Operation, owner: str
    ) -> Operation:
        """After a crash: claims, if the claim never reached the chain, then swaps or sends
        what was claimed and not handled yet."""
        claims = [s for s in operation.steps if s.action == StepAction.CLAIM]
        if claims and all(s.abandoned for s in claims):
            replanned = replace(  # planned again, and stored, before the chain call
                operation,
                steps=tuple(
                    replace(s, abandoned=False) if s in claims else s for s in operation.steps
                ),
            )
            self._books.operations.save(replanned)
            return await self._collect_and_handle(chain, wallet, replanned, owner)
        return await self._handle(chain, wallet, operation, owner)

    async def _handle(
        self, chain: MarketChain, wallet: Wallet, operation: Operation, owner: str
    ) -> Operation:
        books = self._books
        staked = bool(operation.params.get("staked"))
        accrued = {r["token"]: r for r in operation.params.get("accrued", [])}
        claims = [
            s for s in operation.steps if s.action == StepAction.CLAIM and s.done and s.amount
        ]
        handled = {
            s.token
            for s in operation.steps
            if s.action in (StepAction.SWAP, StepAction.SEND) and s.done
        }
        reason = ""
        try:
            for claim in claims:
                if claim.token in handled:
                    continue
                operation = await books.perform(
                    chain, wallet, operation, await self._step(chain, wallet, claim, staked)
                )
            if staked:
                operation, reason = await self._deposits.place(chain, wallet, operation)
        except YieldAgentError as refused:
            operation = await books.recover_steps(chain, wallet, operation)
            reason = refused.detail
        token = books.token_info(wallet)
        result = {
            "rewards": [
                {
                    "token": c.token,
                    "amount": str(c.amount),
                    "decimals": accrued[c.token]["decimals"],
                    "price_usd": accrued[c.token]["price_usd"],
                    "underlying_price_usd": token.price_usd,
                }
                for c in claims
                if c.token in accrued
            ]
        }
        records = [
            RewardRecord(
                c.token,
                accrued[c.token]["symbol"],
                c.amount,
                accrued[c.token]["decimals"],
                float(Decimal(c.amount) / 10 ** accrued[c.token]["decimals"])
                * accrued[c.token]["price_usd"],
                c.tx_hash or "",
                staked,
                moment_of(c.timestamp or 0),
            )
            for c in claims
            if c.token in accrued
        ]
        closed = operation.closed(OperationStatus.COMPLETED, reason, result)
        await books.close(chain, wallet, owner, closed, rewards=records)
        return closed

    async def _step(self, chain: MarketChain, wallet: Wallet, claim: Step, staked: bool) -> Step:
        if not staked:
            return Step(StepAction.SEND, claim.token, claim.amount, recipient=wallet.eoa)
        quote = await chain.quote_swap(claim.token, wallet.token, claim.amount)
        min_out = quote * (BPS - self._books.policy.swap_slippage_bps) // BPS
        return Step(
            StepAction.SWAP, claim.token, claim.amount, token_out=wallet.token, min_out=min_out
        )


def _reward_json(reward: RewardAmount) -> dict[str, object]:
    return {
        "token": reward.token,
        "symbol": reward.symbol,
        "amount": str(reward.amount),
        "decimals": reward.decimals,
        "price_usd": reward.price_usd,
    }


def _claimed_of(result: object) -> list[ClaimedReward]:
    assert isinstance(result, dict)
    claimed = []
    for r in result.get("rewards", []):
        amount = int(r["amount"])
        claimed.append(
            ClaimedReward(
                r["token"],
                amount,
                float(Decimal(amount) / 10 ** r["decimals"]),
                r["price_usd"] / r["underlying_price_usd"],
            )
        )
    return claimed
