"""A ``Web3Chain`` on the session's devnet, with a fresh Safe account, for each test
(the ``env`` fixture, exposed to tests/chain/web3 by its conftest).

The adapter signs with the operator module's operator key, as the service does on the
devnet, and deploys the account for a fresh owner through Safe's factory. Each test gets its
own nonce store: tests revert the devnet to a snapshot afterwards, and a fresh store starts
from the reverted chain's nonce, so the two never disagree.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from eth_account import Account
from web3 import AsyncHTTPProvider, AsyncWeb3

from support.devnet import Devnet
from support.safe_world import operator_key, safe_world
from yieldagent.chain.signers.local import LocalKeySigner
from yieldagent.chain.web3.adapter import Web3Chain
from yieldagent.chain.web3.transactions import SendSettings, TransactionSender
from yieldagent.composition.deployments import chain_config
from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.usdc import ONE_USDC, mint
from yieldagent.domain.partners.safe_accounts import safe_account_address
from yieldagent.domain.ports.accounts import Provider, SmartAccount
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.nonces import NonceStore

ETHER = 10**18


@dataclass(slots=True)
class CallCounter:
    """JSON-RPC requests (HTTP round trips) and the methods they carried."""

    requests: int = 0
    methods: list[str] = field(default_factory=list)

    def reset(self) -> None:
        self.requests = 0
        self.methods.clear()


def count_calls(provider: Any) -> CallCounter:
    """Counts what goes through ``provider`` from now on."""
    counter = CallCounter()
    single, batch = provider.make_request, provider.make_batch_request

    async def make_request(method: str, params: Any) -> Any:
        counter.requests += 1
        counter.methods.append(str(method))
        return await single(method, params)

    async def make_batch_request(requests: list[tuple[str, Any]]) -> Any:
        counter.requests += 1
        counter.methods.extend(str(m) for m, _ in requests)
        return await batch(requests)

    provider.make_request = make_request
    provider.make_batch_request = make_batch_request
    return counter


@dataclass
class ChainEnv:
    """The adapter under test and the devnet around it."""

    chain: Web3Chain
    devnet: Devnet
    deployer: Deployer
    account: str
    owner: str
    calls: CallCounter
    sender: TransactionSender
    """The operator's sender (the module's operator key)."""
    build: Callable[..., Web3Chain]
    """Another adapter on the same node and operator, with config changes."""

    @property
    def token(self) -> str:
        return self.chain.config.token

    def mint(self, to: str, amount: int) -> None:
        mint(self.deployer, self.token, to, amount)

    def mine(self, blocks: int = 1, seconds: int = 0) -> None:
        if seconds:
            self.deployer.anvil("evm_increaseTime", hex(seconds))
        for _ in range(blocks):
            self.deployer.anvil("evm_mine")


@pytest.fixture
async def env(devnet_snapshot: Devnet, tmp_path: Path) -> AsyncIterator[ChainEnv]:
    """A Web3Chain whose operator acts for a funded Safe account through the module."""
    deployer = Deployer(devnet_snapshot.url)
    operator, owner = Account.from_key(operator_key()), Account.create()
    engine = create_db_engine(f"sqlite:///{tmp_path / 'nonces.db'}")
    await asyncio.to_thread(migrate, engine)
    w3 = AsyncWeb3(AsyncHTTPProvider(devnet_snapshot.url))
    calls = count_calls(w3.provider)  # before the first request: web3 keeps the sender it saw
    sender = TransactionSender(
        w3,
        devnet_snapshot.manifest.chain_id,
        LocalKeySigner(operator.key),
        NonceStore(engine),
        SendSettings(poll_seconds=0.02, receipt_timeout_seconds=30.0),
    )
    collector = devnet_snapshot.manifest.extras["fee_collector"]
    constants = safe_world(devnet_snapshot, collector).constants()
    config = chain_config(devnet_snapshot.manifest, safe=constants)

    def build(**changes: Any) -> Web3Chain:
        return Web3Chain(w3, replace(config, **changes), sender)

    chain = build()
    account = safe_account_address(owner.address, "yield-agent", constants)
    await chain.prepare_account(
        SmartAccount(
            chain.chain_id, owner.address, "yield-agent", account, 1, Provider.SAFE, collector
        )
    )
    mint(deployer, config.token, account, 100_000 * ONE_USDC)
    calls.reset()
    yield ChainEnv(chain, devnet_snapshot, deployer, account, owner.address, calls, sender, build)
    await w3.provider.disconnect()
    engine.dispose()
