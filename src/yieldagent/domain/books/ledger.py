"""The books of a wallet, written from the chain's events: pure rules, no I/O.

Every token movement the chain shows for a smart account is booked exactly once, keyed
by its transaction hash and log index (the database refuses a second entry):

- **Deposits.** Every inflow of the wallet's token into the account, from any sender, is
  principal: ``transfer`` or ``mint`` logs whose recipient is the account. Protocol
  withdrawals and swap proceeds are not inflows: they move or add value, not principal.
- **Withdrawals.** A transfer of the wallet's token from the account that a *payout step*
  of one of the service's operations carried is a withdrawal, split as that operation
  decided before sending it (``accounting.split_withdrawal``), its fee included. The fee
  transfer that goes with it is history only: the withdrawal already counts it.
- **External withdrawals.** Any other transfer of the wallet's token out of the account
  (the owner spending from it directly) is an external withdrawal. It is split pro rata
  like ours, over the account's value just before it, and carries no fee: the service did
  not make it and charges nothing for it.
- **Moves.** Supplies to and withdrawals from protocols, swaps and reward transfers are
  history entries; they change where the value sits, not the principal.

Yield is value minus net principal. The split rule takes yield only from what the value
holds above principal, so our own bookkeeping never makes yield negative and never charges
a fee on principal. Tokens other than the wallet's (a stray airdrop, say) are not booked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from yieldagent.domain.books.accounting import WithdrawalSplit
from yieldagent.domain.books.operations import Step, StepAction
from yieldagent.domain.books.wallets import (
    DepositRecord,
    TransactionRecord,
    Wallet,
    WithdrawalKind,
    WithdrawalRecord,
)
from yieldagent.domain.catalog import TokenInfo
from yieldagent.domain.ports.chain import ChainKind, ChainTx

EventKey = tuple[str, int]
"""A chain event's identity: transaction hash and log index."""
INFLOW_KINDS = frozenset({ChainKind.TRANSFER, ChainKind.MINT})
EXTERNAL_ACTION = "external"
"""The history's name for an outflow the service did not make."""


def key_of(event: ChainTx) -> EventKey:
    """The event's identity on its chain."""
    return (event.tx_hash, event.log_index)


def _moment(timestamp: int) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


@dataclass(slots=True)
class Booking:
    """What a set of chain events adds to a wallet's books."""

    principal: int
    """The wallet's net principal after these events."""
    deposits: list[DepositRecord] = field(default_factory=list)
    withdrawals: list[WithdrawalRecord] = field(default_factory=list)
    transactions: list[TransactionRecord] = field(default_factory=list)
    flow: int = 0
    """Net flow of the wallet's token across the account's edge: deposits in, withdrawals
    and fees out. Moves within the wallet (protocols, swaps) are not flows."""

    @property
    def empty(self) -> bool:
        """Whether nothing new was found."""
        return not (self.deposits or self.withdrawals or self.transactions)


def _flow(event: ChainTx, wallet: Wallet) -> int:
    """How much of the wallet's token ``event`` brings in (+) or takes out (−) of the
    account, not counting moves to and from protocols."""
    if event.token != wallet.token or event.kind not in INFLOW_KINDS:
        return 0
    if event.recipient == wallet.address and event.sender != wallet.address:
        return event.amount
    if event.sender == wallet.address and event.recipient != wallet.address:
        return -event.amount
    return 0


def hold_back(
    events: Sequence[ChainTx], wallet: Wallet, final_block: int, ours: Set[EventKey]
) -> tuple[list[ChainTx], int]:
    """The events the books may take now: those in blocks up to ``final_block``, and the
    service's own mined steps (``ours``) wherever they are. The others wait for their
    confirmations, so a deposit a reorganisation undoes is never credited. Also returns
    the net flow the held-back events carry, which the value read from the chain's newest
    block already includes."""
    taken, pending = [], 0
    for event in events:
        if event.block_number <= final_block or key_of(event) in ours:
            taken.append(event)
        else:
            pending += _flow(event, wallet)
    return taken, pending


def pro_rata(amount: int, value_before: int, principal: int) -> WithdrawalSplit:
    """An external withdrawal's split: yield in proportion to what the value held above
    principal just before it, no fee; never more principal than there is."""
    available_yield = max(value_before - principal, 0)
    yield_ = amount * available_yield // value_before if value_before > 0 else 0
    principal_part = min(amount - yield_, principal)
    return WithdrawalSplit(amount, principal_part, amount - principal_part, 0)


def book(
    wallet: Wallet,
    token: TokenInfo,
    events: Sequence[ChainTx],
    known: set[EventKey],
    steps: Mapping[EventKey, tuple[str, Step]],
    value_now: int,
) -> Booking:
    """Books ``events`` (the account's history, in chain order) that ``known`` does not
    hold yet. ``steps`` are the mined steps of the service's operations on the wallet, by
    event, each with its operation's id; ``value_now`` is the wallet's value after all of
    ``events``, read from the chain; ``token`` prices the withdrawals."""
    fresh = [e for e in dict.fromkeys(events) if key_of(e) not in known]
    booking = Booking(wallet.principal)
    flows = [_flow(e, wallet) for e in fresh]
    value_after = value_now - sum(flows)  # the value before the first fresh event
    for event, flow in zip(fresh, flows, strict=True):
        value_after += flow
        made_by, step = steps.get(key_of(event), (None, None))
        record = _history(event, wallet, step, made_by)
        if flow > 0:
            booking.principal += event.amount
            booking.deposits.append(
                DepositRecord(
                    event.amount,
                    event.token,
                    event.tx_hash,
                    event.block_number,
                    _moment(event.timestamp),
                    event.log_index,
                )
            )
        elif flow < 0 and (step is None or step.action == StepAction.PAYOUT):
            if step is not None and step.split is not None:
                split, kind = step.split, WithdrawalKind.SERVICE
            else:
                split = pro_rata(event.amount, value_after + event.amount, booking.principal)
                kind = WithdrawalKind.EXTERNAL
                record = replace(record, action=EXTERNAL_ACTION) if record else None
            booking.principal = max(booking.principal - split.principal, 0)
            booking.withdrawals.append(_withdrawal(event, split, kind, token))
        booking.flow += flow
        if record is not None:
            booking.transactions.append(record)
    return booking


def _withdrawal(
    event: ChainTx, split: WithdrawalSplit, kind: WithdrawalKind, token: TokenInfo
) -> WithdrawalRecord:
    return WithdrawalRecord.priced(
        event.token,
        split,
        token,
        event.tx_hash,
        event.block_number,
        _moment(event.timestamp),
        event.log_index,
        kind,
    )


def _history(
    event: ChainTx, wallet: Wallet, step: Step | None, made_by: str | None
) -> TransactionRecord | None:
    """The history entry of one event, named as its step names it when the service made
    it; None for events the history does not list (claims: the reward history has them;
    tokens the wallet does not hold)."""
    if event.kind == "claim":
        return None
    action = history_action(step) if step is not None else _action(event, wallet)
    if action is None:
        return None
    return TransactionRecord(
        action=action,
        token=event.token,
        amount=event.amount,
        tx_hash=event.tx_hash,
        date=_moment(event.timestamp),
        protocol=step.protocol if step is not None else _protocol(event),
        new_token=event.token_out,
        amount_out=event.amount_out,
        apr=step.apr if step is not None else None,
        block_number=event.block_number,
        correlation_id=made_by,
        log_index=event.log_index,
    )


_MOVED = {a.chain_kind: a for a in (StepAction.DEPOSIT, StepAction.WITHDRAW, StepAction.SWAP)}
"""A protocol move or a swap no step of ours explains shows as the step that would make it."""


def _action(event: ChainTx, wallet: Wallet) -> str | None:
    """The history's name for an event no step of ours explains."""
    if event.kind in _MOVED:
        return _MOVED[event.kind]
    if event.kind not in INFLOW_KINDS:
        return None
    if event.token == wallet.token:
        return "deposit" if event.recipient == wallet.address else "transfer"
    return "transfer" if event.sender == wallet.address else None


def _protocol(event: ChainTx) -> str:
    if event.kind == ChainKind.SUPPLY:
        return event.recipient
    if event.kind == ChainKind.WITHDRAW:
        return event.sender
    return ""


def history_action(step: Step) -> str:
    """The action the transaction history shows for a step."""
    return "transfer" if step.action == StepAction.SEND else step.action
