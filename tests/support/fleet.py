"""A fleet of activated Safe wallets on the test devnet, the service's parts talking to the
node through the benchmarks' counting proxy (``benchmarks.rpc_proxy``), so a test counts
what each cycle asks of the node.

``fleet`` (a fixture) builds the lifecycle, the agent and the catalog's servicer as the
service builds them (``composition.compose``), on SQLite, with chain 8453 on the web3
adapter behind a proxy without a round trip; ``Fleet.activate_many`` funds and activates
wallets a few at a time, as concurrent partner calls would.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from sqlalchemy import Engine, text

from benchmarks.rpc_proxy import RpcCounts, RpcProxy, proxied
from support.books import assert_books_balance
from support.devnet import Devnet
from support.devnet_books import devnet_chain_books
from support.devnet_service import OPERATOR_KEY, devnet_env
from yieldagent.catalog import load_catalog
from yieldagent.chain.web3.adapter import Web3Chain
from yieldagent.composition.chains import (
    build_chains,
    safe_chains,
    served_catalog,
    simulated_market,
)
from yieldagent.composition.compose import build_agent, build_lifecycle, load_operator
from yieldagent.config import Settings, load_settings
from yieldagent.devnet import actions
from yieldagent.domain.agent.runs import Agent
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
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.runs import RunStore
from yieldagent.storage.smart_accounts import SmartAccountStore
from yieldagent.storage.wallets import WalletStore

CHAIN = 8453
UNIT = 10**6
DEPOSIT = 1_000 * UNIT


@dataclass
class Fleet:
    """The service's parts on the devnet, behind the counting proxy."""

    devnet: Devnet
    proxy: RpcProxy
    engine: Engine
    chain: Web3Chain
    lifecycle: Lifecycle
    agent: Agent
    catalog: CatalogServicer
    partner_id: int
    settings: Settings
    operator: str
    owners: int = 0

    async def activate_many(
        self,
        count: int,
        protocols: Sequence[str],
        concurrency: int = 4,
        rules: Constraints | None = None,
        deposit: int = DEPOSIT,
    ) -> list[Wallet]:
        """``count`` new Safe wallets, each funded with ``deposit`` and activated on
        ``protocols`` with ``rules``, ``concurrency`` activations at a time."""
        catalog = served_catalog(self.settings, load_catalog())
        safes = safe_chains(self.settings, catalog, self.operator)
        requests = []
        for _ in range(count):
            self.owners += 1
            eoa = to_checksum_address(keccak(text=f"fleet-owner:{self.owners}")[12:])
            key = account_key(eoa, CHAIN, DEFAULT_AGENT_ID, catalog.chain_ids())
            account = open_smart_account(
                SmartAccountStore(self.engine), key, self.partner_id, Provider.SAFE, safes
            )
            sent = actions.deposit(self.devnet.url, self.devnet.usdc, eoa, account.address, deposit)
            requests.append(
                ActivationRequest(
                    account.address,
                    eoa,
                    self.devnet.usdc,
                    tuple(protocols),
                    sent["tx_hash"],
                    rules or Constraints(),
                )
            )
        gate = asyncio.Semaphore(concurrency)

        async def one(request: ActivationRequest) -> Wallet:
            async with gate:
                return await self.lifecycle.activate(self.partner_id, CHAIN, request)

        return list(await asyncio.gather(*(one(r) for r in requests)))

    def make_all_due(self) -> None:
        """Every wallet's next run: now."""
        with self.engine.begin() as connection:
            connection.execute(text("UPDATE wallet_schedule SET next_run_at = 0"))

    async def counted_cycle(self) -> tuple[int, RpcCounts]:
        """One agent cycle over every due wallet: how many ran, and what it asked."""
        before = self.proxy.counts()
        ran = await self.agent.run_cycle()
        return ran, self.proxy.counts().minus(before)

    def statuses(self) -> dict[str, int]:
        """The wallets, counted by status."""
        with self.engine.connect() as connection:
            rows = connection.execute(text("SELECT status, count(*) FROM wallets GROUP BY status"))
            return {str(status): int(n) for status, n in rows}

    def runs(self) -> dict[str, int]:
        """The agent's run operations, counted by status."""
        with self.engine.connect() as connection:
            rows = connection.execute(
                text("SELECT status, count(*) FROM operations WHERE kind = 'run' GROUP BY status")
            )
            return {str(status): int(n) for status, n in rows}

    def outcomes(self) -> dict[str, int]:
        """The wallets, counted by the outcome of their last run ("" before any)."""
        with self.engine.connect() as connection:
            rows = connection.execute(
                text("SELECT last_outcome, count(*) FROM wallet_schedule GROUP BY last_outcome")
            )
            return {str(outcome): int(n) for outcome, n in rows}

    def failures(self) -> list[str]:
        """Why each wallet's last run failed, for those whose last run failed."""
        with self.engine.connect() as connection:
            rows = connection.execute(
                text("SELECT last_reason FROM wallet_schedule WHERE last_outcome = 'failed'")
            )
            return [str(reason) for (reason,) in rows]

    def stored(self, wallet: Wallet) -> Wallet:
        found = WalletStore(self.engine).get(CHAIN, wallet.address)
        assert found is not None
        return found

    def assert_books(self, wallets: Sequence[Wallet]) -> None:
        """The books of ``wallets`` agree with the chain's logs and balances, to the unit."""
        collector = self.devnet.manifest.extras["fee_collector"]
        reader = devnet_chain_books(self.devnet.w3, self.devnet.manifest, collector, None)
        assert_books_balance(self.engine, reader, [self.stored(w) for w in wallets], collector)


@pytest.fixture
async def fleet(devnet_snapshot: Devnet, tmp_path: Path) -> AsyncIterator[Fleet]:
    """The service's parts with chain 8453 on the session devnet through the proxy
    (the devnet reverted afterwards)."""
    with proxied(devnet_snapshot.url, round_trip=0.0, seed=11) as proxy:
        url = f"sqlite:///{tmp_path / 'service.db'}"
        env = devnet_env(
            devnet_snapshot,
            tmp_path,
            OPERATOR_KEY,
            YIELDAGENT_DATABASE_URL=url,
            YIELDAGENT_DATA_DIR=str(tmp_path),
            YIELDAGENT_HEAD_REUSE_SECONDS="1",
            # anvil mines each transaction at once: a send the failing node swallowed is
            # replaced after 10 s rather than the minute a real chain's fees may need
            YIELDAGENT_TX_TIMEOUT_SECONDS="10",
        )
        env["YIELDAGENT_RPC_URL_8453"] = proxy.url
        settings = load_settings(env)
        engine = create_db_engine(url)
        migrate(engine)
        operator = await load_operator(settings)
        catalog = served_catalog(settings, load_catalog())
        market = simulated_market(settings, engine, catalog)
        chains = build_chains(settings, engine, market, catalog, operator)
        chain = chains[CHAIN]
        assert isinstance(chain, Web3Chain)
        lifecycle = build_lifecycle(settings, engine, chains, catalog, operator.address)
        agent = build_agent(settings, engine, lifecycle)
        listing = CatalogServicer(catalog, chains, RunStore(engine).paused, risk=lifecycle.risk)
        partner, _ = PartnerStore(engine).create("fleet", PERMISSIONS)
        yield Fleet(
            devnet_snapshot,
            proxy,
            engine,
            chain,
            lifecycle,
            agent,
            listing,
            partner.id,
            settings,
            operator.address,
        )
        await chain.w3.provider.disconnect()
        engine.dispose()
