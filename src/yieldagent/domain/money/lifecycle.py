"""A wallet's use cases, composed: the one object the servicers and the worker call.

The money use cases live in focused modules, all on the same ``Books``:

    deposits        activation, reactivation, top-up
    withdrawals     withdrawal, deactivation, emergency exit
    rewards         reward claims
    reconciliation  finishing what a crash, a chain error or a short pool left open
    agent           rebalancing runs (``domain.agent.runs``)

This module adds the calls that change a wallet's rules (protocols, reward staking), the
operator's actions (block, unblock, emergency, resume), and the worker's periodic job
(``refresh``: booking what nobody announced, hourly valuations, following the owner's
revocation of the operator: a wallet whose account no longer lets the operator act is
``blocked``, and unblocked when its owner allows it again; and saying which pool holds the
wallet's funds back while its withdrawals are paused, ``books.held_back``). Every call
that changes a wallet holds its lease (``domain.books.leases``) and commits against the
version it read.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from yieldagent.domain.books.books import Books, Policy
from yieldagent.domain.books.held_back import follows, held_back, paused_pools
from yieldagent.domain.books.operations import Operation, OperationKind, OperationStatus
from yieldagent.domain.books.ports import OperationRepository, WalletRepository
from yieldagent.domain.books.reconciliation import Reconciler, Repair, recover_run
from yieldagent.domain.books.wallet_states import WalletAction, WalletStatus, transition
from yieldagent.domain.books.wallets import Journal, Wallet, WithdrawalRecord
from yieldagent.domain.catalog import Catalog
from yieldagent.domain.errors import ChainUnavailable, InvalidInput
from yieldagent.domain.market.ports import MarketChain, PoolReads
from yieldagent.domain.money.deposits import (
    DEPOSIT_TOO_LARGE,
    ActivationPlacement,
    ActivationRequest,
    Deposits,
)
from yieldagent.domain.money.rewards import ClaimedReward, Rewards
from yieldagent.domain.money.withdrawals import Withdrawals
from yieldagent.domain.ports.chain import ModuleWatch, TransferWatch
from yieldagent.domain.ports.clock import Clock
from yieldagent.domain.ports.storage import WatchCursors
from yieldagent.domain.risk.survey import RiskSurvey

SNAPSHOT_SECONDS = 3600
"""At most one periodic performance point per wallet per hour of chain time."""
REVOKED = "the owner revoked the operator"
"""How the ``status_reason`` of a wallet blocked by its owner's revocation starts."""
SYNCED_STATES = frozenset(
    {WalletStatus.ACTIVATED, WalletStatus.BLOCKED, WalletStatus.EMERGENCY, WalletStatus.DEACTIVATED}
)
"""States the worker books and values; the others belong to an operation in progress."""
REFRESH_BATCH = 100
"""Wallets the refresh books and values together (one read of their histories and
holdings where the chain reads in bulk)."""
ACTIVATIONS_PER_PASS = 256
"""Most open activations one ``finish_activations`` takes, all together; the next pass
takes the rest. Their deployments go out with one fee reading (twice the next base fee):
a pass whose deployments filled many blocks in a row would see the base fee, up 12.5%
a full block, pass what its later transactions offer, and wait for their replacement.
256 deployments of 373,352 gas fill about three 30 M gas blocks."""
MODULE_WATCH = "module"
"""The cursor of the Safes' module logs (``Lifecycle.refresh``)."""
TRANSFER_WATCH = "transfers"
"""The cursor of the watched tokens' transfer logs (``Lifecycle.refresh``)."""

__all__ = [
    "DEPOSIT_TOO_LARGE",
    "ActivationPlacement",
    "ActivationRequest",
    "ClaimedReward",
    "Lifecycle",
    "Policy",
]


class _Moved:
    """What one refresh's transfer watch read (``Lifecycle._transfers``), and where its
    cursor may move once the refresh is done."""

    def __init__(self, touched: dict[str, int] | None, through: int, now: int) -> None:
        self.touched = touched
        """The named accounts, each with its first block; None: every one (no cursor)."""
        self.through = through
        """The last block read (the head's final block)."""
        self.now = now
        """The head's timestamp: whose hourly point is due."""
        self.next_block: int | None = through + 1
        """Where the cursor moves; None: nowhere (a wallet missed on the first read)."""

    def names(self, wallet: Wallet) -> bool:
        """Whether ``wallet`` has transfers to book."""
        return self.touched is None or wallet.address in self.touched

    def due(self, wallet: Wallet) -> bool:
        """Whether ``wallet``'s hourly performance point is due (a deactivated one never
        is)."""
        if wallet.status == WalletStatus.DEACTIVATED:
            return False
        return self.now - wallet.valued_at.timestamp() >= SNAPSHOT_SECONDS

    def miss(self, wallet: Wallet) -> None:
        """``wallet`` was not booked by this refresh: if the watch named it, the cursor
        stays before its first transfer, so the next refresh names it again."""
        if self.touched is None:
            self.next_block = None
        elif wallet.address in self.touched and self.next_block is not None:
            self.next_block = min(self.next_block, self.touched[wallet.address])


class Lifecycle:
    """The use cases that move a wallet's money or change its rules."""

    def __init__(
        self,
        wallets: WalletRepository,
        operations: OperationRepository,
        chains: Mapping[int, MarketChain],
        catalog: Catalog,
        policy: Policy,
        clock: Clock,
        paused: Callable[[int], frozenset[str]] = lambda chain_id: frozenset(),
        risk: RiskSurvey | None = None,
        cursors: WatchCursors | None = None,
        placement: ActivationPlacement = ActivationPlacement.INLINE,
        make_due: Callable[[int, float], None] | None = None,
    ) -> None:
        self.books = Books(wallets, operations, chains, catalog, policy, clock)
        self._cursors = cursors
        self._make_due = make_due
        self.deposits = Deposits(self.books, self._settled, paused, risk, placement)
        self.withdrawals = Withdrawals(self.books, self._settled)
        self.rewards = Rewards(self.books, self._settled, self.deposits)
        self.reconciler = Reconciler(
            self.books,
            {
                OperationKind.ACTIVATE: self.deposits.resume_activation,
                OperationKind.TOP_UP: self.deposits.resume_top_up,
                OperationKind.WITHDRAW: self.withdrawals.resume_withdrawal,
                OperationKind.DEACTIVATE: self.withdrawals.drain,
                OperationKind.EMERGENCY: self.withdrawals.exit_pools,
                OperationKind.CLAIM: self.rewards.resume,
                OperationKind.RUN: functools.partial(recover_run, self.books),
            },
        )
        self.paused = paused
        """The protocols the operator paused on a chain: funds are never placed there."""
        self.risk = risk
        """The risk guards (None: none): new funds go only where they allow."""

    async def _settled(self, key: str | None) -> Operation | None:
        """The operation started with idempotency ``key``, once it has ended (see
        ``Reconciler.settled``): the use cases ask it before they start a keyed call."""
        return await self.reconciler.settled(key)

    # -- lookups ------------------------------------------------------------------------

    def chain(self, chain_id: int) -> MarketChain:
        """The chain port of ``chain_id``; NotFound when the service does not run there."""
        return self.books.chain(chain_id)

    def wallet(self, chain_id: int, address: str, partner_id: int | None = None) -> Wallet:
        """The stored wallet, checked against its owner when ``partner_id`` is given."""
        return self.books.wallet(chain_id, address, partner_id)

    @property
    def lease_seconds(self) -> float:
        """How long a wallet's lease lasts before it lapses on its own."""
        return self.books.leases.seconds

    # -- money (see deposits, withdrawals, rewards) -----------------------------------------

    async def activate(
        self, partner_id: int, chain_id: int, request: ActivationRequest, key: str | None = None
    ) -> Wallet:
        """Activates (or reactivates) the agent of a funded smart account."""
        return await self.deposits.activate(partner_id, chain_id, request, key)

    async def top_up(
        self, partner_id: int, chain_id: int, address: str, tx_hash: str, key: str | None = None
    ) -> None:
        """Books a further deposit, verified on chain, and places it."""
        await self.deposits.top_up(partner_id, chain_id, address, tx_hash, key)

    async def withdraw(
        self, partner_id: int, chain_id: int, address: str, amount: int, key: str | None = None
    ) -> WithdrawalRecord:
        """Withdraws ``amount`` to the EOA; the agent stays active."""
        return await self.withdrawals.withdraw(partner_id, chain_id, address, amount, key)

    async def deactivate(
        self, partner_id: int, chain_id: int, address: str, transfer: bool, key: str | None = None
    ) -> WithdrawalRecord | None:
        """Stops the agent and withdraws everything (to the EOA with ``transfer``)."""
        return await self.withdrawals.deactivate(partner_id, chain_id, address, transfer, key)

    async def claim_rewards(
        self, partner_id: int, chain_id: int, address: str, key: str | None = None
    ) -> list[ClaimedReward]:
        """Claims accrued reward tokens: compounded when staked, else sent to the EOA."""
        return await self.rewards.claim_rewards(partner_id, chain_id, address, key)

    async def reconcile(self) -> list[Repair]:
        """Finishes every operation a dead process left open and every due retry (in
        background placement, the open activations first, many at once)."""
        first = []
        if self.deposits.placement == ActivationPlacement.BACKGROUND:
            first = await self.finish_activations()
        return first + await self.reconciler.reconcile()

    async def finish_activations(self) -> list[Repair]:
        """Finishes the open activations no live call holds (queued by background
        placement, or left by a dead process), all together, as reconciliation resumes
        one (``Deposits.resume_activations``: the accounts not on chain deployed in one
        pipelined batch, then the wallets ``activated``, committed in one transaction),
        and makes each activated wallet due now, so that the agent's next cycle places
        its funds."""
        books = self.books
        now = books.clock.time()
        queued = [
            operation
            for operation in books.operations.abandoned(now)
            if operation.kind == OperationKind.ACTIVATE
        ][:ACTIVATIONS_PER_PASS]
        if not queued:
            return []
        repairs = await self.reconciler.finish_together(queued, self.deposits.resume_activations)
        ended = books.operations.statuses([operation.id for operation in queued])
        if self._make_due is not None:
            due = books.clock.time()
            for operation in queued:
                if ended.get(operation.id) == OperationStatus.COMPLETED:
                    self._make_due(operation.wallet_id, due)
        return repairs

    async def reconcile_wallet(self, chain_id: int, address: str) -> list[Repair]:
        """Finishes one wallet's open operations now and books its chain events."""
        return await self.reconciler.reconcile_wallet(chain_id, address)

    # -- rules ------------------------------------------------------------------------------

    async def set_reward_staking(
        self, partner_id: int, chain_id: int, address: str, is_staked: bool
    ) -> None:
        """Sets whether claimed rewards are compounded into the position."""
        books = self.books
        wallet = books.wallet(chain_id, address, partner_id)
        async with books.leases.hold(wallet.id) as owner:
            current = books.reread(wallet)
            transition(current.status, WalletAction.SET_REWARD_STAKING)
            books.commits.commit(Journal(replace(current, is_staked=is_staked), owner=owner))

    async def update_protocols(
        self, partner_id: int, chain_id: int, address: str, protocols: Sequence[str]
    ) -> None:
        """Replaces the protocols the agent may use; the next run follows them."""
        if not protocols:
            raise InvalidInput.field(
                ("protocols",), "List should have at least 1 item", "too_short"
            )
        books = self.books
        wallet = books.wallet(chain_id, address, partner_id)
        books.catalog.check_protocols(books.token_info(wallet), protocols)
        transition(wallet.status, WalletAction.UPDATE_PROTOCOLS)
        async with books.leases.hold(wallet.id) as owner:
            current = books.reread(wallet)
            updated = replace(
                current,
                status=transition(current.status, WalletAction.UPDATE_PROTOCOLS),
                selected_protocols=tuple(dict.fromkeys(protocols)),
            )
            books.commits.commit(Journal(updated, owner=owner))

    async def operate(self, chain_id: int, address: str, action: str) -> Wallet:
        """An operator action (a ``WalletAction``): block, unblock, emergency or resume.

        Emergency takes what each pool can give into the smart account and keeps it idle.
        """
        books = self.books
        wallet = books.wallet(chain_id, address)
        chain = books.chain(chain_id)
        async with books.leases.hold(wallet.id) as owner:
            current = books.reread(wallet)
            if action == WalletAction.EMERGENCY:
                return await self.withdrawals.emergency(chain, current, owner)
            updated = replace(current, status=transition(current.status, action))
            books.commits.commit(Journal(updated, owner=owner))
            return updated

    # -- the worker ---------------------------------------------------------------------------

    async def refresh(self, chain_id: int) -> int:
        """Books what is new on the chain for the settled wallets of a chain (deposits
        nobody announced, external withdrawals) and records a performance point when the
        last valuation is an hour old; wallets busy with an operation are skipped.
        Returns how many wallets it wrote.

        The wallets are booked and valued ``REFRESH_BATCH`` at a time, each under its
        lease, so a chain that reads in bulk reads their histories (from each wallet's own
        synced block) and holdings at once.

        Where the chain tells the watched tokens' transfers for the whole fleet
        (``TransferWatch``), only the wallets whose transfers since the stored cursor it
        names are booked, up to the head's final block; the ones whose hourly point is
        due are valued without a history read (the watch says they have none unbooked).
        The cursor moves on once each named wallet was booked; a named wallet that was
        busy (or could not be committed) holds it back to its first transfer. The first
        time (no cursor), every wallet is booked.

        Whether an owner revoked the operator is asked of every wallet's account, unless
        the chain tells the module's toggles for the whole fleet (``ModuleWatch``): then
        only the accounts whose logs since the stored cursor name the module are asked,
        up to the head's final block, and the cursor moves on once each of them was
        followed (a wallet busy with an operation holds it back, so none is missed)."""
        books = self.books
        chain = books.chain(chain_id)
        watched = await self._module_toggles(chain_id, chain)
        toggled = None if watched is None else watched[0]
        missed = False
        listed, moved = await self._transfers(chain_id, chain)
        written = 0
        paused: dict[str, frozenset[str] | None] = {}  # by token, read once per refresh
        owner = books.leases.owner("refresh")
        named: list[Wallet] = []
        quiet: list[Wallet] = []
        try:
            for wallet in listed:
                asked = toggled is None or wallet.address in toggled
                if wallet.status not in SYNCED_STATES or not books.leases.try_acquire(
                    wallet.id, owner
                ):
                    missed = missed or (asked and watched is not None)
                    if moved is not None:
                        moved.miss(wallet)
                    continue
                current = books.reread(wallet)
                if asked and await self._follow_revocation(chain, current, owner):
                    books.leases.release(wallet.id, owner)
                    written += 1  # its close booked it, at a head no older
                    continue
                if await self._tell_held_back(chain, current, owner, paused):
                    books.leases.release(wallet.id, owner)
                    written += 1  # its close booked it, at a head no older
                    continue
                if current.status not in SYNCED_STATES:
                    books.leases.release(wallet.id, owner)
                    if moved is not None:
                        moved.miss(current)
                    continue
                if moved is None or moved.names(current):
                    named.append(current)
                elif moved.due(current):
                    quiet.append(current)
                else:
                    books.leases.release(wallet.id, owner)
                    continue
                if len(named) >= REFRESH_BATCH:
                    written += await self._sync(chain, named, owner, moved)
                    named = []
                if len(quiet) >= REFRESH_BATCH:
                    written += await self._sync(chain, quiet, owner, moved, quiet=True)
                    quiet = []
            written += await self._sync(chain, named, owner, moved)
            named = []
            written += await self._sync(chain, quiet, owner, moved, quiet=True)
            quiet = []
        finally:
            for wallet in named + quiet:
                books.leases.release(wallet.id, owner)
        if watched is not None and self._cursors is not None and not missed:
            self._cursors.advance(chain_id, MODULE_WATCH, watched[1])
        if moved is not None and self._cursors is not None and moved.next_block is not None:
            self._cursors.advance(chain_id, TRANSFER_WATCH, moved.next_block)
        return written

    async def _tell_held_back(
        self,
        chain: MarketChain,
        wallet: Wallet,
        owner: str,
        paused: dict[str, frozenset[str] | None],
    ) -> bool:
        """Sets the wallet's ``status_reason`` to the pools that hold its funds back (their
        withdrawals paused), or clears the one it set once none does; ``paused`` keeps
        each token's paused pools for the rest of the refresh. Returns whether it
        committed."""
        if not follows(wallet.status_reason):
            return False
        if not wallet.status_reason and not any(a > 0 for a in wallet.positions.values()):
            return False  # nothing in any pool, nothing said: no pool to read
        if wallet.token not in paused:
            paused[wallet.token] = await self._paused_pools(chain, wallet.token)
        found = paused[wallet.token]
        if found is None:  # the pools could not be read: say what was said before
            return False
        symbol = self.books.token_info(wallet).symbol
        reason = held_back(wallet.positions, found, symbol)
        if reason == wallet.status_reason:
            return False
        await self.books.close(chain, replace(wallet, status_reason=reason), owner)
        return True

    async def _paused_pools(self, chain: MarketChain, token: str) -> frozenset[str] | None:
        """The pools of ``token`` on ``chain`` whose withdrawals are paused (none on a chain
        that cannot read its pools' switches; None when the node did not answer)."""
        if not isinstance(chain, PoolReads):
            return frozenset()
        names = [p.name for p in self.books.catalog.token(chain.chain_id, token).protocols]
        try:
            return paused_pools(await chain.pool_readings(token, names))
        except ChainUnavailable:
            return None

    async def _sync(
        self,
        chain: MarketChain,
        wallets: list[Wallet],
        owner: str,
        moved: _Moved | None,
        quiet: bool = False,
    ) -> int:
        """Books and values ``wallets`` (leased by ``owner``) together, then gives their
        leases back; returns how many it committed. A deactivated wallet records no
        performance point. ``quiet`` ones are only valued: ``moved`` saw no transfer of
        theirs; a wallet that could not be committed is one ``moved`` missed."""
        books = self.books
        try:
            written = 0
            through = None if not quiet or moved is None else moved.through
            for closed in (False, True):
                group = [w for w in wallets if (w.status == WalletStatus.DEACTIVATED) is closed]
                every = math.inf if closed else SNAPSHOT_SECONDS
                synced = await books.sync_many(chain, group, owner, every, through)
                written += synced.written
                if moved is not None:
                    for wallet in group:
                        if wallet.id in synced.refused:
                            moved.miss(wallet)
            return written
        finally:
            for wallet in wallets:
                books.leases.release(wallet.id, owner)

    async def _transfers(
        self, chain_id: int, chain: MarketChain
    ) -> tuple[Sequence[Wallet], _Moved | None]:
        """The chain's wallets, and which of them the watched tokens' transfers named
        since the cursor, up to the head's final block (None where the chain keeps no such
        watch). The first time (no cursor) every wallet counts as named."""
        if self._cursors is None or not isinstance(chain, TransferWatch):
            return self.books.wallets.wallets(chain_id), None
        head = await chain.head()
        # Listed after the head is read: a wallet created later is first booked at a head
        # at least as new, so no transfer up to this one escapes both its books and the watch.
        wallets = self.books.wallets.wallets(chain_id)
        through = head.final_number
        cursor = self._cursors.cursor(chain_id, TRANSFER_WATCH)
        if cursor is None:
            return wallets, _Moved(None, through, head.timestamp)
        touched: dict[str, int] = {}
        if cursor <= through:
            touched = await chain.transfers_touching([w.address for w in wallets], cursor, through)
        return wallets, _Moved(touched, through, head.timestamp)

    async def _module_toggles(
        self, chain_id: int, chain: MarketChain
    ) -> tuple[set[str] | None, int] | None:
        """The accounts whose module toggled since the cursor, and the cursor after the
        read (the head's final block + 1); None where the chain keeps no watch. The first
        time (no cursor) every account is asked (``None`` for the accounts)."""
        if self._cursors is None or not isinstance(chain, ModuleWatch):
            return None
        head = await chain.head()
        after = head.final_number + 1
        cursor = self._cursors.cursor(chain_id, MODULE_WATCH)
        if cursor is None:
            return None, after
        return await chain.module_toggled(cursor, after - 1), after

    async def _follow_revocation(self, chain: MarketChain, wallet: Wallet, owner: str) -> bool:
        """Blocks a wallet whose owner revoked the operator on chain (the ``blocked``
        event tells the partner), and unblocks one it blocked so once the owner allows the
        operator again. Returns whether it committed."""
        if wallet.status not in (WalletStatus.ACTIVATED, WalletStatus.EMERGENCY) and not (
            wallet.status == WalletStatus.BLOCKED and wallet.status_reason.startswith(REVOKED)
        ):
            return False
        reason = await chain.revocation(wallet.address)
        if reason is not None and wallet.status != WalletStatus.BLOCKED:
            changed = replace(
                wallet,
                status=transition(wallet.status, WalletAction.BLOCK),
                status_reason=f"{REVOKED}: {reason}",
            )
        elif reason is None and wallet.status == WalletStatus.BLOCKED:
            changed = replace(
                wallet, status=transition(wallet.status, WalletAction.UNBLOCK), status_reason=""
            )
        else:
            return False
        await self.books.close(chain, changed, owner)
        return True
