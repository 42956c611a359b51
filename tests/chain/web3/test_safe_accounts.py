"""The web3 adapter and Safe accounts on the devnet, with the module's real operator key:
deployment through Safe's factory, supplies, withdrawals and payouts through the operator
module, the owner's revocation, and the accounts the adapter refuses."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from eth_abi.abi import encode
from eth_account import Account
from web3 import AsyncHTTPProvider, AsyncWeb3

from support.devnet import Devnet
from support.safe_world import SENTINEL, Signer, operator_key, safe_world
from yieldagent.chain.signers.local import LocalKeySigner
from yieldagent.chain.web3.adapter import Web3Chain
from yieldagent.chain.web3.transactions import SendSettings, TransactionSender
from yieldagent.composition.deployments import chain_config
from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.safe import selector
from yieldagent.devnet.usdc import ONE_USDC, mint
from yieldagent.domain.errors import ChainRejected, Conflict, InvalidRequest, NotImplementedYet
from yieldagent.domain.partners.safe_accounts import safe_account_address
from yieldagent.domain.partners.smart_accounts import smart_account_address
from yieldagent.domain.ports.accounts import Provider, SmartAccount
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.nonces import NonceStore

pytestmark = pytest.mark.evm

COLLECTOR = "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc"


@pytest.fixture
async def chain(devnet_snapshot: Devnet, tmp_path: Path) -> AsyncIterator[Web3Chain]:
    """The adapter as the service builds it on the devnet: the module's operator key."""
    engine = create_db_engine(f"sqlite:///{tmp_path / 'nonces.db'}")
    await asyncio.to_thread(migrate, engine)
    w3 = AsyncWeb3(AsyncHTTPProvider(devnet_snapshot.url))
    key = operator_key()
    sender = TransactionSender(
        w3,
        devnet_snapshot.manifest.chain_id,
        LocalKeySigner(key),
        NonceStore(engine),
        SendSettings(poll_seconds=0.02, receipt_timeout_seconds=30.0),
    )
    world = safe_world(devnet_snapshot, COLLECTOR)
    config = chain_config(devnet_snapshot.manifest, safe=world.constants())
    yield Web3Chain(w3, config, sender)
    await w3.provider.disconnect()
    engine.dispose()


def _account(chain: Web3Chain, owner: str, agent_id: str = "yield-agent") -> SmartAccount:
    assert chain.config.safe is not None
    address = safe_account_address(owner, agent_id, chain.config.safe)
    return SmartAccount(chain.chain_id, owner, agent_id, address, 1, Provider.SAFE, COLLECTOR)


async def test_an_account_is_deployed_once_through_the_factory_and_operated_by_the_module(
    chain: Web3Chain, devnet_snapshot: Devnet
) -> None:
    owner = Account.create().address
    account = _account(chain, owner)
    await chain.check_account(account)  # not deployed yet, deployable
    await chain.prepare_account(account)
    await chain.prepare_account(account)  # deployed: nothing to send
    world = safe_world(devnet_snapshot, COLLECTOR)
    safe = world.safe(account.address)
    assert safe.functions.getOwners().call() == [owner]
    assert safe.functions.isModuleEnabled(world.module.address).call()
    assert chain.gas_used["deploy"] > 0
    assert await chain.revocation(account.address) is None

    token = chain.config.token
    mint(Deployer(devnet_snapshot.url), token, account.address, 1_000 * ONE_USDC)
    supplied = await chain.supply(account.address, "aave", token, 600 * ONE_USDC)
    assert supplied.tx_hash and chain.gas_used["supply"] > 0
    await chain.withdraw(account.address, "aave", token, 100 * ONE_USDC)
    paid, fee = await chain.pay(token, account.address, owner, 90 * ONE_USDC, COLLECTOR, 10**6)
    assert fee is not None and fee.tx_hash == paid.tx_hash and fee.log_index != paid.log_index
    assert await chain.token_balance(token, owner) == 90 * ONE_USDC
    assert await chain.token_balance(token, COLLECTOR) >= 10**6
    history = await chain.history(account.address, supplied.block_number)
    assert [e.kind for e in history] == ["supply", "withdraw", "transfer", "transfer"]
    with pytest.raises(ChainRejected, match="only to its owner"):
        await chain.transfer(token, account.address, COLLECTOR, ONE_USDC)


async def test_the_owners_revocation_is_seen_and_the_module_refuses(
    chain: Web3Chain, devnet_snapshot: Devnet
) -> None:
    owner = Signer(devnet_snapshot.w3, bytes(Account.create().key))
    Deployer(devnet_snapshot.url).fund(owner.address, 10**18)
    account = _account(chain, owner.address)
    await chain.prepare_account(account)
    mint(Deployer(devnet_snapshot.url), chain.config.token, account.address, 10 * ONE_USDC)
    world = safe_world(devnet_snapshot, COLLECTOR)
    disable = selector("disableModule(address,address)") + encode(
        ["address", "address"], [SENTINEL, world.module.address]
    )
    world.owner_safe_tx(owner, account.address, account.address, disable)
    assert "disabled" in str(await chain.revocation(account.address))
    with pytest.raises(ChainRejected):
        await chain.supply(account.address, "aave", chain.config.token, ONE_USDC)
    with pytest.raises(Conflict, match="enableModule"):  # no reactivation meanwhile
        await chain.check_account(account)
    await chain.prepare_account(account)  # deployed: left alone, revoked or not


async def test_kernel_accounts_and_undeployable_safes_are_refused(chain: Web3Chain) -> None:
    owner = Account.create().address
    kernel = SmartAccount(chain.chain_id, owner, "k", smart_account_address(owner, "k"), 1)
    with pytest.raises(NotImplementedYet, match="Kernel"):
        await chain.check_account(kernel)
    safe = _account(chain, owner)
    without = Web3Chain(chain.w3, replace(chain.config, safe=None), chain._sender)
    with pytest.raises(NotImplementedYet, match="cannot deploy"):
        await without.check_account(safe)
    elsewhere = replace(safe, fee_collector=owner)  # its address was made with another one
    with pytest.raises(InvalidRequest, match="other contracts"):
        await chain.check_account(elsewhere)


async def test_an_account_the_operator_owns_is_refused_before_it_is_deployed(
    chain: Web3Chain,
) -> None:
    operator = Account.from_key(operator_key()).address
    account = _account(chain, operator)
    with pytest.raises(InvalidRequest, match="operator key"):
        await chain.prepare_account(account)
    assert await chain.reader.code(account.address) == b""
