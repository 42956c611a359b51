"""Operations and their steps: which pending steps the chain's history shows as mined."""

from __future__ import annotations

from yieldagent.domain.books.operations import (
    Operation,
    OperationKind,
    OperationStatus,
    Step,
    StepAction,
    attribute,
)
from yieldagent.domain.ports.chain import ChainKind, ChainTx, TxReceipt

ACCOUNT = "0x" + "aa" * 20
EOA = "0x" + "ee" * 20
USDC = "0x" + "c0" * 20


def _op(*steps: Step) -> Operation:
    return Operation(
        "op", 1, 8453, OperationKind.WITHDRAW, OperationStatus.EXECUTING, steps, 100, "owner"
    )


def _event(tx: str, kind: str, sender: str, recipient: str, amount: int) -> ChainTx:
    return ChainTx(tx, ChainKind(kind), USDC, sender, recipient, amount, 101, 1_000)


def test_pending_steps_are_matched_to_what_the_chain_mined_in_order() -> None:
    out = Step(StepAction.WITHDRAW, USDC, 300, protocol="aave")
    pay = Step(StepAction.PAYOUT, USDC, 270, recipient=EOA)
    events = [
        _event("0x1", "supply", ACCOUNT, "aave", 300),  # a supply: no step wants it
        _event("0x2", "withdraw", "aave", ACCOUNT, 300),
        _event("0x3", "transfer", ACCOUNT, EOA, 270),
    ]

    found = attribute(_op(out, pay), events, ACCOUNT)

    assert [s.tx_hash for s in found.steps] == ["0x2", "0x3"]
    assert found.steps_done == 2


def test_an_event_is_given_to_one_step_only_and_never_to_a_mined_one() -> None:
    first = Step(StepAction.DEPOSIT, USDC, 100, protocol="aave", tx_hash="0x1")
    second = Step(StepAction.DEPOSIT, USDC, 100, protocol="aave")
    third = Step(StepAction.DEPOSIT, USDC, 100, protocol="aave")
    events = [
        _event("0x1", "supply", ACCOUNT, "aave", 100),
        _event("0x2", "supply", ACCOUNT, "aave", 100),
    ]

    found = attribute(_op(first, second, third), events, ACCOUNT)

    assert [s.tx_hash for s in found.steps] == ["0x1", "0x2", None]


def test_a_step_matches_only_its_kind_counterparty_and_amount() -> None:
    pay = Step(StepAction.PAYOUT, USDC, 270, recipient=EOA)
    events = [
        _event("0x1", "transfer", ACCOUNT, "0x" + "55" * 20, 270),  # another recipient
        _event("0x2", "transfer", ACCOUNT, EOA, 271),  # another amount
        _event("0x3", "supply", ACCOUNT, EOA, 270),  # another kind
    ]

    assert attribute(_op(pay), events, ACCOUNT).steps == (pay,)


def test_an_abandoned_step_is_never_matched() -> None:
    gone = Step(StepAction.PAYOUT, USDC, 270, recipient=EOA, abandoned=True)

    found = attribute(_op(gone), [_event("0x1", "transfer", ACCOUNT, EOA, 270)], ACCOUNT)

    assert found.steps == (gone,)
    assert not gone.pending


def test_a_whole_withdrawal_matches_whatever_the_chain_paid_and_learns_it() -> None:
    planned = Step(StepAction.WITHDRAW, USDC, 300, protocol="aave", whole=True)
    exact = Step(StepAction.WITHDRAW, USDC, 300, protocol="aave")
    paid = _event("0x9", "withdraw", "aave", ACCOUNT, 321)  # interest accrued meanwhile

    assert planned.matches(paid, ACCOUNT) and not exact.matches(paid, ACCOUNT)
    found = attribute(_op(planned), [paid], ACCOUNT)
    assert (found.steps[0].tx_hash, found.steps[0].amount) == ("0x9", 321)
    receipt = TxReceipt("0x9", 101, 1_000, log_index=2, amount=321)
    assert (planned.mined(receipt).amount, planned.mined(receipt).log_index) == (321, 2)
