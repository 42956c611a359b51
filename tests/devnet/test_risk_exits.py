"""Each risk switch the devnet has, through the agent on the web3 adapter: activated Safe
wallets hold funds in a pool, the switch trips on chain (thrown by the contract's own admin,
or a price feed that moves), one agent run per wallet, and then the wallets have left (or
added nothing, while withdrawals are paused); partners see it in the protocol listing's
``risk`` (the CatalogService the REST API serves), the wallet's ``status_reason`` while
part of an exit waits for cash, and the ``protocol.risk_changed`` event; and the books agree
with the chain's own logs and balances, to the unit.

The service's parts are built as the service builds them (``composition.compose``) from the
settings the devnet gives it; the devnet is reverted after each test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import Engine

from support.books import assert_books_balance
from support.devnet import Devnet
from support.devnet_books import devnet_chain_books, idle_balance, positions
from support.devnet_service import OPERATOR_KEY, devnet_env, utilization
from support.devnet_time import frozen_time
from yieldagent.catalog import load_catalog
from yieldagent.composition.chains import (
    build_chains,
    safe_chains,
    served_catalog,
    simulated_market,
)
from yieldagent.composition.compose import build_agent, build_lifecycle, load_operator
from yieldagent.config import Settings, load_settings
from yieldagent.devnet import actions, switches
from yieldagent.devnet.morpho import PEGGED_SYMBOL
from yieldagent.domain.agent.runs import Agent
from yieldagent.domain.books.events import RISK_CHANGED
from yieldagent.domain.books.wallets import Wallet
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.money.deposits import ActivationRequest
from yieldagent.domain.money.lifecycle import Lifecycle
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.domain.partners.smart_accounts import DEFAULT_AGENT_ID, account_key
from yieldagent.domain.partners.smart_accounts import open_account as open_smart_account
from yieldagent.domain.ports.accounts import Provider
from yieldagent.servicers.catalog import CatalogServicer
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.events import EventStore
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.runs import RunStore
from yieldagent.storage.smart_accounts import SmartAccountStore
from yieldagent.storage.wallets import WalletStore
from yieldagent.v1 import catalog_pb2

pytestmark = pytest.mark.evm

CHAIN = 8453
UNIT = 10**6
AMOUNT = 20_000 * UNIT
MORPHO = "morpho_gauntlet_usdc_prime"


@dataclass
class Guarded:
    """The service's parts on the devnet: the lifecycle, the agent and the catalog's
    servicer over one database, with chain 8453 on the web3 adapter."""

    devnet: Devnet
    engine: Engine
    lifecycle: Lifecycle
    agent: Agent
    catalog: CatalogServicer
    partner_id: int
    settings: Settings
    operator: str
    owners: int = 0

    async def wallet(self, protocol: str) -> Wallet:
        """A new Safe wallet funded with ``AMOUNT`` and activated in ``protocol`` alone."""
        self.owners += 1
        eoa = self.devnet.w3.to_checksum_address(f"0x{0xD00 + self.owners:040x}")
        catalog = served_catalog(self.settings, load_catalog())
        key = account_key(eoa, CHAIN, DEFAULT_AGENT_ID, catalog.chain_ids())
        safes = safe_chains(self.settings, catalog, self.operator)
        account = open_smart_account(
            SmartAccountStore(self.engine), key, self.partner_id, Provider.SAFE, safes
        )
        deposit = actions.deposit(self.devnet.url, self.devnet.usdc, eoa, account.address, AMOUNT)
        request = ActivationRequest(
            account.address, eoa, self.devnet.usdc, (protocol,), deposit["tx_hash"], Constraints()
        )
        wallet = await self.lifecycle.activate(self.partner_id, CHAIN, request)
        assert self.held(wallet, protocol) >= AMOUNT - 2  # all of it went in
        return wallet

    def held(self, wallet: Wallet, protocol: str) -> int:
        """What ``wallet`` holds in ``protocol``, by the protocol's own getters."""
        return positions(self.devnet.w3, self.devnet.manifest, wallet.address)[protocol]

    def value(self, wallet: Wallet) -> int:
        """What ``wallet`` holds on chain: idle and in every pool."""
        held = positions(self.devnet.w3, self.devnet.manifest, wallet.address)
        return sum(held.values()) + idle_balance(self.devnet.w3, self.devnet.usdc, wallet.address)

    async def risk(self, protocol: str) -> tuple[str, list[str], bool]:
        """The protocol's ``risk`` in the partners' listing: state, reasons, is_active."""
        request = catalog_pb2.ListProtocolsRequest(chain_id=CHAIN, token=self.devnet.usdc)
        listed = await self.catalog.ListProtocols(request, None)
        [found] = [p for p in listed.protocols if p.name == protocol]
        return found.risk.state, list(found.risk.reasons), found.is_active

    async def run(self, wallet: Wallet) -> tuple[str, str]:
        """One agent run of ``wallet``: its outcome's status and reason."""
        outcome = await self.agent.run(CHAIN, wallet.address)
        return outcome.status, outcome.reason

    async def leaves(self, wallet: Wallet, protocol: str) -> None:
        """One agent run of ``wallet`` takes it out of ``protocol``, all of it."""
        status, reason = await self.run(wallet)
        assert (status, reason) == ("completed", f"positions in {protocol} are no longer allowed")
        assert self.held(wallet, protocol) == 0

    def stored(self, wallet: Wallet) -> Wallet:
        found = WalletStore(self.engine).get(CHAIN, wallet.address)
        assert found is not None
        return found

    def told(self, wallet: Wallet) -> list[tuple[str, str, str, list[str]]]:
        """The ``protocol.risk_changed`` events ``wallet`` heard."""
        events = EventStore(self.engine).after(wallet.id, 0, 1_000)
        return [
            (
                e.data["protocol"],
                e.data["previous_state"],
                e.data["state"],
                list(e.data["reasons"]),
            )
            for e in events
            if e.kind == RISK_CHANGED
        ]

    def assert_books(self, wallets: list[Wallet], losses: dict[str, int] | None = None) -> None:
        collector = self.devnet.manifest.extras["fee_collector"]
        reader = devnet_chain_books(self.devnet.w3, self.devnet.manifest, collector, losses)
        assert_books_balance(self.engine, reader, [self.stored(w) for w in wallets], collector)


@pytest.fixture
async def guarded(devnet_snapshot: Devnet, tmp_path: Path) -> AsyncIterator[Guarded]:
    """The service's parts with chain 8453 on the session devnet (reverted afterwards)."""
    url = f"sqlite:///{tmp_path / 'service.db'}"
    env = devnet_env(
        devnet_snapshot,
        tmp_path,
        OPERATOR_KEY,
        YIELDAGENT_DATABASE_URL=url,
        YIELDAGENT_DATA_DIR=str(tmp_path),
    )
    settings = load_settings(env)
    engine = create_db_engine(url)
    migrate(engine)
    operator = await load_operator(settings)
    catalog = served_catalog(settings, load_catalog())
    market = simulated_market(settings, engine, catalog)
    chains = build_chains(settings, engine, market, catalog, operator)
    lifecycle = build_lifecycle(settings, engine, chains, catalog, operator.address)
    agent = build_agent(settings, engine, lifecycle)
    listing = CatalogServicer(catalog, chains, RunStore(engine).paused, risk=lifecycle.risk)
    partner, _ = PartnerStore(engine).create("guarded", PERMISSIONS)
    yield Guarded(
        devnet_snapshot, engine, lifecycle, agent, listing, partner.id, settings, operator.address
    )
    engine.dispose()


async def test_wallets_leave_aave_when_its_usdc_reserve_is_frozen(guarded: Guarded) -> None:
    net = guarded.devnet
    wallets = [await guarded.wallet("aave") for _ in range(2)]
    assert await guarded.risk("aave") == ("ok", [], True)

    switches.aave_freeze(net.d, net.manifest.protocol("aave"), net.usdc, True)
    assert await guarded.risk("aave") == ("exit", ["the reserve is frozen"], False)
    for wallet in wallets:
        await guarded.leaves(wallet, "aave")
        assert guarded.value(wallet) >= AMOUNT  # idle now: the wallet chose aave alone
        assert guarded.stored(wallet).status_reason == ""
        assert guarded.told(wallet) == [("aave", "ok", "exit", ["the reserve is frozen"])]
    guarded.assert_books(wallets)


async def test_an_exit_aave_cannot_pay_at_once_shows_and_ends_as_cash_frees(
    guarded: Guarded,
) -> None:
    net = guarded.devnet
    [wallet] = [await guarded.wallet("aave")]
    with utilization(net, "aave", 0.9999):  # borrowers take nearly all the cash
        switches.aave_freeze(net.d, net.manifest.protocol("aave"), net.usdc, True)
        status, reason = await guarded.run(wallet)
        assert status == "completed", reason
        left = guarded.held(wallet, "aave")
        assert 0 < left < AMOUNT  # what the pool had went out; the rest waits
        waiting = guarded.stored(wallet).status_reason
        assert waiting.startswith("leaving aave as its liquidity frees up"), waiting
        assert "the reserve is frozen" in waiting
    # the borrowers repay (allowed on a frozen reserve): the next run takes the rest
    await guarded.leaves(wallet, "aave")
    assert guarded.stored(wallet).status_reason == ""
    assert guarded.value(wallet) >= AMOUNT - 2  # three moves, each may round a unit off
    guarded.assert_books([wallet])


async def test_paused_aave_takes_no_new_funds_and_its_wallets_wait(guarded: Guarded) -> None:
    net = guarded.devnet
    [wallet] = [await guarded.wallet("aave")]
    held = guarded.held(wallet, "aave")

    switches.aave_pause(net.d, net.manifest.protocol("aave"), net.usdc, True)
    assert await guarded.risk("aave") == ("no_new_funds", ["withdrawals are paused"], True)
    status, _ = await guarded.run(wallet)
    assert status == "no_action"
    assert guarded.held(wallet, "aave") >= held  # nothing could leave; nothing was added
    assert guarded.told(wallet) == [("aave", "ok", "no_new_funds", ["withdrawals are paused"])]
    guarded.assert_books([wallet])


async def test_paused_aave_is_left_once_withdrawals_reopen(guarded: Guarded) -> None:
    net = guarded.devnet
    aave = net.manifest.protocol("aave")
    [wallet] = [await guarded.wallet("aave")]
    switches.aave_pause(net.d, aave, net.usdc, True)
    assert (await guarded.risk("aave"))[0] == "no_new_funds"

    switches.aave_pause(net.d, aave, net.usdc, False)
    reopened = ("exit", ["the pool was paused within the window"], False)
    assert await guarded.risk("aave") == reopened
    await guarded.leaves(wallet, "aave")
    assert guarded.told(wallet)[-1] == ("aave", "no_new_funds", *reopened[:2])
    guarded.assert_books([wallet])


async def test_wallets_leave_the_comet_when_its_supply_is_paused(guarded: Guarded) -> None:
    net = guarded.devnet
    wallets = [await guarded.wallet("compound") for _ in range(2)]

    switches.comet_pause(net.d, net.manifest.protocol("compound"), supply=True)
    assert await guarded.risk("compound") == ("exit", ["supply is paused"], False)
    for wallet in wallets:
        await guarded.leaves(wallet, "compound")
        assert guarded.stored(wallet).status_reason == ""
        assert guarded.told(wallet) == [("compound", "ok", "exit", ["supply is paused"])]
    guarded.assert_books(wallets)


async def test_wallets_leave_the_vault_after_bad_debt_lowers_its_share_price(
    guarded: Guarded,
) -> None:
    net = guarded.devnet
    wallets = [await guarded.wallet(MORPHO) for _ in range(2)]
    assert (await guarded.risk(MORPHO))[0] == "ok"  # the survey saw the share price before

    with frozen_time(net.url):  # no interest blurs what the bad debt took from each
        before = {w.address: guarded.value(w) for w in wallets}
        assert switches.morpho_bad_debt(net.d, net.morpho, net.usdc)
        losses = {w.address: before[w.address] - guarded.value(w) for w in wallets}
    assert all(loss > 0 for loss in losses.values())
    state, reasons, active = await guarded.risk(MORPHO)
    assert (state, active) == ("exit", False)
    assert "the pool's share price fell: a realised loss" in reasons
    for wallet in wallets:
        await guarded.leaves(wallet, MORPHO)
        assert guarded.stored(wallet).status_reason == ""
        [(protocol, previous, state, told)] = guarded.told(wallet)
        assert (protocol, previous, state) == (MORPHO, "ok", "exit")
        assert "the pool's share price fell: a realised loss" in told
    guarded.assert_books(wallets, losses)


async def test_wallets_leave_the_vault_when_a_pegged_collateral_depegs(guarded: Guarded) -> None:
    net = guarded.devnet
    [(_, listed)] = net.manifest.collateral_feeds.items()
    wallets = [await guarded.wallet(MORPHO) for _ in range(2)]

    actions.set_feed_price(net.url, listed["feed"], "0.96")  # 4% off: within the band
    assert (await guarded.risk(MORPHO))[0] == "ok"
    actions.set_feed_price(net.url, listed["feed"], "0.93")
    why = [f"collateral {PEGGED_SYMBOL} is 5% or more below its peg"]
    assert await guarded.risk(MORPHO) == ("exit", why, False)
    for wallet in wallets:
        await guarded.leaves(wallet, MORPHO)
        assert guarded.value(wallet) >= AMOUNT - 2  # a depeg is no loss yet: all came back
        assert guarded.stored(wallet).status_reason == ""
        assert guarded.told(wallet) == [(MORPHO, "ok", "exit", why)]
    guarded.assert_books(wallets)
