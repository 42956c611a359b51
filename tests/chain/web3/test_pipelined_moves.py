"""A batch of moves on the devnet: every account's supply goes out at consecutive nonces
before any is mined, all are mined in one block, and the receipts are booked as single
moves book them; then every account's whole position comes back in a second batch."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from eth_account import Account
from hexbytes import HexBytes

from support.safe_world import operator_key
from support.web3_chain import ChainEnv, count_calls
from yieldagent.chain.signers.local import LocalKeySigner
from yieldagent.chain.web3.adapter import Web3Chain
from yieldagent.devnet.usdc import ONE_USDC, mint
from yieldagent.domain.errors import ChainRejected, NodeUnavailable, NotImplementedYet
from yieldagent.domain.partners.safe_accounts import safe_account_address
from yieldagent.domain.ports.accounts import Provider, SmartAccount
from yieldagent.domain.ports.chain import ChainKind, Send, TxReceipt
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.nonces import NonceStore

pytestmark = pytest.mark.evm

ACCOUNTS = 6
AAVE = "aave"


async def _accounts(env: ChainEnv, count: int) -> list[str]:
    collector = env.devnet.manifest.extras["fee_collector"]
    constants = env.chain.config.safe
    assert constants is not None
    made = []
    for _ in range(count):
        owner = Account.create().address
        account = safe_account_address(owner, "yield-agent", constants)
        await env.chain.prepare_account(
            SmartAccount(
                env.chain.chain_id, owner, "yield-agent", account, 1, Provider.SAFE, collector
            )
        )
        mint(env.deployer, env.token, account, 1_000 * ONE_USDC)
        made.append(account)
    return made


async def _pending(env: ChainEnv) -> int:
    w3 = env.chain.w3
    return int(await w3.eth.get_transaction_count(env.sender.address, "pending")) - int(
        await w3.eth.get_transaction_count(env.sender.address, "latest")
    )


async def _batch_in_one_block(env: ChainEnv, sends: list[Send]) -> list[Any]:
    """Sends ``sends`` with automine off; mines one block once all are in the pool."""
    env.deployer.anvil("evm_setAutomine", False)
    try:
        batch = asyncio.create_task(env.chain.send_many(sends))
        for _ in range(600):
            if await _pending(env) == len(sends) or batch.done():
                break
            await asyncio.sleep(0.05)
        assert await _pending(env) == len(sends)  # all in flight together, none mined
        env.deployer.anvil("evm_mine")
        return await asyncio.wait_for(batch, 60)
    finally:
        env.deployer.anvil("evm_setAutomine", True)


async def test_moves_land_at_consecutive_nonces_in_one_block(env: ChainEnv) -> None:
    accounts = await _accounts(env, ACCOUNTS)
    w3 = env.chain.w3
    supplies = [Send(ChainKind.SUPPLY, a, AAVE, env.token, 600 * ONE_USDC) for a in accounts]
    supplied = await _batch_in_one_block(env, supplies)

    assert all(isinstance(r, TxReceipt) for r in supplied), supplied
    receipts = [r for r in supplied if isinstance(r, TxReceipt)]
    assert len({r.block_number for r in receipts}) == 1
    txs = [await w3.eth.get_transaction(HexBytes(r.tx_hash)) for r in receipts]
    nonces = [int(tx["nonce"]) for tx in txs]
    assert nonces == list(range(nonces[0], nonces[0] + ACCOUNTS))
    assert all(r.amount == 600 * ONE_USDC for r in receipts)
    for account in accounts:
        [held] = [p for p in await env.chain.positions(account, env.token) if p.protocol == AAVE]
        assert held.amount >= 600 * ONE_USDC - 1
        assert await env.chain.token_balance(env.token, account) == 400 * ONE_USDC

    # One account's move cannot be made (more than it holds): only it is refused.
    withdrawals = [
        Send(ChainKind.WITHDRAW, a, AAVE, env.token, 0, whole=True) for a in accounts[1:]
    ] + [Send(ChainKind.SUPPLY, accounts[0], AAVE, env.token, 10_000 * ONE_USDC)]
    returned = await env.chain.send_many(withdrawals)
    assert isinstance(returned[-1], ChainRejected)
    assert all(isinstance(r, TxReceipt) and r.amount is not None for r in returned[:-1])
    for account in accounts[1:]:
        assert await env.chain.token_balance(env.token, account) >= 1_000 * ONE_USDC
    assert env.chain.gas_used[ChainKind.SUPPLY] > 0 and env.chain.gas_used[ChainKind.WITHDRAW] > 0


async def test_a_move_the_node_fails_to_prepare_tells_nothing_of_the_node(
    env: ChainEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "https://node.example/v2/secret-api-key"

    async def unreachable(holder: str) -> list[Any]:
        raise aiohttp.ClientConnectionError(f"cannot connect to {secret}")

    monkeypatch.setattr(env.chain.pools[AAVE], "exit_calls", unreachable)
    whole = Send(ChainKind.WITHDRAW, env.account, AAVE, env.token, 0, whole=True)
    supply = Send(ChainKind.SUPPLY, env.account, AAVE, env.token, ONE_USDC)
    failed, supplied = await env.chain.send_many([whole, supply])

    assert isinstance(failed, NodeUnavailable)
    assert "secret" not in str(failed) and "secret" not in failed.cause
    assert isinstance(supplied, TxReceipt)  # the other move of the batch still went


async def test_a_moves_estimate_is_one_request(env: ChainEnv, tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'nonces.db'}")
    migrate(engine)
    chain = Web3Chain.connect(
        env.devnet.url, env.chain.config, LocalKeySigner(operator_key()), NonceStore(engine)
    )
    calls = count_calls(chain.w3.provider)
    try:
        supply = Send(ChainKind.SUPPLY, env.account, AAVE, env.token, ONE_USDC)
        [supplied] = await chain.send_many([supply])
        assert isinstance(supplied, TxReceipt)
        assert calls.methods.count("eth_estimateGas") == 1
        assert "eth_chainId" not in calls.methods  # web3's validation asks it no more
    finally:
        await chain.w3.provider.disconnect()
        engine.dispose()


async def test_a_batchs_estimates_travel_in_one_request(env: ChainEnv) -> None:
    accounts = await _accounts(env, 3)
    provider: Any = env.chain.w3.provider
    batches: list[list[str]] = []
    batch = provider.make_batch_request

    async def make_batch_request(requests: list[tuple[str, Any]]) -> Any:
        batches.append([str(method) for method, _ in requests])
        return await batch(requests)

    provider.make_batch_request = make_batch_request
    supplies = [Send(ChainKind.SUPPLY, a, AAVE, env.token, ONE_USDC) for a in accounts]
    too_much = Send(ChainKind.SUPPLY, accounts[0], AAVE, env.token, 10_000 * ONE_USDC)

    supplied = await env.chain.send_many([*supplies, too_much])

    assert all(isinstance(r, TxReceipt) for r in supplied[:3])
    assert isinstance(supplied[3], ChainRejected)  # its estimate reverted: its error alone
    assert [b for b in batches if "eth_estimateGas" in b] == [["eth_estimateGas"] * 4]


async def test_a_chain_without_a_module_refuses_each_send_of_a_batch(env: ChainEnv) -> None:
    chain = env.build(module=None)
    sends = [Send(ChainKind.SUPPLY, env.account, AAVE, env.token, ONE_USDC)] * 2
    refused = await chain.send_many(sends)
    assert [type(r) for r in refused] == [NotImplementedYet, NotImplementedYet]
