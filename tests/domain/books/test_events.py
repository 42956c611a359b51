"""Which events a journal makes true (``domain.books.events.derive``), and following a wallet's
events (``follow``): pure, no database."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from yieldagent.domain.books.accounting import WithdrawalSplit
from yieldagent.domain.books.effects import derive, run_moves
from yieldagent.domain.books.operations import (
    Operation,
    OperationKind,
    OperationStatus,
    Step,
    StepAction,
)
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.books.wallets import (
    DepositRecord,
    Journal,
    RewardRecord,
    Wallet,
    WithdrawalRecord,
)
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.ports.chain import TxReceipt

MOMENT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
TOKEN = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
HUGE = 2**255 + 12345  # beyond any float: amounts stay exact


def wallet(status: WalletStatus = WalletStatus.ACTIVATED) -> Wallet:
    return Wallet(
        id=7,
        chain_id=8453,
        address="0x" + "ab" * 20,
        eoa="0x" + "cd" * 20,
        partner_id=3,
        status=status,
        token=TOKEN,
        selected_protocols=("aave", "moonwell"),
        constraints=Constraints(),
        principal=HUGE,
        positions={"aave": HUGE - 5, "moonwell": 0},
        idle=5,
        current_apr=4.2,
        valued_at=MOMENT,
        is_staked=False,
        activation_date=MOMENT,
        last_deactivation_date=None,
        last_reactivation_date=None,
    )


def step(action: str, protocol: str, amount: int, mined: bool = True) -> Step:
    planned = Step(StepAction(action), TOKEN, amount, protocol=protocol)
    return planned.mined(TxReceipt("0x" + "11" * 32, 9, 0)) if mined else planned


def run(status: str, steps: tuple[Step, ...], kind: str = OperationKind.RUN) -> Operation:
    return Operation(
        "op-1",
        7,
        8453,
        OperationKind(kind),
        OperationStatus(status),
        steps,
        1,
        "owner",
        reason="better APR",
    )


MOVES = (step(StepAction.WITHDRAW, "moonwell", 40), step(StepAction.DEPOSIT, "aave", 40))


def test_records_become_events_in_journal_order_with_exact_amounts() -> None:
    journal = Journal(
        wallet(),
        deposits=[DepositRecord(HUGE, TOKEN, "0xd1", 5, MOMENT, 2)],
        withdrawals=[
            WithdrawalRecord(TOKEN, WithdrawalSplit(100, 90, 10, 1), 0.0, 0.0, "0xw1", 6, MOMENT, 0)
        ],
        rewards=[RewardRecord("0xwell", "WELL", 77, 18, 0.5, "0xr1", True, MOMENT)],
    )
    drafts = derive(journal, WalletStatus.ACTIVATED, None)

    assert [d.kind for d in drafts] == ["deposit_credited", "reward_claimed", "withdrawn"]
    deposit, reward, withdrawal = drafts
    assert deposit.amount == HUGE and deposit.data["amount"] == str(HUGE)
    assert deposit.data == {
        "token": TOKEN,
        "amount": str(HUGE),
        "tx_hash": "0xd1",
        "log_index": 2,
        "block_number": 5,
        "date": "2026-01-02T03:04:05Z",
    }
    assert reward.data["token_symbol"] == "WELL" and reward.data["is_staked"] is True
    assert withdrawal.data["received_amount"] == "99"
    assert (withdrawal.data["principal_amount"], withdrawal.data["yield_amount"]) == ("90", "10")
    assert {(d.wallet_id, d.partner_id, d.chain_id) for d in drafts} == {(7, 3, 8453)}


@pytest.mark.parametrize(
    ("previous", "status", "kinds"),
    [
        (WalletStatus.ACTIVATING, WalletStatus.ACTIVATED, ["activated"]),
        (WalletStatus.DEACTIVATING, WalletStatus.DEACTIVATED, ["deactivated"]),
        (WalletStatus.RUNNING, WalletStatus.ACTIVATED, []),  # a run ending
        (WalletStatus.EMERGENCY, WalletStatus.ACTIVATED, []),  # the operator's resume
        (WalletStatus.BLOCKED, WalletStatus.ACTIVATED, []),
        (WalletStatus.ACTIVATED, WalletStatus.ACTIVATED, []),  # a mere valuation
        (WalletStatus.ACTIVATING, WalletStatus.DEACTIVATED, []),  # never activated
        (None, WalletStatus.ACTIVATING, []),
    ],
)
def test_only_the_transitions_that_conclude_an_activation_or_deactivation_are_events(
    previous: WalletStatus | None, status: WalletStatus, kinds: list[str]
) -> None:
    assert [d.kind for d in derive(Journal(wallet(status)), previous, None)] == kinds


def test_an_activation_says_where_the_funds_went_and_whether_it_is_a_reactivation() -> None:
    first = derive(Journal(wallet()), WalletStatus.ACTIVATING, None)[0]
    again = replace(wallet(), last_reactivation_date=MOMENT)
    second = derive(Journal(again), WalletStatus.ACTIVATING, None)[0]

    assert first.data["allocation"] == {"aave": str(HUGE - 5)}  # empty positions left out
    assert first.data["idle"] == "5" and first.data["principal"] == str(HUGE)
    assert first.data["reactivation"] is False and second.data["reactivation"] is True


def test_a_deactivation_tells_whether_the_funds_were_paid_out() -> None:
    kept = run(OperationStatus.COMPLETED, (), kind=OperationKind.DEACTIVATE)
    kept = replace(kept, params={"transfer": False})
    journal = Journal(wallet(WalletStatus.DEACTIVATED), operation=kept)

    [event] = derive(journal, WalletStatus.DEACTIVATING, OperationStatus.EXECUTING)
    assert event.data == {"token": TOKEN, "transfer": False, "idle": "5"}


@pytest.mark.parametrize(
    "outcome", [OperationStatus.COMPLETED, OperationStatus.FAILED, OperationStatus.RECOVERED]
)
def test_a_run_that_moved_funds_is_announced_when_it_ends(outcome: str) -> None:
    operation = run(outcome, (*MOVES, step(StepAction.DEPOSIT, "compound", 9, mined=False)))

    [event] = derive(
        Journal(wallet(), operation=operation), WalletStatus.RUNNING, OperationStatus.EXECUTING
    )

    assert event.kind == "run_completed" and event.amount == 40
    assert event.data["outcome"] == outcome and event.data["reason"] == "better APR"
    assert event.data["moves"] == [
        {
            "from_protocol": "moonwell",
            "to_protocol": "",
            "token": TOKEN,
            "amount": "40",
            "tx_hash": "0x" + "11" * 32,
        },
        {
            "from_protocol": "",
            "to_protocol": "aave",
            "token": TOKEN,
            "amount": "40",
            "tx_hash": "0x" + "11" * 32,
        },
    ]


@pytest.mark.parametrize(
    ("operation", "previous"),
    [
        (run(OperationStatus.EXECUTING, MOVES), None),  # stored as planned
        (run(OperationStatus.COMPLETED, ()), OperationStatus.EXECUTING),  # moved nothing
        (run(OperationStatus.NO_ACTION, ()), None),
        (
            run(OperationStatus.COMPLETED, MOVES),
            OperationStatus.COMPLETED,
        ),  # had ended before: stored again
        (
            run(OperationStatus.COMPLETED, MOVES, kind="withdraw"),
            OperationStatus.EXECUTING,
        ),  # not a run
        (run(OperationStatus.WAITING, MOVES), OperationStatus.EXECUTING),
    ],
)
def test_other_operation_commits_announce_no_run(
    operation: Operation, previous: str | None
) -> None:
    journal = Journal(wallet(), operation=operation)
    assert derive(journal, WalletStatus.RUNNING, previous) == []


def test_run_moves_skip_what_the_chain_never_mined() -> None:
    operation = run(
        OperationStatus.FAILED, (MOVES[0], replace(MOVES[1], tx_hash=None, abandoned=True))
    )
    assert [m["from_protocol"] for m in run_moves(operation)] == ["moonwell"]
