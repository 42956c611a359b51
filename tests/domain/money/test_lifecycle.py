"""The wallet lifecycle against the simulated chain and a real database: activation, top-up,
withdrawal, deactivation, rewards, rule changes, operator actions and periodic valuation,
checked to the smallest unit on both the ledger and the chain."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest
from sqlalchemy import Engine

from support.wallet_setup import (
    BASE,
    BASE_USDC,
    DAY,
    EOA,
    FEE,
    FEE_BPS,
    OTHER_EOA,
    PROTOCOLS,
    USDC,
    Funded,
    activated,
    activation,
    all_transactions,
    chain_value,
    fund,
    make_lifecycle,
    positions,
    record_account,
    snapshot,
    stored,
    top_up_deposit,
)
from yieldagent.chain.simulated.genesis import REWARD_TOKENS
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.books.apr import PerformancePoint
from yieldagent.domain.books.valuation import moment_of
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.books.wallets import DepositRecord
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.errors import AccessDenied, Conflict, InvalidInput, InvalidRequest
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.money.lifecycle import DEPOSIT_TOO_LARGE, ActivationRequest
from yieldagent.domain.pagination import PageRequest
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.domain.partners.smart_accounts import smart_account_address
from yieldagent.domain.ports.credentials import Partner
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.wallets import WalletStore

pytestmark = pytest.mark.usefixtures("books_balance_after")

PartnerKey = tuple[Partner, str]

WELL = REWARD_TOKENS[(BASE, "WELL")].address
ETHEREUM_USDC = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"
ROUNDING = 2
"""Units a pool may keep per withdrawal from it: its rounding favours the pool."""


def _now(market: SimulatedMarket) -> datetime:
    return moment_of(market.now())


# -- activation ---------------------------------------------------------------------------


async def test_activation_places_the_first_allocation(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    funded = fund(engine, market, owner.id, 250_000 * USDC)

    wallet = await make_lifecycle(engine, chains).activate(
        owner.id, BASE, activation(funded.address, funded.tx_hash)
    )

    assert wallet.status == WalletStatus.ACTIVATED
    placed = positions(market, funded.address)
    idle = market.balance(BASE, BASE_USDC, funded.address)
    assert placed
    assert set(placed) <= set(PROTOCOLS)
    assert idle <= ROUNDING
    assert 0 <= funded.amount - sum(placed.values()) <= ROUNDING * len(placed)
    saved = stored(engine, funded.address)
    assert saved == wallet
    assert saved.positions == placed
    assert saved.idle == idle
    assert saved.principal == funded.amount
    assert saved.selected_protocols == PROTOCOLS
    assert saved.activation_date == _now(market)
    assert saved.last_deactivation_date is None
    assert saved.last_reactivation_date is None
    assert saved.current_apr > 0

    store = WalletStore(engine)
    mined = market.transaction(funded.tx_hash)
    assert mined is not None
    assert store.deposits(saved.id) == [
        DepositRecord(funded.amount, BASE_USDC, funded.tx_hash, mined.block_number, _now(market))
    ]
    history = all_transactions(engine, saved.id)
    assert history[0].action == "deposit"
    assert history[0].tx_hash == funded.tx_hash
    assert history[0].amount == funded.amount
    assert history[0].protocol == ""
    supplies = history[1:]
    assert {t.action for t in supplies} == {"deposit"}
    assert {t.protocol for t in supplies} == set(placed)
    assert sum(t.amount for t in supplies) == funded.amount - idle
    assert len({t.correlation_id for t in supplies}) == 1
    assert store.points(saved.id) == [PerformancePoint(saved.activation_date, 0, funded.amount)]


@dataclass(frozen=True, slots=True)
class Env:
    """What a refused activation is built from: a funded account of the partner."""

    engine: Engine
    market: SimulatedMarket
    partner_id: int
    other_partner_id: int
    funded: Funded


def _unrecorded_account(env: Env) -> ActivationRequest:
    address = smart_account_address(OTHER_EOA)
    tx = env.market.deposit_from(BASE, BASE_USDC, OTHER_EOA, address, 100 * USDC)
    return activation(address, tx.tx_hash, eoa=OTHER_EOA)


def _someone_elses_account(env: Env) -> ActivationRequest:
    return activation(env.funded.address, env.funded.tx_hash, eoa=OTHER_EOA)


def _other_partners_account(env: Env) -> ActivationRequest:
    other = fund(env.engine, env.market, env.other_partner_id, 100 * USDC, eoa=OTHER_EOA)
    return activation(other.address, other.tx_hash, eoa=OTHER_EOA)


def _unsupported_token(env: Env) -> ActivationRequest:
    return activation(env.funded.address, env.funded.tx_hash, token=ETHEREUM_USDC)


def _unknown_protocol(env: Env) -> ActivationRequest:
    return activation(
        env.funded.address, env.funded.tx_hash, protocols=("aave", "no_such_protocol")
    )


def _unknown_transaction(env: Env) -> ActivationRequest:
    return activation(env.funded.address, "0x" + "ab" * 32)


def _transfer_to_another_wallet(env: Env) -> ActivationRequest:
    elsewhere = smart_account_address(EOA, "another-agent")
    tx = env.market.deposit_from(BASE, BASE_USDC, EOA, elsewhere, 100 * USDC)
    return activation(env.funded.address, tx.tx_hash)


def _transfer_of_another_token(env: Env) -> ActivationRequest:
    tx = env.market.deposit_from(BASE, WELL, EOA, env.funded.address, 10**21)
    return activation(env.funded.address, tx.tx_hash)


def _deposit_too_large(env: Env) -> ActivationRequest:
    tx = env.market.deposit_from(BASE, BASE_USDC, EOA, env.funded.address, 1_000_001 * USDC)
    return activation(env.funded.address, tx.tx_hash)


def _no_balance_without_hash(env: Env) -> ActivationRequest:
    return activation(record_account(env.engine, env.partner_id, agent_id="empty"), None)


REFUSALS: list[tuple[Callable[[Env], ActivationRequest], type[Exception], str]] = [
    (_unrecorded_account, InvalidRequest, "is not a smart account created for"),
    (_someone_elses_account, InvalidRequest, "is not a smart account created for"),
    (_other_partners_account, AccessDenied, "another partner"),
    (_unsupported_token, InvalidRequest, "not supported"),
    (_unknown_protocol, InvalidRequest, "no_such_protocol"),
    (_unknown_transaction, InvalidRequest, "not found"),
    (_transfer_to_another_wallet, InvalidRequest, "is not a USDC transfer to"),
    (_transfer_of_another_token, InvalidRequest, "is not a USDC transfer to"),
    (_deposit_too_large, AccessDenied, DEPOSIT_TOO_LARGE),
    (_no_balance_without_hash, InvalidRequest, "No deposit of USDC"),
]


@pytest.mark.parametrize(
    ("build", "error", "message"), REFUSALS, ids=[build.__name__[1:] for build, _, _ in REFUSALS]
)
async def test_refused_activation_stores_nothing(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: PartnerKey,
    partners: PartnerStore,
    build: Callable[[Env], ActivationRequest],
    error: type[Exception],
    message: str,
) -> None:
    owner, _ = partner
    other, _ = partners.create("other", PERMISSIONS)
    env = Env(engine, market, owner.id, other.id, fund(engine, market, owner.id, 100 * USDC))
    request = build(env)
    before = snapshot(engine, market, request.wallet, request.eoa)

    with pytest.raises(error, match=message):
        await make_lifecycle(engine, chains).activate(owner.id, BASE, request)

    assert snapshot(engine, market, request.wallet, request.eoa) == before
    assert before.wallet is None
    assert before.chain_deposits == 0
    assert before.chain_transactions == 0


async def test_activation_refused_by_its_constraints_stores_nothing(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    funded = fund(engine, market, owner.id, 1000 * USDC)
    before = snapshot(engine, market, funded.address)
    impossible = Constraints(min_protocols=len(PROTOCOLS) + 1)

    with pytest.raises(InvalidRequest, match="Constraints cannot be met"):
        await lifecycle.activate(
            owner.id, BASE, activation(funded.address, funded.tx_hash, constraints=impossible)
        )
    refused = snapshot(engine, market, funded.address)
    with contextlib.suppress(Conflict):  # the retry below must work once this is fixed
        await lifecycle.activate(owner.id, BASE, activation(funded.address, funded.tx_hash))

    assert refused == before
    assert stored(engine, funded.address).status == WalletStatus.ACTIVATED


async def test_activation_without_hash_credits_the_smart_accounts_balance(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    funded = fund(engine, market, owner.id, 500 * USDC)

    wallet = await make_lifecycle(engine, chains).activate(
        owner.id, BASE, activation(funded.address, None)
    )

    assert wallet.status == WalletStatus.ACTIVATED
    assert wallet.principal == 500 * USDC
    assert sum(positions(market, funded.address).values()) == 500 * USDC
    (deposit,) = WalletStore(engine).deposits(wallet.id)
    assert deposit.amount == 500 * USDC
    assert deposit.tx_hash is not None  # found in the chain's history, by its transaction
    assert all_transactions(engine, wallet.id)[0].action == "deposit"


async def test_activating_an_active_wallet_is_a_conflict(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 1000 * USDC)
    again = top_up_deposit(market, wallet.address, 100 * USDC)
    before = snapshot(engine, market, wallet.address)

    with pytest.raises(Conflict, match="already active"):
        await lifecycle.activate(owner.id, BASE, activation(wallet.address, again))

    assert snapshot(engine, market, wallet.address) == before
    assert before.chain_deposits == 1


async def test_a_credited_deposit_cannot_reactivate(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    funded = fund(engine, market, owner.id, 1000 * USDC)
    await lifecycle.activate(owner.id, BASE, activation(funded.address, funded.tx_hash))
    await lifecycle.deactivate(owner.id, BASE, funded.address, transfer=False)
    before = snapshot(engine, market, funded.address)

    with pytest.raises(Conflict, match="already credited"):
        await lifecycle.activate(owner.id, BASE, activation(funded.address, funded.tx_hash))

    assert snapshot(engine, market, funded.address) == before
    assert before.wallet is not None
    assert before.wallet.status == WalletStatus.DEACTIVATED


async def test_reactivation_keeps_the_activation_date(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    first = await activated(lifecycle, engine, market, owner.id, 1000 * USDC)
    market.advance(DAY)
    await lifecycle.deactivate(owner.id, BASE, first.address, transfer=True)
    deactivated_at = _now(market)
    market.advance(DAY)
    again = top_up_deposit(market, first.address, 200 * USDC)

    wallet = await lifecycle.activate(owner.id, BASE, activation(first.address, again))

    assert wallet.status == WalletStatus.ACTIVATED
    saved = stored(engine, first.address)
    assert saved.activation_date == first.activation_date
    assert saved.last_deactivation_date == deactivated_at
    assert saved.last_reactivation_date == _now(market)
    assert saved.last_reactivation_date - saved.activation_date == timedelta(days=2)
    assert saved.principal == 200 * USDC
    assert sum(positions(market, first.address).values()) == chain_value(market, first.address)
    assert len(WalletStore(engine).deposits(saved.id)) == 2


# -- withdrawals -----------------------------------------------------------------------


async def test_withdrawal_splits_exactly(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 1000 * USDC)
    market.advance(30 * DAY)
    value = chain_value(market, wallet.address)
    amount = 100 * USDC

    result = await lifecycle.withdraw(owner.id, BASE, wallet.address, amount)

    split = result.split
    assert split.amount == amount == split.principal + split.yield_
    assert split.yield_ == amount * (value - 1000 * USDC) // value
    assert split.yield_ > 0
    assert split.fee == split.yield_ * FEE_BPS // 10_000
    assert split.fee > 0
    assert market.balance(BASE, BASE_USDC, EOA) == amount - split.fee
    assert market.balance(BASE, BASE_USDC, FEE) == split.fee
    assert result.value == (amount - split.fee) / USDC
    assert result.value_in_usd == result.value
    saved = stored(engine, wallet.address)
    assert saved.status == WalletStatus.ACTIVATED
    assert saved.principal == 1000 * USDC - split.principal
    left = chain_value(market, wallet.address)
    assert 0 <= value - amount - left <= ROUNDING
    assert saved.idle + sum(saved.positions.values()) == left
    store = WalletStore(engine)
    (record,) = store.withdrawals(saved.id)
    assert (record.amount, record.principal, record.yield_, record.fee) == (
        split.amount,
        split.principal,
        split.yield_,
        split.fee,
    )
    assert record.tx_hash == result.tx_hash
    assert store.points(saved.id)[-1] == PerformancePoint(_now(market), value, -amount)
    payout = [t for t in all_transactions(engine, saved.id) if t.tx_hash == result.tx_hash]
    assert [(t.action, t.amount) for t in payout] == [("transfer", amount - split.fee)]


async def test_withdrawal_above_the_withdrawable_balance_changes_nothing(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 1000 * USDC)
    market.advance(DAY)
    before = snapshot(engine, market, wallet.address)

    with pytest.raises(InvalidRequest, match="exceeds the withdrawable balance"):
        await lifecycle.withdraw(
            owner.id, BASE, wallet.address, chain_value(market, wallet.address) + 1
        )

    assert snapshot(engine, market, wallet.address) == before


@pytest.mark.parametrize("amount", [0, -1 * USDC])
async def test_non_positive_withdrawal_is_invalid_input(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: PartnerKey,
    amount: int,
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 1000 * USDC)
    before = snapshot(engine, market, wallet.address)

    with pytest.raises(InvalidInput) as raised:
        await lifecycle.withdraw(owner.id, BASE, wallet.address, amount)

    assert [v.loc for v in raised.value.violations] == [("amount",)]
    assert snapshot(engine, market, wallet.address) == before


async def test_withdrawal_from_a_deactivated_wallet_is_a_conflict(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 1000 * USDC)
    await lifecycle.deactivate(owner.id, BASE, wallet.address, transfer=False)
    before = snapshot(engine, market, wallet.address)

    with pytest.raises(Conflict, match="not active"):
        await lifecycle.withdraw(owner.id, BASE, wallet.address, 10 * USDC)

    assert snapshot(engine, market, wallet.address) == before
    assert before.idle == 1000 * USDC


# -- deactivation ----------------------------------------------------------------------


async def test_deactivation_with_transfer_returns_everything_less_the_fee(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 250_000 * USDC)
    market.advance(30 * DAY)
    value = chain_value(market, wallet.address)

    result = await lifecycle.deactivate(owner.id, BASE, wallet.address, transfer=True)

    assert result is not None
    fee = (value - 250_000 * USDC) * FEE_BPS // 10_000
    assert fee > 0
    assert result.split.amount == value
    assert result.split.fee == fee
    assert market.balance(BASE, BASE_USDC, EOA) == value - fee
    assert market.balance(BASE, BASE_USDC, FEE) == fee
    assert market.balance(BASE, BASE_USDC, wallet.address) == 0
    assert all(amount == 0 for amount in positions(market, wallet.address).values())
    saved = stored(engine, wallet.address)
    assert saved.status == WalletStatus.DEACTIVATED
    assert saved.last_deactivation_date == _now(market)
    assert saved.principal == 0
    assert saved.idle == 0
    assert not any(saved.positions.values())
    (record,) = WalletStore(engine).withdrawals(saved.id)
    assert record.amount == value
    assert record.fee == fee


async def test_deactivation_without_transfer_leaves_the_funds_idle(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 250_000 * USDC)
    market.advance(30 * DAY)
    value = chain_value(market, wallet.address)

    result = await lifecycle.deactivate(owner.id, BASE, wallet.address, transfer=False)

    assert result is None
    assert market.balance(BASE, BASE_USDC, wallet.address) == value
    assert all(amount == 0 for amount in positions(market, wallet.address).values())
    assert market.balance(BASE, BASE_USDC, EOA) == 0
    assert market.balance(BASE, BASE_USDC, FEE) == 0
    saved = stored(engine, wallet.address)
    assert saved.status == WalletStatus.DEACTIVATED
    assert saved.last_deactivation_date == _now(market)
    assert saved.principal == 250_000 * USDC
    assert saved.idle == value
    assert WalletStore(engine).withdrawals(saved.id) == []


# -- top-up ---------------------------------------------------------------------------


async def test_top_up_credits_and_places_the_deposit(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 1000 * USDC)
    market.advance(DAY)
    value = chain_value(market, wallet.address)
    tx = top_up_deposit(market, wallet.address, 500 * USDC)

    await lifecycle.top_up(owner.id, BASE, wallet.address, tx)

    saved = stored(engine, wallet.address)
    assert saved.principal == 1500 * USDC
    assert saved.status == WalletStatus.ACTIVATED
    assert market.balance(BASE, BASE_USDC, wallet.address) <= ROUNDING
    assert saved.positions == positions(market, wallet.address)
    assert 0 <= value + 500 * USDC - chain_value(market, wallet.address) <= ROUNDING
    store = WalletStore(engine)
    deposits = store.deposits(saved.id)
    assert [d.amount for d in deposits] == [1000 * USDC, 500 * USDC]
    assert deposits[-1].tx_hash == tx
    assert store.points(saved.id)[-1] == PerformancePoint(_now(market), value, 500 * USDC)
    credited = [t for t in all_transactions(engine, saved.id) if t.tx_hash == tx]
    assert [(t.action, t.amount) for t in credited] == [("deposit", 500 * USDC)]


async def test_top_up_of_a_deactivated_wallet_is_a_conflict(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 1000 * USDC)
    await lifecycle.deactivate(owner.id, BASE, wallet.address, transfer=True)
    tx = top_up_deposit(market, wallet.address, 500 * USDC)
    before = snapshot(engine, market, wallet.address)

    with pytest.raises(Conflict):
        await lifecycle.top_up(owner.id, BASE, wallet.address, tx)

    assert snapshot(engine, market, wallet.address) == before


async def test_a_top_up_is_credited_once(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    funded = fund(engine, market, owner.id, 1000 * USDC)
    await lifecycle.activate(owner.id, BASE, activation(funded.address, funded.tx_hash))
    tx = top_up_deposit(market, funded.address, 300 * USDC)
    await lifecycle.top_up(owner.id, BASE, funded.address, tx)
    before = snapshot(engine, market, funded.address)

    for reused in (tx, funded.tx_hash):  # announced again: booked once, nothing to place
        await lifecycle.top_up(owner.id, BASE, funded.address, reused)

    assert snapshot(engine, market, funded.address) == before
    assert before.wallet is not None
    assert before.wallet.principal == 1300 * USDC


async def test_top_up_with_a_transfer_already_credited_by_balance_is_refused(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    funded = fund(engine, market, owner.id, 500 * USDC)
    await lifecycle.activate(owner.id, BASE, activation(funded.address, None))

    with contextlib.suppress(Conflict, InvalidRequest):  # refusing it is the fix
        await lifecycle.top_up(owner.id, BASE, funded.address, funded.tx_hash)

    assert chain_value(market, funded.address) == 500 * USDC
    saved = stored(engine, funded.address)
    assert saved.principal == 500 * USDC
    assert sum(d.amount for d in WalletStore(engine).deposits(saved.id)) == 500 * USDC


# -- rewards -----------------------------------------------------------------------------


async def test_claimed_rewards_go_to_the_eoa_when_not_staked(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(
        lifecycle, engine, market, owner.id, 1000 * USDC, protocols=("moonwell",)
    )
    market.advance(7 * DAY)
    owed = market.accrued_rewards(BASE, wallet.address)[WELL]
    assert owed > 0
    held = positions(market, wallet.address)

    (claimed,) = await lifecycle.claim_rewards(owner.id, BASE, wallet.address)

    assert (claimed.token, claimed.amount) == (WELL, owed)
    assert market.balance(BASE, WELL, EOA) == owed
    assert market.balance(BASE, WELL, wallet.address) == 0
    assert positions(market, wallet.address) == held
    saved = stored(engine, wallet.address)
    rewards, total = WalletStore(engine).rewards(saved.id, PageRequest(1, 10, True))
    assert total == 1
    (record,) = rewards
    assert (record.token, record.token_symbol, record.amount, record.decimals) == (
        WELL,
        "WELL",
        owed,
        18,
    )
    assert record.is_staked is False
    assert record.dollar_value == pytest.approx(owed / 10**18 * 0.03)
    sent = [t for t in all_transactions(engine, saved.id) if t.token == WELL]
    assert [(t.action, t.amount) for t in sent] == [("transfer", owed)]


async def test_staked_rewards_are_swapped_and_supplied(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(
        lifecycle, engine, market, owner.id, 1000 * USDC, protocols=("moonwell",)
    )
    await lifecycle.set_reward_staking(owner.id, BASE, wallet.address, True)
    market.advance(7 * DAY)
    owed = market.accrued_rewards(BASE, wallet.address)[WELL]
    swapped = market.quote_swap(BASE, WELL, BASE_USDC, owed)
    assert swapped > 0
    held = positions(market, wallet.address)["moonwell"]

    await lifecycle.claim_rewards(owner.id, BASE, wallet.address)

    grown = positions(market, wallet.address)["moonwell"]
    assert 0 <= held + swapped - grown <= ROUNDING
    assert market.balance(BASE, WELL, EOA) == 0
    assert market.balance(BASE, WELL, wallet.address) == 0
    saved = stored(engine, wallet.address)
    assert saved.is_staked is True
    assert saved.positions == {"moonwell": grown}
    assert saved.principal == 1000 * USDC
    (record,), _ = WalletStore(engine).rewards(saved.id, PageRequest(1, 10, True))
    assert record.is_staked is True
    assert record.amount == owed
    history = all_transactions(engine, saved.id)
    (swap,) = [t for t in history if t.action == "swap"]
    assert (swap.token, swap.amount, swap.new_token, swap.amount_out) == (
        WELL,
        owed,
        BASE_USDC,
        swapped,
    )
    supplies = [t for t in history if t.correlation_id == swap.correlation_id and t.protocol]
    assert [(t.action, t.protocol, t.amount) for t in supplies] == [
        ("deposit", "moonwell", swapped)
    ]


async def test_a_second_claim_finds_no_rewards(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(
        lifecycle, engine, market, owner.id, 1000 * USDC, protocols=("moonwell",)
    )
    market.advance(7 * DAY)
    await lifecycle.claim_rewards(owner.id, BASE, wallet.address)
    before = snapshot(engine, market, wallet.address)

    with pytest.raises(InvalidRequest, match="No rewards to claim"):
        await lifecycle.claim_rewards(owner.id, BASE, wallet.address)

    assert snapshot(engine, market, wallet.address) == before
    assert before.rewards == 1


async def test_claim_on_a_deactivated_wallet_is_a_conflict(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(
        lifecycle, engine, market, owner.id, 1000 * USDC, protocols=("moonwell",)
    )
    market.advance(7 * DAY)
    await lifecycle.deactivate(owner.id, BASE, wallet.address, transfer=True)
    before = snapshot(engine, market, wallet.address)

    with pytest.raises(Conflict, match="Agent not active"):
        await lifecycle.claim_rewards(owner.id, BASE, wallet.address)

    assert snapshot(engine, market, wallet.address) == before
    assert market.accrued_rewards(BASE, wallet.address)[WELL] > 0


# -- rules ---------------------------------------------------------------------------------


async def test_update_protocols(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 1000 * USDC)

    with pytest.raises(InvalidRequest, match="bogus"):
        await lifecycle.update_protocols(owner.id, BASE, wallet.address, ["aave", "bogus"])
    assert stored(engine, wallet.address).selected_protocols == PROTOCOLS

    with pytest.raises(InvalidInput) as raised:
        await lifecycle.update_protocols(owner.id, BASE, wallet.address, [])
    assert [v.loc for v in raised.value.violations] == [("protocols",)]
    assert stored(engine, wallet.address).selected_protocols == PROTOCOLS

    await lifecycle.update_protocols(
        owner.id, BASE, wallet.address, ["moonwell", "aave", "moonwell"]
    )
    saved = stored(engine, wallet.address)
    assert saved.selected_protocols == ("moonwell", "aave")
    assert saved.status == WalletStatus.ACTIVATED
    assert saved.principal == wallet.principal
    assert saved.positions == wallet.positions


# -- operator -------------------------------------------------------------------------------


async def test_operator_block_emergency_and_resume(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 250_000 * USDC)
    market.advance(3 * DAY)

    assert (await lifecycle.operate(BASE, wallet.address, "block")).status == WalletStatus.BLOCKED
    before = snapshot(engine, market, wallet.address)
    with pytest.raises(Conflict, match="blocked"):
        await lifecycle.withdraw(owner.id, BASE, wallet.address, 10 * USDC)
    assert snapshot(engine, market, wallet.address) == before

    unblocked = await lifecycle.operate(BASE, wallet.address, "unblock")
    assert unblocked.status == WalletStatus.ACTIVATED

    value = chain_value(market, wallet.address)
    held = positions(market, wallet.address)
    emergency = await lifecycle.operate(BASE, wallet.address, "emergency")
    assert emergency.status == WalletStatus.EMERGENCY
    assert all(amount == 0 for amount in positions(market, wallet.address).values())
    idle = market.balance(BASE, BASE_USDC, wallet.address)
    assert 0 <= value - idle <= ROUNDING * len(held)
    saved = stored(engine, wallet.address)
    assert saved.status == WalletStatus.EMERGENCY
    assert saved.idle == idle
    assert not any(saved.positions.values())
    taken = [t for t in all_transactions(engine, saved.id) if t.action == "withdraw"]
    assert {t.protocol: t.amount for t in taken} == held

    result = await lifecycle.withdraw(owner.id, BASE, wallet.address, 1000 * USDC)
    assert market.balance(BASE, BASE_USDC, EOA) == 1000 * USDC - result.split.fee
    assert market.balance(BASE, BASE_USDC, wallet.address) == idle - 1000 * USDC
    assert stored(engine, wallet.address).status == WalletStatus.EMERGENCY

    resumed = await lifecycle.operate(BASE, wallet.address, "resume")
    assert resumed.status == WalletStatus.ACTIVATED
    assert stored(engine, wallet.address).status == WalletStatus.ACTIVATED


# -- periodic valuation ----------------------------------------------------------------------


async def test_refresh_records_one_point_per_hour(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 250_000 * USDC)
    off = await activated(lifecycle, engine, market, owner.id, 100 * USDC, agent_id="off")
    await lifecycle.deactivate(owner.id, BASE, off.address, transfer=True)
    store = WalletStore(engine)
    points = store.points(wallet.id)
    market.advance(2 * 3600)

    assert await lifecycle.refresh(BASE) == 1

    saved = stored(engine, wallet.address)
    assert saved.valued_at == _now(market)
    assert saved.valued_at - wallet.valued_at == timedelta(hours=2)
    assert saved.positions == positions(market, wallet.address)
    assert sum(saved.positions.values()) > sum(wallet.positions.values())
    assert store.points(wallet.id) == [
        *points,
        PerformancePoint(saved.valued_at, chain_value(market, wallet.address)),
    ]

    assert await lifecycle.refresh(BASE) == 0
    assert len(store.points(wallet.id)) == len(points) + 1
    assert stored(engine, wallet.address) == saved


# -- the ledger agrees with the chain ---------------------------------------------------------


async def test_ledger_agrees_with_the_chain(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 100_000 * USDC)
    results = []
    market.advance(10 * DAY)
    results.append(await lifecycle.withdraw(owner.id, BASE, wallet.address, 10_000 * USDC))
    market.advance(5 * DAY)
    tx = top_up_deposit(market, wallet.address, 40_000 * USDC)
    await lifecycle.top_up(owner.id, BASE, wallet.address, tx)
    market.advance(10 * DAY)
    results.append(await lifecycle.withdraw(owner.id, BASE, wallet.address, 25_000 * USDC))
    market.advance(3 * DAY)
    results.append(await lifecycle.withdraw(owner.id, BASE, wallet.address, 5_000 * USDC + 1))

    store = WalletStore(engine)
    saved = stored(engine, wallet.address)
    deposits = store.deposits(saved.id)
    withdrawals = store.withdrawals(saved.id)
    assert sum(d.amount for d in deposits) == 140_000 * USDC
    assert len(withdrawals) == len(results) == 3
    assert all(w.yield_ > 0 for w in withdrawals)
    assert saved.principal == sum(d.amount for d in deposits) - sum(
        w.principal for w in withdrawals
    )
    for record in withdrawals:
        assert record.principal + record.yield_ == record.amount
        assert record.fee == record.yield_ * FEE_BPS // 10_000
    assert market.balance(BASE, BASE_USDC, EOA) == sum(w.amount - w.fee for w in withdrawals)
    assert market.balance(BASE, BASE_USDC, FEE) == sum(w.fee for w in withdrawals)
    assert [r.split.amount for r in results] == [w.amount for w in withdrawals]

    by_correlation: dict[str | None, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    correlation_of: dict[str, str | None] = {}
    for t in all_transactions(engine, saved.id):
        by_correlation[t.correlation_id][t.action] += t.amount
        correlation_of[t.tx_hash] = t.correlation_id
    for record in withdrawals:
        assert record.tx_hash is not None
        moved = by_correlation[correlation_of[record.tx_hash]]
        assert moved == {
            "withdraw": record.amount,
            "transfer": record.amount - record.fee,
            "fee_transfer": record.fee,
        }
    assert saved.idle + sum(saved.positions.values()) == chain_value(market, wallet.address)
