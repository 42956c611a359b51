"""The ledger's rules, on chain events made up here: no database, no chain."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from yieldagent.domain.books.accounting import WithdrawalSplit
from yieldagent.domain.books.ledger import book, hold_back, key_of, pro_rata
from yieldagent.domain.books.operations import Step, StepAction
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.books.wallets import Wallet, WithdrawalKind
from yieldagent.domain.catalog import TokenInfo
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.ports.chain import ChainKind, ChainTx

ACCOUNT = "0x" + "aa" * 20
EOA = "0x" + "ee" * 20
STRANGER = "0x" + "55" * 20
COLLECTOR = "0x" + "fe" * 20
USDC = "0x" + "c0" * 20
WELL = "0x" + "77" * 20
TOKEN = TokenInfo(USDC, "USDC", 6, 1.0, ())
MOMENT = datetime(2026, 1, 1, tzinfo=UTC)


def _wallet(principal: int = 0) -> Wallet:
    return Wallet(
        id=1,
        chain_id=8453,
        address=ACCOUNT,
        eoa=EOA,
        partner_id=1,
        status=WalletStatus.ACTIVATED,
        token=USDC,
        selected_protocols=("aave",),
        constraints=Constraints(),
        principal=principal,
        positions={},
        idle=0,
        current_apr=0.0,
        valued_at=MOMENT,
        is_staked=False,
        activation_date=MOMENT,
        last_deactivation_date=None,
        last_reactivation_date=None,
    )


_hashes = iter(range(1, 10**9))


def _tx(kind: str, sender: str, recipient: str, amount: int, token: str = USDC) -> ChainTx:
    return ChainTx(
        f"0x{next(_hashes):064x}", ChainKind(kind), token, sender, recipient, amount, 100, 0
    )


def test_any_inflow_is_principal_and_moves_are_not() -> None:
    deposit = _tx("transfer", STRANGER, ACCOUNT, 700)
    events = [
        deposit,
        _tx("supply", ACCOUNT, "aave", 500),
        _tx("withdraw", "aave", ACCOUNT, 100),
        _tx("claim", "0x" + "fa" * 20, ACCOUNT, 9, token=WELL),
        _tx("transfer", STRANGER, ACCOUNT, 5, token=WELL),  # another token: not booked
    ]

    booking = book(_wallet(), TOKEN, events, set(), {}, value_now=700)

    assert booking.principal == 700
    assert [(d.amount, d.tx_hash) for d in booking.deposits] == [(700, deposit.tx_hash)]
    assert booking.withdrawals == []
    assert booking.flow == 700
    assert [t.action for t in booking.transactions] == ["deposit", "deposit", "withdraw"]


def test_known_events_are_not_booked_again() -> None:
    deposit = _tx("transfer", STRANGER, ACCOUNT, 700)

    booking = book(_wallet(700), TOKEN, [deposit, deposit], {key_of(deposit)}, {}, 700)

    assert booking.empty
    assert booking.principal == 700


def test_a_payout_carries_its_operations_split_and_its_fee_is_history_only() -> None:
    split = WithdrawalSplit(amount=1_000, principal=900, yield_=100, fee=10)
    payout = _tx("transfer", ACCOUNT, EOA, split.to_user)
    fee = _tx("transfer", ACCOUNT, COLLECTOR, split.fee)
    steps = {
        key_of(payout): (
            "op",
            Step(StepAction.PAYOUT, USDC, split.to_user, recipient=EOA, split=split),
        ),
        key_of(fee): ("op", Step(StepAction.FEE, USDC, split.fee, recipient=COLLECTOR)),
    }

    booking = book(_wallet(2_000), TOKEN, [payout, fee], set(), steps, value_now=1_100)

    [withdrawal] = booking.withdrawals
    assert (withdrawal.kind, withdrawal.amount, withdrawal.principal, withdrawal.fee) == (
        WithdrawalKind.SERVICE,
        1_000,
        900,
        10,
    )
    assert booking.principal == 1_100
    assert booking.flow == -1_000
    assert [(t.action, t.correlation_id) for t in booking.transactions] == [
        ("transfer", "op"),
        ("fee_transfer", "op"),
    ]


def test_an_outflow_the_service_did_not_make_is_external_pro_rata_without_fee() -> None:
    # 1,000 of principal in a wallet worth 1,200 just before the owner takes 600 out.
    taken = _tx("transfer", ACCOUNT, STRANGER, 600)

    booking = book(_wallet(1_000), TOKEN, [taken], set(), {}, value_now=600)

    [withdrawal] = booking.withdrawals
    assert (withdrawal.kind, withdrawal.fee) == (WithdrawalKind.EXTERNAL, 0)
    assert (withdrawal.principal, withdrawal.yield_) == (500, 100)  # 600 × 200/1200 yield
    assert booking.principal == 500
    assert booking.transactions[0].action == "external"


@given(
    amount=st.integers(1, 10**30),
    value_before=st.integers(1, 10**30),
    principal=st.integers(0, 10**30),
)
def test_an_external_split_never_takes_more_principal_than_there_is(
    amount: int, value_before: int, principal: int
) -> None:
    split = pro_rata(amount, value_before, principal)

    assert split.principal + split.yield_ == amount
    assert 0 <= split.principal <= principal
    assert split.yield_ >= 0
    assert split.fee == 0


@given(
    flows=st.lists(
        st.tuples(st.sampled_from(["in", "out"]), st.integers(1, 10**12)), min_size=1, max_size=8
    ),
    growth=st.integers(0, 10**9),
)
def test_booking_any_flows_keeps_principal_whole_and_never_negative(
    flows: list[tuple[str, int]], growth: int
) -> None:
    value = 0
    events = []
    for direction, amount in flows:
        if direction == "in":
            events.append(_tx("transfer", STRANGER, ACCOUNT, amount))
            value += amount
        elif value > 0:
            taken = min(amount, value)
            events.append(_tx("transfer", ACCOUNT, STRANGER, taken))
            value -= taken

    booking = book(_wallet(), TOKEN, events, set(), {}, value_now=value + growth)

    deposited = sum(d.amount for d in booking.deposits)
    taken_principal = sum(w.principal for w in booking.withdrawals)
    assert booking.principal == deposited - taken_principal >= 0
    assert all(w.principal + w.yield_ == w.amount for w in booking.withdrawals)
    assert booking.flow == value - 0


# -- confirmations -------------------------------------------------------------------------


def _at(event: ChainTx, block: int) -> ChainTx:
    return replace(event, block_number=block)


def test_a_deposit_waits_for_its_confirmations_and_its_value_is_set_aside() -> None:
    old = _at(_tx("transfer", STRANGER, ACCOUNT, 700), 100)
    fresh = _at(_tx("transfer", STRANGER, ACCOUNT, 300), 105)
    taken, pending = hold_back([old, fresh], _wallet(), 103, set())
    assert taken == [old]
    assert pending == 300
    booking = book(_wallet(), TOKEN, taken, set(), {}, 1_000 - pending)
    assert booking.principal == 700  # the unconfirmed 300 is neither principal nor yield


def test_the_services_own_steps_are_taken_at_once() -> None:
    supply = _at(_tx("supply", ACCOUNT, "aave", 500), 105)
    taken, pending = hold_back([supply], _wallet(), 103, {key_of(supply)})
    assert taken == [supply]
    assert pending == 0


def test_an_unconfirmed_outflow_is_held_back_too() -> None:
    spent = _at(_tx("transfer", ACCOUNT, STRANGER, 40), 104)
    taken, pending = hold_back([spent], _wallet(), 103, set())
    assert (taken, pending) == ([], -40)
