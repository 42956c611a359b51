"""Background placement: the activation call books the deposits and answers the wallet
``activating``; the worker's pass activates the open activations and makes them due, and
the agent's cycle places their funds."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import pytest
from sqlalchemy import Engine

from support.agent_setup import make_agent
from support.wallet_setup import (
    BASE,
    BASE_USDC,
    USDC,
    activation,
    fund,
    policy,
    positions,
    snapshot,
    stored,
)
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.chain import SimulatedChain
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.composition.clock import SYSTEM_CLOCK
from yieldagent.domain.books.operations import OperationStatus
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.errors import ChainUnavailable, InvalidRequest
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.money.lifecycle import ActivationPlacement, Lifecycle
from yieldagent.domain.ports.accounts import SmartAccount
from yieldagent.domain.ports.chain import BatchDeploys
from yieldagent.domain.ports.credentials import Partner
from yieldagent.storage.operations import OperationStore
from yieldagent.storage.runs import RunStore
from yieldagent.storage.wallets import WalletStore

pytestmark = pytest.mark.usefixtures("books_balance_after")

LATER = 1e12
"""A next run far away: only ``finish_activations`` can make the wallet due."""


class DeployingChain(SimulatedChain):
    """The simulated chain, with accounts that must be deployed, many at once
    (``BatchDeploys``); a deployed account has code, and is never deployed again."""

    def __init__(self, market: SimulatedMarket, chain_id: int) -> None:
        super().__init__(market, chain_id)
        self.deployed: list[str] = []
        """Every deployment made, in order."""
        self.batches: list[list[str]] = []
        """The accounts of each ``prepare_accounts``."""
        self.failing: set[str] = set()
        """Accounts whose deployment the chain refuses."""
        self.dying = False
        """Whether the next batch dies once its deployments are made."""

    async def prepare_account(self, account: SmartAccount) -> None:
        raise AssertionError("deployed one by one")

    async def prepare_accounts(self, accounts: Sequence[SmartAccount]) -> list[Exception | None]:
        await asyncio.sleep(0)
        self.batches.append([a.address for a in accounts])
        answers: list[Exception | None] = []
        for account in accounts:
            if account.address in self.failing:
                answers.append(ChainUnavailable("the node did not answer"))
                continue
            if account.address not in self.deployed:
                self.deployed.append(account.address)
            answers.append(None)
        if self.dying:
            self.dying = False
            raise RuntimeError("the process died after its deployments")
        return answers


async def queued(
    engine: Engine, lifecycle: Lifecycle, market: SimulatedMarket, partner_id: int, count: int
) -> list[str]:
    """``count`` funded wallets activated in background placement: their addresses."""
    addresses = []
    for index in range(1, count + 1):
        eoa = f"0x{index:040x}"
        funded = fund(engine, market, partner_id, 1000 * USDC, eoa=eoa)
        wallet = await lifecycle.activate(
            partner_id, BASE, activation(funded.address, funded.tx_hash, eoa=eoa)
        )
        addresses.append(wallet.address)
    return addresses


def status(engine: Engine, address: str) -> WalletStatus:
    return stored(engine, address).status


def background(engine: Engine, chains: Mapping[int, MarketChain]) -> Lifecycle:
    """The lifecycle as the service builds it in background placement."""
    return Lifecycle(
        WalletStore(engine),
        OperationStore(engine),
        chains,
        load_catalog(),
        policy(),
        SYSTEM_CLOCK,
        RunStore(engine).paused,
        placement=ActivationPlacement.BACKGROUND,
        make_due=RunStore(engine).schedule,
    )


async def test_the_call_answers_activating_with_the_deposit_booked_and_nothing_placed(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    owner, _ = partner
    funded = fund(engine, market, owner.id, 250_000 * USDC)

    lifecycle = background(engine, chains)
    wallet = await lifecycle.activate(
        owner.id, BASE, activation(funded.address, funded.tx_hash), "k1"
    )

    assert wallet.status == WalletStatus.ACTIVATING
    assert positions(market, funded.address) == {}
    assert market.balance(BASE, BASE_USDC, funded.address) == funded.amount
    saved = stored(engine, funded.address)
    assert saved.status == WalletStatus.ACTIVATING
    assert saved.principal == funded.amount
    assert [d.amount for d in WalletStore(engine).deposits(saved.id)] == [funded.amount]
    (operation,) = OperationStore(engine).open_on(saved.id)
    assert operation.status == OperationStatus.EXECUTING
    await lifecycle.finish_activations()  # the worker's pass, for the books' check after


async def test_a_retry_while_activating_answers_the_same_and_moves_nothing(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    owner, _ = partner
    lifecycle = background(engine, chains)
    funded = fund(engine, market, owner.id, 1000 * USDC)
    request = activation(funded.address, funded.tx_hash)
    first = await lifecycle.activate(owner.id, BASE, request, "same")

    again = await lifecycle.activate(owner.id, BASE, request, "same")

    assert again == first
    assert again.status == WalletStatus.ACTIVATING
    assert positions(market, funded.address) == {}
    assert len(WalletStore(engine).deposits(first.id)) == 1
    await lifecycle.finish_activations()


async def test_a_refused_activation_stores_nothing(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    owner, _ = partner
    funded = fund(engine, market, owner.id, 1000 * USDC)
    before = snapshot(engine, market, funded.address)
    impossible = Constraints(min_protocols=99)

    with pytest.raises(InvalidRequest, match="Constraints cannot be met"):
        await background(engine, chains).activate(
            owner.id, BASE, activation(funded.address, funded.tx_hash, constraints=impossible)
        )

    assert snapshot(engine, market, funded.address) == before
    assert before.wallet is None


async def test_one_pass_activates_the_wallets_and_the_agent_places_their_funds(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    owner, _ = partner
    lifecycle = background(engine, chains)
    eoas = [f"0x{index:040x}" for index in range(1, 6)]
    wallets = []
    for eoa in eoas:
        funded = fund(engine, market, owner.id, 250_000 * USDC, eoa=eoa)
        wallets.append(
            await lifecycle.activate(
                owner.id, BASE, activation(funded.address, funded.tx_hash, eoa=eoa)
            )
        )
    runs = RunStore(engine)
    for wallet in wallets:
        runs.schedule(wallet.id, LATER)

    repairs = await lifecycle.finish_activations()

    assert sorted(r.wallet for r in repairs) == sorted(w.address for w in wallets)
    assert {r.status_after for r in repairs} == {WalletStatus.ACTIVATED}
    for wallet in wallets:
        assert stored(engine, wallet.address).status == WalletStatus.ACTIVATED
        assert OperationStore(engine).open_on(wallet.id) == []
        assert positions(market, wallet.address) == {}
    assert await lifecycle.finish_activations() == []  # nothing is finished twice
    claimed = runs.claim_due(SYSTEM_CLOCK.time(), "probe", SYSTEM_CLOCK.time() + 60, 100)
    assert sorted(claimed) == sorted(w.id for w in wallets)
    for wallet in wallets:
        lifecycle.books.leases.release(wallet.id, "probe")

    ran = await make_agent(engine, lifecycle).run_cycle()

    assert ran == len(wallets)
    for wallet in wallets:
        placed = positions(market, wallet.address)
        assert placed
        assert sum(placed.values()) + market.balance(BASE, BASE_USDC, wallet.address) == (
            250_000 * USDC
        )


async def test_a_wallet_held_by_a_live_call_is_skipped(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    owner, _ = partner
    lifecycle = background(engine, chains)
    funded = fund(engine, market, owner.id, 1000 * USDC)
    wallet = await lifecycle.activate(owner.id, BASE, activation(funded.address, funded.tx_hash))
    assert lifecycle.books.leases.try_acquire(wallet.id, "live-call")

    assert await lifecycle.finish_activations() == []
    assert stored(engine, wallet.address).status == WalletStatus.ACTIVATING

    lifecycle.books.leases.release(wallet.id, "live-call")
    (repair,) = await lifecycle.finish_activations()
    assert repair.status_after == WalletStatus.ACTIVATED


async def test_one_pass_deploys_every_account_in_one_batch_and_commits_them_activated(
    engine: Engine, market: SimulatedMarket, partner: tuple[Partner, str]
) -> None:
    owner, _ = partner
    chain = DeployingChain(market, BASE)
    assert isinstance(chain, BatchDeploys)
    lifecycle = background(engine, {BASE: chain})
    addresses = await queued(engine, lifecycle, market, owner.id, 4)

    repairs = await lifecycle.finish_activations()

    assert sorted(r.wallet for r in repairs) == sorted(addresses)
    assert [sorted(batch) for batch in chain.batches] == [sorted(addresses)]
    assert sorted(chain.deployed) == sorted(addresses)
    assert {status(engine, a) for a in addresses} == {WalletStatus.ACTIVATED}
    assert await lifecycle.finish_activations() == []
    assert len(chain.batches) == 1  # nothing is deployed twice


async def test_a_refused_deployment_leaves_only_its_wallet_activating_for_the_next_pass(
    engine: Engine, market: SimulatedMarket, partner: tuple[Partner, str]
) -> None:
    owner, _ = partner
    chain = DeployingChain(market, BASE)
    lifecycle = background(engine, {BASE: chain})
    first, second, third = await queued(engine, lifecycle, market, owner.id, 3)
    chain.failing = {second}

    repairs = await lifecycle.finish_activations()

    assert sorted(r.wallet for r in repairs) == sorted([first, third])
    assert status(engine, second) == WalletStatus.ACTIVATING
    (operation,) = OperationStore(engine).open_on(stored(engine, second).id)
    assert operation.status == OperationStatus.EXECUTING
    assert lifecycle.books.leases.try_acquire(stored(engine, second).id, "probe")  # let go
    lifecycle.books.leases.release(stored(engine, second).id, "probe")

    chain.failing = set()
    (repair,) = await lifecycle.finish_activations()

    assert repair.wallet == second and repair.status_after == WalletStatus.ACTIVATED
    assert chain.batches[-1] == [second]
    assert sorted(chain.deployed) == sorted([first, second, third])


@pytest.mark.unsettled
async def test_a_pass_that_dies_after_its_deployments_deploys_nothing_again(
    engine: Engine, market: SimulatedMarket, partner: tuple[Partner, str]
) -> None:
    owner, _ = partner
    chain = DeployingChain(market, BASE)
    lifecycle = background(engine, {BASE: chain})
    addresses = await queued(engine, lifecycle, market, owner.id, 3)
    chain.dying = True

    assert await lifecycle.finish_activations() == []

    assert {status(engine, a) for a in addresses} == {WalletStatus.ACTIVATING}
    repairs = await lifecycle.finish_activations()
    assert sorted(r.wallet for r in repairs) == sorted(addresses)
    assert sorted(chain.deployed) == sorted(addresses)  # each deployed once


async def test_two_passes_at_once_finish_each_activation_once(
    engine: Engine, market: SimulatedMarket, partner: tuple[Partner, str]
) -> None:
    owner, _ = partner
    chain = DeployingChain(market, BASE)
    one = background(engine, {BASE: chain})
    other = background(engine, {BASE: chain})  # another replica, its own leases
    addresses = await queued(engine, one, market, owner.id, 6)

    first, second = await asyncio.gather(one.finish_activations(), other.finish_activations())

    finished = [r.wallet for r in first + second]
    assert sorted(finished) == sorted(addresses)
    assert sorted(chain.deployed) == sorted(addresses)
    assert {status(engine, a) for a in addresses} == {WalletStatus.ACTIVATED}
