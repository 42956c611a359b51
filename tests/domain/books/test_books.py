"""The books come from the chain.

Every scenario ends with the one conservation check (``support.books``): the ledger's
deposits are the chain's inflows, each once; its withdrawals and fees are the chain's
outflows; its principal is deposits less withdrawn principal; and deposits + yield =
value + withdrawn + fees, to the unit, with no negative yield made by our bookkeeping.

The scenarios: a payout the chain refuses, money sent straight to a smart account, the
worker crediting what nobody announced, processes killed at each step of an activation,
a deactivation or a withdrawal and then reconciled by a new process, idempotency keys, a
reactivation racing a rule change, and pools short of cash.

A killed process is ``support.crashing_chain.SimulatedCrash`` raised at a chain call;
the test then lets the leases expire (``expire_leases``) and reconciles with a new
``Lifecycle`` on a chain that works: a new process.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, text

from support.agent_setup import make_agent
from support.agent_world import expire_leases
from support.books import ROUNDING_PER_MOVE, assert_books_balance, chain_books, withdrawal_kind
from support.crashing_chain import CrashingChain, SimulatedCrash, When, to, with_chain
from support.liquidity import drain, pool_cash, refill
from support.wallet_setup import (
    BASE,
    BASE_USDC,
    DAY,
    EOA,
    FEE,
    FEE_BPS,
    OTHER_EOA,
    USDC,
    activated,
    activation,
    chain_value,
    fund,
    make_lifecycle,
    make_reports,
    positions,
    stored,
    top_up_deposit,
)
from yieldagent.chain.simulated.genesis import REWARD_TOKENS
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.books.accounting import WithdrawalSplit
from yieldagent.domain.books.reconciliation import Repair
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.books.wallets import Wallet, WithdrawalRecord
from yieldagent.domain.errors import ChainRejected, ChainUnavailable
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.money.lifecycle import Lifecycle
from yieldagent.domain.ports.credentials import Partner
from yieldagent.simulated_world.state import MinedTx
from yieldagent.storage.runs import RunStore
from yieldagent.storage.wallets import WalletStore

PartnerKey = tuple[Partner, str]
Chains = dict[int, MarketChain]

HOUR = 3600
LARGE = 250_000 * USDC
"""Large enough that activation spreads it over two pools (compound and the Morpho vault
on this seed): two supplies, and two withdrawals to leave them."""


# -- reconciliation and idempotency ---------------------------------------------------------


async def reconcile(lifecycle: Lifecycle) -> list[Repair]:
    """``Lifecycle.reconcile()``: rolls forward or closes every unfinished money operation
    whose lease expired; returns what it repaired."""
    return await lifecycle.reconcile()


async def restarted(engine: Engine, chains: Chains) -> Lifecycle:
    """A new process after a crash: every lease has run out, and a new ``Lifecycle`` on a
    working chain reconciles what the dead one left."""
    expire_leases(engine)
    lifecycle = make_lifecycle(engine, chains)
    await reconcile(lifecycle)
    return lifecycle


async def withdraw(
    lifecycle: Lifecycle, partner_id: int, address: str, amount: int, key: str
) -> WithdrawalRecord:
    """A withdrawal under the idempotency key ``key``."""
    return await lifecycle.withdraw(partner_id, BASE, address, amount, key=key)


# -- reading the chain --------------------------------------------------------------------


def transfers(market: SimulatedMarket, sender: str, recipient: str) -> list[MinedTx]:
    """The chain's USDC transfers from ``sender`` to ``recipient``."""
    return [
        row
        for row in market.history(BASE, sender, 0)
        if row.kind == "transfer"
        and row.token == BASE_USDC
        and row.sender == sender
        and row.recipient == recipient
    ]


def usdc(market: SimulatedMarket, holder: str) -> int:
    """``holder``'s USDC balance on Base."""
    return market.balance(BASE, BASE_USDC, holder)


# -- payouts the chain refuses, money nobody announced ----------------------------------------


async def test_a_failed_payout_leaves_the_funds_idle_and_a_top_up_credits_only_itself(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    owner, _ = partner
    wallet = await activated(make_lifecycle(engine, chains), engine, market, owner.id, 1000 * USDC)
    refusing = CrashingChain(chains[BASE]).fail("transfer", only=to(EOA))
    lifecycle = make_lifecycle(engine, with_chain(chains, refusing))

    # How the chain's refusal reaches the caller is the implementation's choice.
    with contextlib.suppress(Exception):
        await lifecycle.withdraw(owner.id, BASE, wallet.address, 500 * USDC)
    assert refusing.unfired() == []
    assert usdc(market, EOA) == 0
    assert 0 <= 1000 * USDC - chain_value(market, wallet.address) <= ROUNDING_PER_MOVE * 2
    top_up = top_up_deposit(market, wallet.address, 100 * USDC)
    await lifecycle.top_up(owner.id, BASE, wallet.address, top_up)

    saved = stored(engine, wallet.address)
    assert saved.principal == 1100 * USDC
    deposits = WalletStore(engine).deposits(saved.id)
    assert [d.amount for d in deposits] == [1000 * USDC, 100 * USDC]
    assert deposits[-1].tx_hash == top_up
    assert WalletStore(engine).withdrawals(saved.id) == []
    assert_books_balance(engine, market, [saved])


async def test_a_withdrawal_the_chain_refused_frees_its_key_for_a_retry(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    """Nothing reached the user, so the same key may try again (as a 5xx leaves an
    idempotency key free); the retry pays once."""
    owner, _ = partner
    wallet = await activated(make_lifecycle(engine, chains), engine, market, owner.id, 1000 * USDC)
    refusing = CrashingChain(chains[BASE]).fail("transfer", only=to(EOA))

    with pytest.raises(ChainUnavailable):
        await withdraw(
            make_lifecycle(engine, with_chain(chains, refusing)),
            owner.id,
            wallet.address,
            500 * USDC,
            key="k",
        )
    result = await withdraw(
        make_lifecycle(engine, chains), owner.id, wallet.address, 500 * USDC, "k"
    )
    again = await withdraw(
        make_lifecycle(engine, chains), owner.id, wallet.address, 500 * USDC, "k"
    )

    assert again == result
    assert [t.amount for t in transfers(market, wallet.address, EOA)] == [result.split.to_user]
    assert_books_balance(engine, market, [stored(engine, wallet.address)])


async def test_a_revert_reaches_the_caller_unchanged_with_its_reason(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    """An adapter that names the chain's refusal (a revert, with its reason) is not
    second-guessed as unavailable: the caller sees ChainRejected, and nothing moved."""
    owner, _ = partner
    wallet = await activated(make_lifecycle(engine, chains), engine, market, owner.id, 1000 * USDC)

    async def revert() -> None:
        raise ChainRejected("transaction 0x01 reverted: not allowed", "not allowed")

    reverting = CrashingChain(chains[BASE]).hook("transfer", revert, only=to(EOA))
    with pytest.raises(ChainRejected) as refused:
        await withdraw(
            make_lifecycle(engine, with_chain(chains, reverting)),
            owner.id,
            wallet.address,
            500 * USDC,
            key="r",
        )
    # As stored with the operation and replayed: the reason travels in the detail.
    assert refused.value.detail == "transaction 0x01 reverted: not allowed"
    assert reverting.unfired() == []
    assert transfers(market, wallet.address, EOA) == []
    assert_books_balance(engine, market, [stored(engine, wallet.address)])


async def test_a_placement_the_chain_reverts_stops_and_leaves_the_funds_idle(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    owner, _ = partner

    async def revert() -> None:
        raise ChainRejected("transaction 0x02 reverted: paused", "paused")

    reverting = CrashingChain(chains[BASE]).hook("supply", revert)
    lifecycle = make_lifecycle(engine, with_chain(chains, reverting))
    wallet = await activated(lifecycle, engine, market, owner.id, 1000 * USDC)
    assert reverting.unfired() == []
    assert wallet.status == WalletStatus.ACTIVATED
    assert positions(market, wallet.address) == {}  # idle: the agent places it later
    with engine.connect() as connection:
        [reason] = connection.execute(
            text("SELECT reason FROM operations WHERE wallet_id = :id"), {"id": wallet.id}
        ).scalars()
    assert (
        reason == "placement stopped: transaction 0x02 reverted: paused; the agent places the rest"
    )
    assert_books_balance(engine, market, [stored(engine, wallet.address)])


async def test_money_sent_straight_to_the_account_is_principal_not_yield(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 1000 * USDC)
    market.advance(DAY)
    interest = chain_value(market, wallet.address) - 1000 * USDC
    assert 0 < interest < USDC
    market.deposit_from(BASE, BASE_USDC, EOA, wallet.address, 1000 * USDC)  # not announced

    result = await lifecycle.withdraw(owner.id, BASE, wallet.address, 1000 * USDC)

    split = result.split
    assert split.yield_ <= interest  # the tiny real interest, never the deposit
    assert split.principal == 1000 * USDC - split.yield_
    assert split.fee == split.yield_ * FEE_BPS // 10_000
    assert usdc(market, FEE) == split.fee
    assert usdc(market, EOA) == 1000 * USDC - split.fee
    saved = stored(engine, wallet.address)
    assert saved.principal == 2000 * USDC - split.principal
    apr = await make_reports(engine, chains).apr(owner.id, BASE, wallet.address, None, None, False)
    assert 0 <= apr.apr < 50
    assert_books_balance(engine, market, [saved])


async def test_money_the_owner_takes_out_of_the_account_is_an_external_withdrawal_without_fee(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 1000 * USDC)
    market.advance(30 * DAY)
    await lifecycle.operate(BASE, wallet.address, "emergency")  # everything idle
    value = usdc(market, wallet.address)
    assert value > 1000 * USDC
    market.transfer(BASE, BASE_USDC, wallet.address, OTHER_EOA, 300 * USDC)  # not the service

    result = await lifecycle.withdraw(owner.id, BASE, wallet.address, 100 * USDC)

    records = WalletStore(engine).withdrawals(wallet.id)
    assert len(records) == 2
    (taken,) = [w for w in records if withdrawal_kind(w) == "external"]
    assert (taken.amount, taken.fee) == (300 * USDC, 0)
    assert abs(taken.yield_ - 300 * USDC * (value - 1000 * USDC) // value) <= 1
    assert taken.principal == 300 * USDC - taken.yield_
    assert result.split.yield_ > 0  # the pro rata split left the yield's share in the wallet
    assert usdc(market, FEE) == result.split.fee
    assert_books_balance(engine, market, [wallet])


async def test_refresh_credits_a_transfer_nobody_announced_once_by_its_hash(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    owner, _ = partner
    funded = fund(engine, market, owner.id, 1000 * USDC)
    lifecycle = make_lifecycle(engine, chains)
    wallet = await lifecycle.activate(owner.id, BASE, activation(funded.address, funded.tx_hash))
    market.advance(2 * HOUR)
    direct = market.deposit_from(BASE, BASE_USDC, OTHER_EOA, wallet.address, 300 * USDC)

    await lifecycle.refresh(BASE)
    await lifecycle.refresh(BASE)
    await asyncio.gather(  # two replicas' workers at once
        lifecycle.refresh(BASE), make_lifecycle(engine, chains).refresh(BASE)
    )
    market.advance(2 * HOUR)
    await lifecycle.refresh(BASE)

    deposits = WalletStore(engine).deposits(wallet.id)
    assert [(d.tx_hash, d.amount) for d in deposits] == [
        (funded.tx_hash, 1000 * USDC),
        (direct.tx_hash, 300 * USDC),
    ]
    assert deposits[-1].block_number == direct.block_number
    assert deposits[-1].log_index == 0  # the simulator's transfers hold one log each
    saved = stored(engine, wallet.address)
    assert saved.principal == 1300 * USDC
    assert saved.status == WalletStatus.ACTIVATED
    assert_books_balance(engine, market, [saved])


# -- processes killed mid-operation ----------------------------------------------------------

CrashPoint = tuple[str, int, When, str | None]
"""(chain method, its n-th call, before or after it, only calls to this recipient)."""


def _crash_id(point: CrashPoint) -> str:
    method, nth, phase, recipient = point
    whom = {EOA: "-to-eoa", FEE: "-to-fee-collector", None: ""}[recipient]
    return f"{phase}-{method}{whom}-{nth}"


def _crashing(chains: Chains, point: CrashPoint) -> CrashingChain:
    method, nth, phase, recipient = point
    only = to(recipient) if recipient is not None else None
    return CrashingChain(chains[BASE]).crash(method, nth, phase, only)


ACTIVATION_CRASHES: list[CrashPoint] = [
    ("find_transfer", 1, "before", None),
    ("prepare_account", 1, "before", None),  # the account's deployment, never sent
    ("prepare_account", 1, "after", None),  # deployed; the process dies before placing
    ("supply", 1, "before", None),
    ("supply", 1, "after", None),
    ("supply", 2, "before", None),
    ("supply", 2, "after", None),
]


@pytest.mark.parametrize("point", ACTIVATION_CRASHES, ids=_crash_id)
async def test_a_process_killed_mid_activation_leaves_no_wallet_activating(
    engine: Engine,
    market: SimulatedMarket,
    chains: Chains,
    partner: PartnerKey,
    point: CrashPoint,
) -> None:
    owner, _ = partner
    funded = fund(engine, market, owner.id, LARGE)
    crashing = _crashing(chains, point)

    with pytest.raises(SimulatedCrash):
        await make_lifecycle(engine, with_chain(chains, crashing)).activate(
            owner.id, BASE, activation(funded.address, funded.tx_hash)
        )
    assert crashing.unfired() == []
    await restarted(engine, chains)

    wallet = WalletStore(engine).get(BASE, funded.address)
    if wallet is None:  # killed before anything was stored: nothing may have moved
        assert usdc(market, funded.address) == LARGE
        assert positions(market, funded.address) == {}
        return
    assert wallet.status in (WalletStatus.ACTIVATED, WalletStatus.DEACTIVATED)
    lost = LARGE - chain_value(market, funded.address)
    assert 0 <= lost <= ROUNDING_PER_MOVE * chain_books(market, wallet).moves
    assert_books_balance(engine, market, [wallet])


DEACTIVATION_CRASHES: list[CrashPoint] = [
    ("withdraw", 1, "before", None),
    ("withdraw", 1, "after", None),
    ("withdraw", 2, "after", None),
    ("transfer", 1, "before", EOA),
    ("transfer", 1, "after", EOA),  # the user is paid; the process dies before recording it
    ("transfer", 1, "before", FEE),
    ("transfer", 1, "after", FEE),
]


async def _earning_wallet(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner_id: int
) -> tuple[Wallet, int]:
    """A wallet of ``LARGE`` spread over two pools, 30 days on; and its value now."""
    wallet = await activated(make_lifecycle(engine, chains), engine, market, partner_id, LARGE)
    assert len(positions(market, wallet.address)) == 2
    market.advance(30 * DAY)
    return wallet, chain_value(market, wallet.address)


def _assert_paid_out_once(
    engine: Engine, market: SimulatedMarket, wallet: Wallet, value: int
) -> None:
    """Everything the wallet held (``value``, principal ``LARGE``) reached the user once,
    less 10 % of the yield, and one withdrawal records it."""
    (payout,) = transfers(market, wallet.address, EOA)
    (fee,) = transfers(market, wallet.address, FEE)
    assert positions(market, wallet.address) == {}
    assert usdc(market, wallet.address) == 0
    assert 0 <= value - (payout.amount + fee.amount) <= 2 * ROUNDING_PER_MOVE
    (record,) = WalletStore(engine).withdrawals(wallet.id)
    assert (record.amount - record.fee, record.fee) == (payout.amount, fee.amount)
    assert 0 <= (value - LARGE) - record.yield_ <= 2 * ROUNDING_PER_MOVE
    assert record.fee == record.yield_ * FEE_BPS // 10_000 > 0


@pytest.mark.parametrize("point", DEACTIVATION_CRASHES, ids=_crash_id)
async def test_a_process_killed_mid_deactivation_pays_the_user_once(
    engine: Engine,
    market: SimulatedMarket,
    chains: Chains,
    partner: PartnerKey,
    point: CrashPoint,
) -> None:
    owner, _ = partner
    wallet, value = await _earning_wallet(engine, market, chains, owner.id)
    crashing = _crashing(chains, point)

    with pytest.raises(SimulatedCrash):
        await make_lifecycle(engine, with_chain(chains, crashing)).deactivate(
            owner.id, BASE, wallet.address, transfer=True
        )
    assert crashing.unfired() == []
    await restarted(engine, chains)

    assert stored(engine, wallet.address).status == WalletStatus.DEACTIVATED
    _assert_paid_out_once(engine, market, wallet, value)
    assert_books_balance(engine, market, [wallet])


KEEP_IDLE_CRASHES: list[CrashPoint] = [
    ("withdraw", 1, "before", None),
    ("withdraw", 1, "after", None),
    ("withdraw", 2, "before", None),
    ("withdraw", 2, "after", None),
]


@pytest.mark.parametrize("point", KEEP_IDLE_CRASHES, ids=_crash_id)
async def test_a_process_killed_mid_deactivation_without_transfer_leaves_the_funds_idle(
    engine: Engine,
    market: SimulatedMarket,
    chains: Chains,
    partner: PartnerKey,
    point: CrashPoint,
) -> None:
    owner, _ = partner
    wallet, value = await _earning_wallet(engine, market, chains, owner.id)
    crashing = _crashing(chains, point)

    with pytest.raises(SimulatedCrash):
        await make_lifecycle(engine, with_chain(chains, crashing)).deactivate(
            owner.id, BASE, wallet.address, transfer=False
        )
    assert crashing.unfired() == []
    await restarted(engine, chains)

    saved = stored(engine, wallet.address)
    assert saved.status == WalletStatus.DEACTIVATED
    assert positions(market, wallet.address) == {}
    assert 0 <= value - usdc(market, wallet.address) <= 2 * ROUNDING_PER_MOVE
    assert (usdc(market, EOA), usdc(market, FEE)) == (0, 0)
    assert WalletStore(engine).withdrawals(saved.id) == []
    assert saved.principal == LARGE
    assert_books_balance(engine, market, [saved])


@pytest.mark.parametrize(
    "point",
    [("withdraw", 2, "before", None), ("transfer", 1, "before", EOA)],
    ids=_crash_id,
)
async def test_a_chain_error_mid_deactivation_does_not_leave_the_wallet_stuck(
    engine: Engine,
    market: SimulatedMarket,
    chains: Chains,
    partner: PartnerKey,
    point: CrashPoint,
) -> None:
    owner, _ = partner
    wallet, value = await _earning_wallet(engine, market, chains, owner.id)
    method, nth, phase, recipient = point
    refusing = CrashingChain(chains[BASE]).fail(
        method, nth, phase, to(recipient) if recipient else None
    )

    with contextlib.suppress(Exception):
        await make_lifecycle(engine, with_chain(chains, refusing)).deactivate(
            owner.id, BASE, wallet.address, transfer=True
        )
    assert refusing.unfired() == []
    await reconcile(make_lifecycle(engine, chains))  # the worker's next tick

    assert stored(engine, wallet.address).status == WalletStatus.DEACTIVATED
    assert positions(market, wallet.address) == {}
    assert usdc(market, wallet.address) == 0
    paid = usdc(market, EOA) + usdc(market, FEE)
    assert 0 <= value - paid <= 2 * ROUNDING_PER_MOVE
    assert_books_balance(engine, market, [wallet])


# -- idempotency keys --------------------------------------------------------------------------


async def test_a_withdrawal_killed_after_its_payout_is_recorded_once_and_its_retry_pays_nothing(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    owner, _ = partner
    wallet, _ = await _earning_wallet(engine, market, chains, owner.id)
    crashing = CrashingChain(chains[BASE]).crash("transfer", phase="after", only=to(EOA))

    with pytest.raises(SimulatedCrash):
        await withdraw(
            make_lifecycle(engine, with_chain(chains, crashing)),
            owner.id,
            wallet.address,
            10_000 * USDC,
            key="withdrawal-1",
        )
    (payout,) = transfers(market, wallet.address, EOA)
    lifecycle = await restarted(engine, chains)

    (record,) = WalletStore(engine).withdrawals(wallet.id)
    assert record.tx_hash == payout.tx_hash
    assert record.amount == 10_000 * USDC
    assert record.amount - record.fee == payout.amount
    assert record.fee == record.yield_ * FEE_BPS // 10_000 > 0
    assert stored(engine, wallet.address).status == WalletStatus.ACTIVATED

    retry = await withdraw(lifecycle, owner.id, wallet.address, 10_000 * USDC, key="withdrawal-1")

    assert retry.tx_hash == payout.tx_hash
    assert retry.split == WithdrawalSplit(
        record.amount, record.principal, record.yield_, record.fee
    )
    assert transfers(market, wallet.address, EOA) == [payout]
    assert len(transfers(market, wallet.address, FEE)) == 1
    assert len(WalletStore(engine).withdrawals(wallet.id)) == 1
    assert_books_balance(engine, market, [wallet])


async def test_one_key_pays_once_and_another_key_pays_again(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    owner, _ = partner
    wallet, _ = await _earning_wallet(engine, market, chains, owner.id)
    lifecycle = make_lifecycle(engine, chains)

    first = await withdraw(lifecycle, owner.id, wallet.address, 1000 * USDC, key="a")
    again = await withdraw(lifecycle, owner.id, wallet.address, 1000 * USDC, key="a")

    assert again == first
    assert len(transfers(market, wallet.address, EOA)) == 1
    assert len(WalletStore(engine).withdrawals(wallet.id)) == 1

    other = await withdraw(lifecycle, owner.id, wallet.address, 1000 * USDC, key="b")

    assert other.tx_hash != first.tx_hash
    assert len(transfers(market, wallet.address, EOA)) == 2
    assert len(WalletStore(engine).withdrawals(wallet.id)) == 2
    assert usdc(market, EOA) == 2000 * USDC - first.split.fee - other.split.fee
    assert_books_balance(engine, market, [wallet])


# -- a reactivation racing a rule change ---------------------------------------------------------


async def test_a_claim_killed_before_its_claim_was_mined_claims_when_retried(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    """Found by the SIGKILL tests: the claim step is stored, the process dies before the
    chain mines it, and reconciliation must make the claim (not close it with nothing)."""
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(
        lifecycle, engine, market, owner.id, 1000 * USDC, protocols=("moonwell",)
    )
    market.advance(7 * DAY)
    well = REWARD_TOKENS[(BASE, "WELL")].address
    owed = market.accrued_rewards(BASE, wallet.address)[well]
    crashing = CrashingChain(chains[BASE]).crash("claim_rewards", 1, "before")
    with pytest.raises(SimulatedCrash):
        await make_lifecycle(engine, with_chain(chains, crashing)).claim_rewards(
            owner.id, BASE, wallet.address, key="k"
        )

    expire_leases(engine)  # a new process, lease_seconds later
    claimed = await make_lifecycle(engine, chains).claim_rewards(
        owner.id, BASE, wallet.address, key="k"
    )

    assert [(c.token, c.amount) for c in claimed] == [(well, owed)]
    assert market.balance(BASE, well, EOA) == owed
    assert_books_balance(engine, market, [stored(engine, wallet.address)])


@pytest.mark.parametrize("method", ["head", "quotes"])  # reads every activation makes early
async def test_a_reactivation_keeps_a_staking_change_made_while_it_ran(
    engine: Engine,
    market: SimulatedMarket,
    chains: Chains,
    partner: PartnerKey,
    method: str,
) -> None:
    owner, _ = partner
    first = make_lifecycle(engine, chains)
    wallet = await activated(first, engine, market, owner.id, 1000 * USDC)
    await first.deactivate(owner.id, BASE, wallet.address, transfer=False)
    again = top_up_deposit(market, wallet.address, 200 * USDC)
    staking: list[asyncio.Task[None]] = []
    watched = CrashingChain(chains[BASE])
    lifecycle = make_lifecycle(engine, with_chain(chains, watched))

    async def stake_meanwhile() -> None:
        # Not awaited: in a correct activation the wallet's lease is held, and the staking
        # change waits for it.
        staking.append(
            asyncio.create_task(lifecycle.set_reward_staking(owner.id, BASE, wallet.address, True))
        )
        await asyncio.sleep(0.05)

    watched.hook(method, stake_meanwhile)
    await lifecycle.activate(owner.id, BASE, activation(wallet.address, again))
    await asyncio.gather(*staking)

    assert watched.unfired() == []
    saved = stored(engine, wallet.address)
    assert saved.is_staked is True
    assert saved.status == WalletStatus.ACTIVATED
    assert saved.principal == 1200 * USDC
    assert_books_balance(engine, market, [saved])


# -- pools short of cash ---------------------------------------------------------------------------


async def test_a_deactivation_short_of_cash_takes_what_it_can_and_finishes_once_cash_returns(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    """``support.liquidity`` drains the pool: another lender supplies, a day passes so that
    borrowers follow, and the lender takes the pool's cash but half of our position. The
    lender supplying again is the cash coming back."""
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, LARGE)
    held = positions(market, wallet.address)
    thin = "compound"
    assert set(held) == {thin, "morpho_gauntlet_usdc_prime"}
    drain(market, thin, leave=held[thin] // 2)
    value = chain_value(market, wallet.address)
    short = positions(market, wallet.address)[thin] - pool_cash(market, thin)
    assert short > 0

    with contextlib.suppress(Exception):  # answering the partial outcome is the lead's choice
        await lifecycle.deactivate(owner.id, BASE, wallet.address, transfer=True)

    saved = stored(engine, wallet.address)
    assert saved.status == WalletStatus.DEACTIVATING  # not deactivated with funds in a pool
    assert f"in {thin}: not enough cash" in saved.status_reason  # the partner sees why
    left = positions(market, wallet.address)
    assert set(left) == {thin}  # the other pool gave everything
    assert 0 <= left[thin] - short <= ROUNDING_PER_MOVE
    assert pool_cash(market, thin) <= ROUNDING_PER_MOVE  # and this one what it could
    assert_books_balance(engine, market, [saved])

    refill(market, thin, held[thin])
    await restarted(engine, chains)  # the worker's retry

    assert stored(engine, wallet.address).status == WalletStatus.DEACTIVATED
    assert positions(market, wallet.address) == {}
    assert usdc(market, wallet.address) == 0
    paid, fees = usdc(market, EOA), usdc(market, FEE)
    assert 0 <= value - (paid + fees) <= 3 * ROUNDING_PER_MOVE
    assert 0 <= (value - LARGE) * FEE_BPS // 10_000 - fees <= ROUNDING_PER_MOVE
    assert_books_balance(engine, market, [wallet])


async def test_leaving_a_paused_protocol_short_of_cash_takes_what_it_can(
    engine: Engine, market: SimulatedMarket, chains: Chains, partner: PartnerKey
) -> None:
    """The operator's emergency: ``protocol pause`` (``--now`` runs the holders at once)
    on a pool whose cash is less than the wallet holds there (``support.liquidity``)."""
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, LARGE)
    thin = "compound"
    held = positions(market, wallet.address)
    assert thin in held
    drain(market, thin, leave=held[thin] // 2)
    value = chain_value(market, wallet.address)
    before = positions(market, wallet.address)[thin]
    cash = pool_cash(market, thin)
    RunStore(engine).pause(BASE, thin)

    outcome = await make_agent(engine, lifecycle).run(BASE, wallet.address)

    assert outcome.status != "failed", outcome.reason
    assert positions(market, wallet.address).get(thin, 0) <= before - cash + ROUNDING_PER_MOVE
    assert 0 <= value - chain_value(market, wallet.address) <= 4 * ROUNDING_PER_MOVE
    saved = stored(engine, wallet.address)
    assert saved.status == WalletStatus.ACTIVATED
    assert_books_balance(engine, market, [saved])


# -- any sequence of flows -------------------------------------------------------------------------

Step = tuple[str, int]
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("top_up"), st.integers(1, 20_000)),  # announced, whole USDC
        st.tuples(st.just("direct"), st.integers(1, 20_000)),  # sent, never announced
        st.tuples(st.just("withdraw"), st.integers(1, 100)),  # percent of the value
        st.tuples(st.just("wait"), st.integers(1, 48)),  # hours
    ),
    min_size=1,
    max_size=5,
)


@settings(
    max_examples=12,
    deadline=None,
    report_multiple_bugs=False,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a failing example is slow to shrink
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=STEPS, transfer=st.booleans())
async def test_any_sequence_of_flows_keeps_the_books_balanced(
    engine: Engine,
    market: SimulatedMarket,
    chains: Chains,
    partner: PartnerKey,
    steps: list[Step],
    transfer: bool,
) -> None:
    """Deposits announced or not, withdrawals and time, then a deactivation: the books
    balance after every step. Each example has a smart account of its own in one database
    (the fixtures are made once per test, not per example)."""
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(
        lifecycle, engine, market, owner.id, 10_000 * USDC, agent_id=f"flows-{uuid.uuid4().hex}"
    )
    for action, size in steps:
        if action == "top_up":
            tx = top_up_deposit(market, wallet.address, size * USDC)
            await lifecycle.top_up(owner.id, BASE, wallet.address, tx)
        elif action == "direct":  # booked at the worker's next tick
            market.deposit_from(BASE, BASE_USDC, OTHER_EOA, wallet.address, size * USDC)
            await lifecycle.refresh(BASE)
        elif action == "withdraw":
            amount = chain_value(market, wallet.address) * size // 100
            if amount > 0:
                await lifecycle.withdraw(owner.id, BASE, wallet.address, amount)
        else:
            market.advance(size * HOUR)
        assert_books_balance(engine, market, [wallet])

    await lifecycle.deactivate(owner.id, BASE, wallet.address, transfer=transfer)

    assert stored(engine, wallet.address).status == WalletStatus.DEACTIVATED
    assert positions(market, wallet.address) == {}
    assert_books_balance(engine, market, [wallet])
