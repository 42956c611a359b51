"""What a commit makes true besides the wallet: its events and the change of its chain's
totals.

Both are derived here, by the books, from the journal a use case builds and from what the
wallet was before it (``Books.commit``): the wallet's stored standing and first deposit,
and its operation's stored status, all read at the version the commit is conditional on.
Storage writes them with the journal, in its transaction, so an event exists exactly when
its state change does, and the totals always equal a full recomputation (``recompute``).

============== =================================================================
event kind     derived from
============== =================================================================
activated      the wallet going from ``activating`` to ``activated`` (first
               activation and reactivation alike, recovered ones included)
deposit        a deposit record: the books counting an inflow for the first time
               (once its block is final; the database refuses a second record of
               the same chain event, so a deposit is credited once)
run_completed  an agent run (operation kind ``run``) closing with moves the chain
               mined: completed, failed midway or recovered after a crash
withdrawn      a withdrawal record: the service's payouts (a withdrawal, a
               deactivation's payout) and withdrawals the owner made directly
deactivated    the wallet going from ``deactivating`` to ``deactivated``
reward_claimed a reward record of a claim
============== =================================================================

A journal's events are ordered: deposits, reward claims, withdrawals, then what the
operation or the status change concludes.

A wallet adds to its chain's totals (``domain.books.aggregates``) through its **standing**
(token, status, idle funds, positions, APR) and its **history** (each deposit, its first
deposit, its transaction count); a commit changes them by the difference between the
standing before and after, plus what the journal adds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from yieldagent.domain.books.aggregates import (
    STRIPES,
    FirstDeposit,
    Standing,
    StoredWallet,
    Totals,
    WalletFacts,
    apr_units,
    merged,
)
from yieldagent.domain.books.events import (
    ACTIVATED,
    BLOCKED,
    DEACTIVATED,
    DEPOSIT_CREDITED,
    IDLE,
    REWARD_CLAIMED,
    RUN_COMPLETED,
    WITHDRAWN,
    EventDraft,
)
from yieldagent.domain.books.operations import (
    OPEN,
    Operation,
    OperationKind,
    OperationStatus,
    StepAction,
)
from yieldagent.domain.books.ports import OperationRepository, WalletRepository
from yieldagent.domain.books.wallet_states import ACTIVE, WalletStatus
from yieldagent.domain.books.wallets import (
    DepositRecord,
    Journal,
    RewardRecord,
    Wallet,
    WithdrawalRecord,
)
from yieldagent.domain.dates import iso
from yieldagent.domain.errors import Conflict

_RUN_ENDS = (OperationStatus.COMPLETED, OperationStatus.FAILED, OperationStatus.RECOVERED)


# -- events --------------------------------------------------------------------------------


def _deposit(record: DepositRecord) -> dict[str, Any]:
    return {
        "token": record.token,
        "amount": str(record.amount),
        "tx_hash": record.tx_hash,
        "log_index": record.log_index,
        "block_number": record.block_number,
        "date": iso(record.date),
    }


def _withdrawal(record: WithdrawalRecord) -> dict[str, Any]:
    return {
        "kind": record.kind,
        "token": record.token,
        "amount": str(record.amount),
        "principal_amount": str(record.principal),
        "yield_amount": str(record.yield_),
        "fee_amount": str(record.fee),
        "received_amount": str(record.received),
        "tx_hash": record.tx_hash,
        "log_index": record.log_index,
        "block_number": record.block_number,
        "date": iso(record.date),
    }


def _reward(record: RewardRecord) -> dict[str, Any]:
    return {
        "token": record.token,
        "token_symbol": record.token_symbol,
        "amount": str(record.amount),
        "decimals": record.decimals,
        "is_staked": record.is_staked,
        "tx_hash": record.tx_hash,
        "date": iso(record.date),
    }


def run_moves(operation: Operation) -> list[dict[str, Any]]:
    """A run's moves the chain mined, in order: a withdrawal goes from its protocol to
    the account's idle balance (``""``), a supply from the idle balance to its protocol."""
    moves = []
    for step in operation.steps:
        if not step.done or step.action not in (StepAction.DEPOSIT, StepAction.WITHDRAW):
            continue
        withdraw = step.action == StepAction.WITHDRAW
        moves.append(
            {
                "from_protocol": step.protocol if withdraw else IDLE,
                "to_protocol": IDLE if withdraw else step.protocol,
                "token": step.token,
                "amount": str(step.amount),
                "tx_hash": step.tx_hash,
            }
        )
    return moves


def _run_completed(operation: Operation, previous: str | None) -> Mapping[str, Any] | None:
    """The details of a run that ends in this commit having moved funds, else None."""
    if operation.kind != OperationKind.RUN or operation.status not in _RUN_ENDS:
        return None
    if previous is not None and previous not in OPEN:
        return None  # it had ended before: stored again, not ended again
    moves = run_moves(operation)
    if not moves:
        return None
    return {
        "run_id": operation.id,
        "outcome": operation.status,
        "reason": operation.reason,
        "moves": moves,
    }


def _positions(wallet: Wallet) -> dict[str, str]:
    return {name: str(amount) for name, amount in sorted(wallet.positions.items()) if amount}


def derive(
    journal: Journal,
    previous_status: WalletStatus | None,
    previous_operation_status: str | None,
) -> list[EventDraft]:
    """The events a journal makes true, in order.

    ``previous_status`` is the wallet's status as stored before the commit (None for a new
    wallet); ``previous_operation_status`` the stored status of ``journal.operation``
    (None when the commit stores it for the first time).
    """
    wallet = journal.wallet
    drafts: list[EventDraft] = []

    def add(kind: str, amount: int | None, data: Mapping[str, Any]) -> None:
        drafts.append(
            EventDraft(
                kind, wallet.id, wallet.partner_id, wallet.chain_id, wallet.address, amount, data
            )
        )

    for deposit in journal.deposits:
        add(DEPOSIT_CREDITED, deposit.amount, _deposit(deposit))
    for reward in journal.rewards:
        add(REWARD_CLAIMED, reward.amount, _reward(reward))
    for withdrawal in journal.withdrawals:
        add(WITHDRAWN, withdrawal.amount, _withdrawal(withdrawal))
    operation = journal.operation
    if operation is not None and (run := _run_completed(operation, previous_operation_status)):
        moved = sum(int(move["amount"]) for move in run["moves"] if move["to_protocol"] != IDLE)
        add(RUN_COMPLETED, moved, run)
    status = wallet.status
    if previous_status == WalletStatus.ACTIVATING and status == WalletStatus.ACTIVATED:
        add(
            ACTIVATED,
            wallet.principal,
            {
                "token": wallet.token,
                "selected_protocols": list(wallet.selected_protocols),
                "principal": str(wallet.principal),
                "allocation": _positions(wallet),
                "idle": str(wallet.idle),
                "reactivation": wallet.last_reactivation_date is not None,
            },
        )
    if previous_status not in (None, WalletStatus.BLOCKED) and status == WalletStatus.BLOCKED:
        add(
            BLOCKED,
            None,
            {"previous_status": str(previous_status), "status_reason": wallet.status_reason},
        )
    if previous_status == WalletStatus.DEACTIVATING and status == WalletStatus.DEACTIVATED:
        transfer = True
        if operation is not None and operation.kind == OperationKind.DEACTIVATE:
            transfer = bool(operation.params.get("transfer", True))
        add(
            DEACTIVATED,
            None,
            {"token": wallet.token, "transfer": transfer, "idle": str(wallet.idle)},
        )
    return drafts


# -- chain totals ----------------------------------------------------------------------------


def standing(wallet: Wallet) -> Standing:
    """The standing of ``wallet`` as it is now."""
    return Standing(
        wallet.token,
        wallet.status,
        wallet.idle,
        tuple(wallet.positions.items()),
        wallet.current_apr,
    )


def contribution(of: Standing, into: Totals | None = None) -> Totals:
    """What a wallet with this standing adds to its chain's totals (added to ``into``)."""
    totals = into if into is not None else Totals()
    if of.status == WalletStatus.DEACTIVATED:
        return totals
    token = totals.token(of.token)
    token.held_wallets += 1
    token.held += of.idle + sum(amount for _, amount in of.positions)
    if of.status in ACTIVE:
        token.active_wallets += 1
        token.apr_units += apr_units(of.apr)
    for protocol, amount in of.positions:
        placed = totals.protocol(protocol, of.token)
        placed.wallets += 1
        placed.amount += amount
    return totals


def first_of(
    previous: FirstDeposit | None, deposits: Iterable[DepositRecord]
) -> FirstDeposit | None:
    """The wallet's first deposit once ``deposits`` (booked after every earlier one, in this
    order) are added: a later-booked deposit comes first only with a strictly earlier date."""
    first = previous
    for deposit in deposits:
        if first is None or deposit.date < first.date:
            first = FirstDeposit(deposit.token, deposit.amount, deposit.date)
    return first


def history(
    token: str,
    deposits: Iterable[DepositRecord],
    transactions: int,
    first: FirstDeposit | None,
    into: Totals | None = None,
) -> Totals:
    """What a wallet of ``token`` adds through its deposits, first deposit and transaction
    count (added to ``into``)."""
    totals = into if into is not None else Totals()
    for deposit in deposits:
        totals.token(deposit.token).deposited += deposit.amount
    if first is not None:
        counted = totals.token(first.token)
        counted.first_wallets += 1
        counted.first_deposited += first.amount
    if transactions:
        totals.token(token).transactions += transactions
    return totals


def changes(before: Standing | None, journal: Journal, first: FirstDeposit | None = None) -> Totals:
    """How a commit of ``journal`` changes its chain's totals: the wallet's standing from
    ``before`` (None: a new wallet) to the journal's wallet, plus the journal's deposits and
    transactions. ``first`` is the wallet's first deposit before the commit (needed only
    when the journal adds deposits)."""
    after = standing(journal.wallet)
    delta = contribution(after)
    if before is not None:
        delta.add(contribution(before), -1)
    new_first = first_of(first, journal.deposits)
    history(after.token, journal.deposits, len(journal.transactions), None, into=delta)
    if new_first is not first:
        if first is not None:
            delta.add(history(after.token, (), 0, first), -1)
        history(after.token, (), 0, new_first, into=delta)
    return delta.pruned()


def recompute(wallets: Iterable[WalletFacts]) -> dict[tuple[int, int], Totals]:
    """Every chain's totals the slow way, from every wallet's standing and history, by
    (chain id, stripe): what the commits' changes must add up to."""
    totals: dict[tuple[int, int], Totals] = {}
    for facts in wallets:
        into = totals.setdefault((facts.chain_id, facts.wallet_id % STRIPES), Totals())
        contribution(facts.standing, into)
        history(
            facts.standing.token,
            facts.deposits,
            facts.transactions,
            first_of(None, facts.deposits),
            into,
        )
    return {key: part.pruned() for key, part in totals.items()}


def rebuild_totals(wallets: WalletRepository) -> None:
    """Replaces every chain's stored totals with a recomputation (an operator's repair; the
    migration that introduced them). Run it while no replica commits."""
    wallets.replace_totals(recompute(wallets.facts()))


def disagreeing_chains(wallets: WalletRepository) -> list[int]:
    """The chains whose stored totals differ from a recomputation (an operator's check)."""
    recomputed: dict[int, list[Totals]] = {}
    for (chain_id, _), part in recompute(wallets.facts()).items():
        recomputed.setdefault(chain_id, []).append(part)
    chains = set(wallets.totalled_chains()) | set(recomputed)
    return sorted(
        chain_id
        for chain_id in chains
        if wallets.totals(chain_id) != merged(recomputed.get(chain_id, []))
    )


# -- sealing journals -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Before:
    """What commits' effects depend on, as stored now."""

    wallets: Mapping[int, StoredWallet]
    """Each stored wallet's version, standing and lease owner, by wallet id."""
    firsts: Mapping[int, FirstDeposit]
    """The stored first deposits, by wallet id (needed only where a journal adds deposits)."""
    operations: Mapping[str, OperationStatus]
    """The stored statuses of the journals' operations, by operation id (absent: new)."""


def sealed(journals: Sequence[Journal], before: Before) -> list[Journal | None]:
    """Each journal with its events, its change of the chain's totals and its schedule
    flag; None for a journal storage would refuse (its wallet is not at the version it was
    read at, or its lease is another owner's).

    A wallet's journals are taken in the order given, each seeing the wallet as the
    previous one written leaves it; so the journals kept for one wallet are at successive
    versions, and storage writes a later one only if it wrote the earlier one.
    """
    current = {wallet_id: (s.version, s.standing) for wallet_id, s in before.wallets.items()}
    firsts = dict(before.firsts)
    operations = dict(before.operations)
    out: list[Journal | None] = []
    for journal in journals:
        wallet = journal.wallet
        was: Standing | None = None
        if wallet.id:  # else a new wallet: nothing stored before it
            stored = before.wallets.get(wallet.id)
            known = current.get(wallet.id)
            if (
                stored is None
                or known is None
                or known[0] != wallet.version
                or journal.owner not in (None, stored.lease_owner)
            ):
                out.append(None)
                continue
            was = known[1]
        first = firsts.get(wallet.id)
        operation = journal.operation
        previous = operations.get(operation.id) if operation is not None else None
        scheduled = wallet.status == WalletStatus.ACTIVATED
        out.append(
            replace(
                journal,
                events=derive(journal, None if was is None else was.status, previous),
                totals=changes(was, journal, first),
                schedule=(
                    scheduled
                    if was is not None and (was.status == WalletStatus.ACTIVATED) != scheduled
                    else None
                ),
            )
        )
        if wallet.id:
            current[wallet.id] = (wallet.version + 1, standing(wallet))
            if (now_first := first_of(first, journal.deposits)) is not None:
                firsts[wallet.id] = now_first
        if operation is not None:
            operations[operation.id] = operation.status
    return out


class Commits:
    """Commits journals with their effects: reads what the effects depend on (as stored
    now), derives them, and has the repository store each journal with its effects in one
    transaction, conditional on the wallet's version and lease."""

    def __init__(self, wallets: WalletRepository, operations: OperationRepository) -> None:
        self._wallets = wallets
        self._operations = operations

    def commit(self, journal: Journal, expected: WalletStatus | None = None) -> None:
        """``WalletRepository.commit`` of the journal with its effects."""
        [ready] = self._sealed([journal])
        if ready is None:
            raise Conflict("The wallet changed meanwhile; retry")
        self._wallets.commit(ready, expected)

    def commit_many(self, journals: Sequence[Journal]) -> list[bool]:
        """``WalletRepository.commit_many`` of the journals with their effects."""
        ready = self._sealed(journals)
        sent = [journal for journal in ready if journal is not None]
        written = iter(self._wallets.commit_many(sent))
        answers = [journal is not None and next(written) for journal in ready]
        # A journal refused though its wallet's version and lease were as read (a chain event
        # booked meanwhile) leaves the wallet where it was, which its later journals were not
        # sealed for: those are committed one by one, against what is stored then.
        surprised: set[int] = set()
        for index, journal in enumerate(journals):
            if journal.wallet.id in surprised:
                answers[index] = self._alone(journal)
            elif ready[index] is not None and not answers[index]:
                surprised.add(journal.wallet.id)
        return answers

    def _alone(self, journal: Journal) -> bool:
        try:
            self.commit(journal)
        except Conflict:
            return False
        return True

    def create(self, journal: Journal, lease_until: float | None = None) -> Wallet:
        """``WalletRepository.create`` of a new wallet's journal with its effects."""
        [ready] = sealed([journal], Before({}, {}, {}))
        assert ready is not None  # a new wallet has nothing stored to disagree with
        return self._wallets.create(ready, lease_until)

    def _sealed(self, journals: Sequence[Journal]) -> list[Journal | None]:
        operations = sorted({j.operation.id for j in journals if j.operation is not None})
        before = Before(
            self._wallets.stored(sorted({j.wallet.id for j in journals})),
            self._wallets.first_deposits(sorted({j.wallet.id for j in journals if j.deposits})),
            self._operations.statuses(operations) if operations else {},
        )
        return sealed(journals, before)
