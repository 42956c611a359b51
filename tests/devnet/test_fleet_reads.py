"""The fleet read at one block: an agent cycle over many Safe wallets on the devnet, each
request the service makes counted at the node's proxy (``support.fleet``)."""

from __future__ import annotations

import asyncio
import json

import pytest

from support.fleet import CHAIN, Fleet, fleet
from yieldagent.v1 import catalog_pb2

__all__ = ["fleet"]

pytestmark = pytest.mark.evm

PROTOCOLS = ("aave", "compound", "moonwell", "morpho_gauntlet_usdc_prime")
WALLETS = 40


async def test_a_cycle_that_moves_nothing_reads_the_fleet_in_a_few_requests(
    fleet: Fleet,
) -> None:
    wallets = await fleet.activate_many(WALLETS, PROTOCOLS)
    fleet.make_all_due()
    await fleet.agent.run_cycle()  # places what activation left idle, if anything
    fleet.make_all_due()
    fleet.devnet.d.anvil("evm_mine")
    await asyncio.sleep(1.1)  # a new block, and the kept head (1 s by default) gone
    ran, counts = await fleet.counted_cycle()
    print(
        json.dumps(
            {
                "wallets": ran,
                "requests": counts.requests,
                "eth_calls": counts.eth_calls,
                "multicall_inner_calls": counts.inner_calls,
                "methods": counts.methods,
            }
        )
    )
    assert ran == WALLETS
    assert fleet.runs().get("failed", 0) == 0
    assert counts.transactions == 0
    # the head, the holdings (balances and positions, then the vault's shares in the
    # token), the market and the guards' inputs, the moving costs: none per wallet
    assert counts.requests <= 6
    assert counts.inner_calls >= WALLETS * (1 + len(PROTOCOLS))
    assert fleet.statuses() == {"activated": WALLETS}
    fleet.assert_books(wallets)


async def test_public_reads_answer_from_the_market_read_at_the_kept_head(fleet: Fleet) -> None:
    token = fleet.devnet.usdc
    protocols = catalog_pb2.ListProtocolsRequest(chain_id=CHAIN, token=token)
    tokens = catalog_pb2.ListTokensRequest(chain_id=CHAIN)
    first = await fleet.catalog.ListProtocols(protocols, None)  # resolves the pools, once
    fleet.devnet.d.anvil("evm_mine")
    await asyncio.sleep(1.1)  # a new block, and the kept head gone
    before = fleet.proxy.counts()
    listings = await asyncio.gather(
        *(fleet.catalog.ListProtocols(protocols, None) for _ in range(50)),
        *(fleet.catalog.ListTokens(tokens, None) for _ in range(50)),
    )
    for _ in range(50):
        listings.append(await fleet.catalog.ListProtocols(protocols, None))
    counts = fleet.proxy.counts().minus(before)
    heads = counts.methods.pop("eth_getBlockByNumber")
    # one read of the market and one of the guards' inputs at the block, whoever asks;
    # the head again only once the kept one is older than a second
    assert counts.methods == {"eth_call": 39 + 34}
    assert counts.requests == heads + 2
    assert heads <= 3
    assert [p.name for p in listings[0].protocols] == [p.name for p in first.protocols]
