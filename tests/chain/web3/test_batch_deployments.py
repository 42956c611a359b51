"""Many Safe accounts deployed at once on the devnet (``Web3Chain.prepare_accounts``):
their code read and their gas estimated in one JSON-RPC batch each, the deployments sent
at consecutive nonces before any is mined, all mined in one block; an account on chain,
one deployed meanwhile by someone else, and one the chain refuses, each answered alone."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from eth_account import Account
from hexbytes import HexBytes
from web3.types import TxData

from support.safe_world import operator_key
from support.web3_chain import ChainEnv
from yieldagent.chain.web3.reader import RpcReader
from yieldagent.domain.errors import InvalidRequest, NotImplementedYet
from yieldagent.domain.partners.safe_accounts import create_proxy_calldata, safe_account_address
from yieldagent.domain.partners.smart_accounts import smart_account_address
from yieldagent.domain.ports.accounts import Provider, SmartAccount

pytestmark = pytest.mark.evm

FRESH = 5


def _safe(env: ChainEnv, owner: str) -> SmartAccount:
    constants = env.chain.config.safe
    assert constants is not None
    collector = env.devnet.manifest.extras["fee_collector"]
    address = safe_account_address(owner, "yield-agent", constants)
    return SmartAccount(
        env.chain.chain_id, owner, "yield-agent", address, 1, Provider.SAFE, collector
    )


def _batches(env: ChainEnv) -> list[list[str]]:
    """From now on, the methods of each JSON-RPC batch the adapter sends."""
    provider: Any = env.chain.w3.provider
    batches: list[list[str]] = []
    batch = provider.make_batch_request

    async def make_batch_request(requests: list[tuple[str, Any]]) -> Any:
        batches.append([str(method) for method, _ in requests])
        return await batch(requests)

    provider.make_batch_request = make_batch_request
    return batches


async def _pending(env: ChainEnv) -> int:
    w3 = env.chain.w3
    return int(await w3.eth.get_transaction_count(env.sender.address, "pending")) - int(
        await w3.eth.get_transaction_count(env.sender.address, "latest")
    )


async def test_accounts_deploy_at_consecutive_nonces_in_one_block(env: ChainEnv) -> None:
    fresh = [_safe(env, Account.create().address) for _ in range(FRESH)]
    deployed = _safe(env, env.owner)  # the fixture's account, on chain already
    owner = Account.create().address
    kernel = SmartAccount(env.chain.chain_id, owner, "k", smart_account_address(owner, "k"), 1)
    operators = _safe(env, Account.from_key(operator_key()).address)
    batches = _batches(env)
    env.deployer.anvil("evm_setAutomine", False)
    try:
        preparing = asyncio.create_task(
            env.chain.prepare_accounts([*fresh[:2], deployed, kernel, operators, *fresh[2:]])
        )
        for _ in range(600):
            if await _pending(env) == FRESH or preparing.done():
                break
            await asyncio.sleep(0.05)
        assert await _pending(env) == FRESH  # all in flight together, none mined
        env.deployer.anvil("evm_mine")
        answers = await asyncio.wait_for(preparing, 60)
    finally:
        env.deployer.anvil("evm_setAutomine", True)

    fresh_answers = [*answers[:2], *answers[5:]]
    assert fresh_answers == [None] * FRESH
    assert answers[2] is None
    assert isinstance(answers[3], NotImplementedYet)
    assert isinstance(answers[4], InvalidRequest)
    for account in fresh:
        assert await env.chain.reader.code(account.address)
    assert await env.chain.reader.code(operators.address) == b""
    block = await env.chain.w3.eth.get_block("latest", full_transactions=True)
    factory = env.chain.config.safe.factory if env.chain.config.safe else ""
    mined = cast(list[TxData], block["transactions"])
    sent = [tx for tx in mined if tx.get("to") == factory]
    nonces = [int(tx["nonce"]) for tx in sent]
    assert nonces == list(range(nonces[0], nonces[0] + FRESH))
    estimates = [b for b in batches if "eth_estimateGas" in b]
    assert estimates == [["eth_estimateGas"] * FRESH]  # one request for all of them
    assert env.chain.gas_used["deploy"] > 0


async def test_an_account_deployed_meanwhile_by_someone_else_counts_as_deployed(
    env: ChainEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken, fresh = _safe(env, Account.create().address), _safe(env, Account.create().address)
    constants = env.chain.config.safe
    assert constants is not None
    stranger = env.deployer.actor("stranger")
    data = create_proxy_calldata(taken.eoa, taken.agent_id, constants)
    sent = env.devnet.w3.eth.send_transaction(
        {"from": stranger, "to": constants.factory, "data": HexBytes(data), "gas": 1_000_000}
    )
    assert env.devnet.w3.eth.wait_for_transaction_receipt(sent)["status"] == 1
    code = RpcReader.code
    stale = {taken.address}

    async def read_before_the_strangers(reader: RpcReader, address: str) -> bytes:
        if address in stale:  # the first read saw no code: the stranger's came right after
            stale.discard(address)
            return b""
        return await code(reader, address)

    monkeypatch.setattr(RpcReader, "code", read_before_the_strangers)
    env.calls.reset()

    assert await env.chain.prepare_accounts([taken, fresh]) == [None, None]
    assert await code(env.chain.reader, fresh.address)
    assert env.calls.methods.count("eth_estimateGas") == 2  # the taken one's reverted
    assert env.calls.methods.count("eth_sendRawTransaction") == 1
