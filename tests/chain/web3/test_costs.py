"""What the adapter asks of the node: quote reads per block, and calls per transaction."""

from __future__ import annotations

from collections import Counter

import pytest

from support.web3_chain import ChainEnv
from yieldagent.devnet.usdc import ONE_USDC

pytestmark = pytest.mark.evm

PROTOCOLS = ["aave", "compound", "moonwell", "morpho_gauntlet_usdc_prime"]


async def test_every_quote_of_a_block_is_one_batched_request(env: ChainEnv) -> None:
    await env.chain.quotes(env.token, PROTOCOLS)  # resolves the pools' contracts, once
    env.mine()
    env.calls.reset()
    quotes = await env.chain.quotes(env.token, PROTOCOLS)
    assert [q.protocol for q in quotes] == PROTOCOLS
    methods = Counter(env.calls.methods)
    # the head, then one JSON-RPC batch of every pool's eth_call at that block
    assert env.calls.requests == 2
    # the vault: its fee, then three reads for each of its four markets
    assert methods == {"eth_getBlockByNumber": 1, "eth_call": 8 + 10 + 11 + 1 + 3 * 4}
    print(f"\nquotes of {len(PROTOCOLS)} pools: {env.calls.requests} requests, {dict(methods)}")
    env.calls.reset()
    assert await env.chain.quotes(env.token, PROTOCOLS) == quotes
    assert env.calls.methods == ["eth_getBlockByNumber"]  # the same block: the market is kept


@pytest.mark.parametrize("action", ["supply", "withdraw"])
async def test_calls_of_a_transaction(env: ChainEnv, action: str) -> None:
    chain = env.chain
    await chain.supply(env.account, "aave", env.token, 10 * ONE_USDC)
    env.calls.reset()
    if action == "supply":
        await chain.supply(env.account, "aave", env.token, 10 * ONE_USDC)
    else:
        await chain.withdraw(env.account, "aave", env.token, 5 * ONE_USDC)
    methods = Counter(env.calls.methods)
    assert methods["eth_sendRawTransaction"] == 1
    assert methods["eth_estimateGas"] == 1
    assert env.calls.requests <= 12
    print(f"\n{action}: {env.calls.requests} requests, {dict(methods)}")
