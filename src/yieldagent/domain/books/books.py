"""The books of every wallet, and the one way money operations touch the chain.

``Books`` is what the money use cases (``deposits``, ``withdrawals``, ``rewards``, the
``agent``) and ``reconciliation`` share:

- ``perform`` carries out one step of an operation: the step is stored as planned, the
  chain call is made, and the step is marked with its transaction. Intent first, then the
  chain, then the record. ``perform_payout`` does so for a payout and its fee together.
- ``recover_steps`` settles the steps a crash or a chain error left pending, from the
  chain's history: mined ones are marked, the others abandoned (they never happened).
- ``close`` books everything the chain shows for the wallet since its sync cursor
  (``ledger.book``: deposits from any sender, withdrawals with the split their operation
  stored, external withdrawals), values the wallet, and commits the wallet, its new
  records and the operation in one transaction, checking the wallet's version and lease.

So the wallet's principal moves only with ledger entries, and ledger entries come only
from chain events.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from yieldagent.domain.books.apr import PerformancePoint
from yieldagent.domain.books.effects import Commits
from yieldagent.domain.books.leases import Leases
from yieldagent.domain.books.ledger import Booking, book, hold_back, key_of
from yieldagent.domain.books.operations import (
    MOVES,
    Operation,
    OperationKind,
    OperationStatus,
    Step,
    StepAction,
    attribute,
    mined_steps,
)
from yieldagent.domain.books.ports import OperationRepository, WalletRepository
from yieldagent.domain.books.valuation import Valuation, value_many
from yieldagent.domain.books.wallets import Journal, RewardRecord, Wallet, require
from yieldagent.domain.catalog import Catalog, TokenInfo
from yieldagent.domain.errors import ChainUnavailable, NotFound, YieldAgentError
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.ports.chain import BatchHistory, BatchWrites, ChainTx, Send, TxReceipt
from yieldagent.domain.ports.clock import Clock


@dataclass(frozen=True, slots=True)
class Policy:
    """The service's money rules and limits."""

    fee_bps: int
    max_deposit_usd: float
    fee_collector: str
    lease_seconds: float = 60.0
    lease_wait_seconds: float = 30.0
    swap_slippage_bps: int = 50
    """How far below its quote a reward swap may fill (0.5%)."""
    retry_seconds: float = 0.0
    """How long an operation waiting on the chain (funds stuck in a pool, a fee transfer
    refused) waits before its next attempt; 0: at the next reconciliation pass."""
    min_withdraw_usd: Decimal = Decimal(0)
    """The smallest partial withdrawal, in USD (exact); 0: none. Deactivation is never held
    to it."""


@dataclass(frozen=True, slots=True)
class Synced:
    """What ``Books.sync_many`` committed."""

    written: int
    refused: frozenset[int]
    """The wallets (by id) that had something to record but changed meanwhile or lost
    their lease: nothing of theirs was committed."""


def valued(wallet: Wallet, valuation: Valuation) -> Wallet:
    """``wallet`` with what ``valuation`` found it holds."""
    return replace(
        wallet,
        idle=valuation.idle,
        positions=dict(valuation.positions),
        current_apr=valuation.apr(),
        valued_at=valuation.moment,
        withdrawable=valuation.withdrawable,
    )


class Books:
    """Wallets, their chains and their operations, and the one path that writes the books."""

    def __init__(
        self,
        wallets: WalletRepository,
        operations: OperationRepository,
        chains: Mapping[int, MarketChain],
        catalog: Catalog,
        policy: Policy,
        clock: Clock,
        leases: Leases | None = None,
    ) -> None:
        self.wallets = wallets
        self.operations = operations
        self.catalog = catalog
        self.policy = policy
        self.clock = clock
        self.leases = leases or Leases(
            wallets, clock, policy.lease_seconds, policy.lease_wait_seconds
        )
        self._chains = chains

    @property
    def commits(self) -> Commits:
        """The one way the books commit a journal: with its events and totals' change."""
        return Commits(self.wallets, self.operations)

    # -- lookups ---------------------------------------------------------------------

    def chain(self, chain_id: int) -> MarketChain:
        """The chain port of ``chain_id``; NotFound when the service does not run there."""
        self.catalog.chain(chain_id)
        return self._chains[chain_id]

    def wallet(self, chain_id: int, address: str, partner_id: int | None = None) -> Wallet:
        """The stored wallet, checked against its owner when ``partner_id`` is given."""
        wallet = require(self.wallets.get(chain_id, address), chain_id, address)
        return wallet if partner_id is None else wallet.owned_by(partner_id)

    def reread(self, wallet: Wallet) -> Wallet:
        """The wallet as stored now (under its lease: its current version)."""
        current = self.wallets.get_by_id(wallet.id)
        if current is None:
            raise NotFound(f"Wallet {wallet.address} not found on chain {wallet.chain_id}")
        return current

    def token_info(self, wallet: Wallet) -> TokenInfo:
        """Catalog facts of the wallet's token."""
        return self.catalog.token(wallet.chain_id, wallet.token)

    # -- operations --------------------------------------------------------------------

    def begin(
        self,
        wallet: Wallet,
        kind: OperationKind,
        start_block: int,
        owner: str,
        params: Mapping[str, Any] | None = None,
        key: str | None = None,
        steps: Sequence[Step] = (),
    ) -> Operation:
        """A new operation's intent (stored by the caller's next commit or ``start``)."""
        return Operation(
            id=str(uuid.uuid4()),
            wallet_id=wallet.id,
            chain_id=wallet.chain_id,
            kind=kind,
            status=OperationStatus.EXECUTING,
            steps=tuple(steps),
            start_block=start_block,
            owner=owner,
            params=dict(params or {}),
            key=key,
        )

    async def perform(
        self, chain: MarketChain, wallet: Wallet, operation: Operation, step: Step
    ) -> Operation:
        """Stores ``step`` as planned, makes its chain call, and marks it mined. A chain
        error leaves the step pending (``recover_steps`` settles it) and is raised as
        ChainUnavailable, unless the adapter already named it as a domain error (a revert
        is ChainRejected, with its reason), which is raised unchanged."""
        index = len(operation.steps)
        operation = operation.with_step(index, step)
        self.operations.save(operation)
        return await self.perform_planned(chain, wallet, operation, index)

    async def perform_planned(
        self, chain: MarketChain, wallet: Wallet, operation: Operation, index: int
    ) -> Operation:
        """Makes the chain call of the stored step ``index`` and marks it mined."""
        [done] = await self.perform_many(chain, [(wallet, operation, index)])
        if isinstance(done, YieldAgentError):
            raise done
        self.operations.save(done)
        return done

    async def perform_payout(
        self,
        chain: MarketChain,
        wallet: Wallet,
        operation: Operation,
        payout: Step,
        fee: Step | None,
    ) -> Operation:
        """Stores ``payout`` (to the owner) and ``fee`` (to the collector) as planned, pays
        both in one call (an account's module pays the fee only with a payment to its owner),
        and marks them mined. Errors as ``perform``."""
        index = len(operation.steps)
        operation = operation.with_step(index, payout)
        if fee is not None:
            operation = operation.with_step(index + 1, fee)
        self.operations.save(operation)
        await self.clock.sleep(0)
        try:
            paid, charged = await chain.pay(
                payout.token,
                wallet.address,
                payout.recipient,
                payout.amount,
                fee.recipient if fee is not None else "",
                fee.amount if fee is not None else 0,
            )
        except YieldAgentError:
            raise
        except Exception as error:
            raise ChainUnavailable(f"payout of {payout.amount} failed: {error}") from error
        operation = operation.with_step(index, payout.mined(paid))
        if fee is not None and charged is not None:
            operation = operation.with_step(index + 1, fee.mined(charged))
        self.operations.save(operation)
        return operation

    async def perform_many(
        self, chain: MarketChain, planned: Sequence[tuple[Wallet, Operation, int]]
    ) -> list[Operation | YieldAgentError]:
        """``perform_planned`` for each (wallet, operation, step index) of ``planned``, on
        one chain, each its own transaction, sent at once to a chain that takes batches
        (``BatchWrites``). Each answers its operation with the step marked mined, or the
        error that refused it (raised by ``perform_planned``). The marks are the caller's
        to store (a batch's caller stores a round's at once: ``save_steps``)."""
        await self.clock.sleep(0)  # a turn for lease keepers: adapters may never suspend
        steps = [operation.steps[index] for _, operation, index in planned]
        if isinstance(chain, BatchWrites) and all(s.action in MOVES for s in steps):
            sent = await chain.send_many(
                [
                    Send(s.action.chain_kind, w.address, s.protocol, s.token, s.amount, s.whole)
                    for (w, _, _), s in zip(planned, steps, strict=True)
                ]
            )
        else:
            sent = []
            for (wallet, _, _), step in zip(planned, steps, strict=True):
                try:
                    sent.append(await self._call(chain, wallet, step))
                except Exception as error:
                    sent.append(error)
        done: list[Operation | YieldAgentError] = []
        for (_, operation, index), step, receipt in zip(planned, steps, sent, strict=True):
            if isinstance(receipt, YieldAgentError):
                done.append(receipt)
            elif isinstance(receipt, Exception):
                unavailable = ChainUnavailable(f"{step.action} of {step.amount} failed: {receipt}")
                unavailable.__cause__ = receipt
                done.append(unavailable)
            else:
                done.append(operation.with_step(index, step.mined(receipt)))
        return done

    async def _call(self, chain: MarketChain, wallet: Wallet, step: Step) -> TxReceipt:
        holder = wallet.address
        if step.action == StepAction.DEPOSIT:
            return await chain.supply(holder, step.protocol, step.token, step.amount)
        if step.action == StepAction.WITHDRAW:
            return await chain.withdraw(
                holder, step.protocol, step.token, step.amount, whole=step.whole
            )
        if step.action == StepAction.SWAP:
            swap = await chain.swap(holder, step.token, step.token_out, step.amount, step.min_out)
            return swap.receipt
        if step.action == StepAction.CLAIM:
            return (await chain.claim_rewards(holder)).receipt
        return await chain.transfer(step.token, holder, step.recipient, step.amount)

    async def recover_steps(
        self, chain: MarketChain, wallet: Wallet, operation: Operation
    ) -> Operation:
        """Settles the operation's pending steps from the chain's history since it began:
        those the chain mined are marked, the others abandoned."""
        [settled] = await self.recover_many(chain, [(wallet, operation)])
        return settled

    async def recover_many(
        self, chain: MarketChain, runs: Sequence[tuple[Wallet, Operation]]
    ) -> list[Operation]:
        """``recover_steps`` of each (wallet, operation) of ``runs``, all on ``chain``: their
        histories read at once where the chain reads holders in bulk, so that a batch whose
        rounds the chain refused settles in one read rather than one per run."""
        pending = [(w, op) for w, op in runs if any(step.pending for step in op.steps)]
        if not pending:
            return [operation for _, operation in runs]
        events = await _histories_since(chain, [(w.address, op.start_block) for w, op in pending])
        since: dict[int, int] = {}
        for wallet, operation in pending:
            since[wallet.id] = min(
                since.get(wallet.id, operation.start_block), operation.start_block
            )
        known = self.wallets.booked_many(since)
        settled: dict[str, Operation] = {}
        for (wallet, operation), history in zip(pending, events, strict=True):
            fresh = [e for e in history if key_of(e) not in known[wallet.id]]
            found = attribute(operation, fresh, wallet.address)
            steps = tuple(replace(s, abandoned=True) if s.pending else s for s in found.steps)
            settled[operation.id] = replace(found, steps=steps)
            self.operations.save(settled[operation.id])
        return [settled.get(operation.id, operation) for _, operation in runs]

    # -- the books -----------------------------------------------------------------------

    async def close(
        self,
        chain: MarketChain,
        wallet: Wallet,
        owner: str | None,
        operation: Operation | None = None,
        rewards: Sequence[RewardRecord] = (),
    ) -> Wallet:
        """Books what the chain shows for the wallet since its cursor, values it, and
        commits ``wallet`` (as the caller changed it) with its new records and
        ``operation`` (as the caller moved it on). Returns the wallet as committed."""
        [(after, journal)] = await self._booked(chain, [(wallet, operation)], owner, rewards)
        self.commits.commit(journal)
        return after

    async def close_many(
        self, chain: MarketChain, closing: Sequence[tuple[Wallet, Operation]], owner: str
    ) -> list[Wallet | None]:
        """``close`` of many wallets of ``chain``, each with its operation: read at one
        head and committed in one transaction. A wallet that changed meanwhile (or whose
        lease ``owner`` lost) is not committed and answers None; its operation stays
        open for reconciliation."""
        if not closing:
            return []
        booked = await self._booked(chain, closing, owner, ())
        stored = self.commits.commit_many([journal for _, journal in booked])
        return [after if ok else None for (after, _), ok in zip(booked, stored, strict=True)]

    async def sync(
        self, chain: MarketChain, wallet: Wallet, owner: str, snapshot_seconds: float
    ) -> bool:
        """Books what is new on the chain for an idle wallet (a deposit nobody announced,
        an external withdrawal) and, every ``snapshot_seconds`` of chain time, records its
        value; commits only when either happened. Returns whether it committed."""
        [(after, journal)] = await self._booked(chain, [(wallet, None)], owner, ())
        due = (after.valued_at - wallet.valued_at).total_seconds() >= snapshot_seconds
        if not journal.points and due:
            journal.points = [
                PerformancePoint(after.valued_at, after.idle + sum(after.positions.values()))
            ]
        if not (journal.deposits or journal.withdrawals or journal.transactions or due):
            return False
        self.commits.commit(journal)
        return True

    async def sync_many(
        self,
        chain: MarketChain,
        wallets: Sequence[Wallet],
        owner: str,
        snapshot_seconds: float,
        quiet_through: int | None = None,
    ) -> Synced:
        """``sync`` of many idle wallets of ``chain``, all leased by ``owner``: booked and
        valued at one head (their histories and holdings read at once where the chain reads
        in bulk), the ones with something to record committed in one transaction. Returns
        how many it committed, and which it could not (changed meanwhile, or their lease
        lost).

        With ``quiet_through`` the caller knows that none of the wallets sent or received
        anything unbooked up to that block (a fleet-wide watch of the chain's logs said
        so): their histories are not read, and their sync cursors move up to it."""
        if not wallets:
            return Synced(0, frozenset())
        booked = await self._booked(chain, [(w, None) for w in wallets], owner, (), quiet_through)
        journals = []
        for wallet, (after, journal) in zip(wallets, booked, strict=True):
            due = (after.valued_at - wallet.valued_at).total_seconds() >= snapshot_seconds
            if not journal.points and due:
                journal.points = [
                    PerformancePoint(after.valued_at, after.idle + sum(after.positions.values()))
                ]
            if journal.deposits or journal.withdrawals or journal.transactions or due:
                journals.append(journal)
        if not journals:
            return Synced(0, frozenset())
        stored = self.commits.commit_many(journals)
        refused = frozenset(j.wallet.id for j, ok in zip(journals, stored, strict=True) if not ok)
        return Synced(sum(stored), refused)

    async def _booked(
        self,
        chain: MarketChain,
        closing: Sequence[tuple[Wallet, Operation | None]],
        owner: str | None,
        rewards: Sequence[RewardRecord],
        quiet_through: int | None = None,
    ) -> list[tuple[Wallet, Journal]]:
        """Each wallet of ``closing`` (all on ``chain``) booked and valued at one head, with
        its operation: the wallet as it will be committed, and its journal. With
        ``quiet_through`` (see ``sync_many``) nothing is read of their histories."""
        await self.clock.sleep(0)  # a turn for lease keepers before the reads below
        head = await chain.head()
        wallets = [wallet for wallet, _ in closing]
        open_ops = self.operations.open_on_many([w.id for w in wallets])
        known = self.wallets.booked_many({w.id: w.synced_block for w in wallets})
        if quiet_through is None:
            # Both at the head the chain keeps: read together, one round trip where it batches.
            histories, valuations = await asyncio.gather(
                _histories(chain, wallets), value_many(chain, wallets, head)
            )
            synced = head.final_number
        else:
            histories = {w.id: [] for w in wallets}
            valuations = await value_many(chain, wallets, head)
            synced = min(quiet_through, head.final_number)
        booked = []
        for wallet, operation in closing:
            ours = [op for op in open_ops[wallet.id] if operation is None or op.id != operation.id]
            if operation is not None:
                ours.append(operation)
            steps = {key: (op.id, step) for op in ours for key, step in mined_steps([op]).items()}
            events, pending = hold_back(
                histories[wallet.id], wallet, head.final_number, steps.keys()
            )
            valuation = valuations[wallet.id]
            booking = book(
                wallet,
                self.token_info(wallet),
                events,
                known[wallet.id],
                steps,
                valuation.total - pending,
            )
            after = valued(wallet, valuation)
            after.principal = booking.principal
            after.synced_block = max(synced, wallet.synced_block)
            journal = self._journal(after, booking, valuation, operation, owner, rewards)
            booked.append((after, journal))
        return booked

    @staticmethod
    def _journal(
        wallet: Wallet,
        booking: Booking,
        valuation: Valuation,
        operation: Operation | None,
        owner: str | None,
        rewards: Sequence[RewardRecord],
    ) -> Journal:
        points = (
            [PerformancePoint(valuation.moment, valuation.total - booking.flow, booking.flow)]
            if booking.flow
            else []
        )
        return Journal(
            wallet,
            deposits=booking.deposits,
            withdrawals=booking.withdrawals,
            transactions=booking.transactions,
            rewards=list(rewards),
            points=points,
            operation=operation,
            owner=owner,
        )


async def _histories_since(
    chain: MarketChain, holders: Sequence[tuple[str, int]]
) -> list[list[ChainTx]]:
    """The history of each (holder, since block) of ``holders``: asked at once of a chain
    that reads holders in bulk (``BatchHistory``), from the lowest block."""
    if len(holders) > 1 and isinstance(chain, BatchHistory):
        addresses = list(dict.fromkeys(address for address, _ in holders))
        found = await chain.histories(addresses, min(block for _, block in holders))
        return [[e for e in found[a] if e.block_number >= block] for a, block in holders]
    return [await chain.history(address, block) for address, block in holders]


async def _histories(chain: MarketChain, wallets: Sequence[Wallet]) -> dict[int, list[ChainTx]]:
    """Each wallet's history since its sync cursor, by wallet id: asked at once of a chain
    that reads holders in bulk (``BatchHistory``), from the lowest cursor."""
    if len(wallets) > 1 and isinstance(chain, BatchHistory):
        since = min(w.synced_block for w in wallets)
        found = await chain.histories([w.address for w in wallets], since)
        return {
            w.id: [e for e in found[w.address] if e.block_number >= w.synced_block] for w in wallets
        }
    return {w.id: await chain.history(w.address, w.synced_block) for w in wallets}
