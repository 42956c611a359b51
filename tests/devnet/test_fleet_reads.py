"""The fleet read at one block: an agent cycle over many Safe wallets on the devnet, each
request the service makes counted at the node's proxy (``support.fleet``)."""

from __future__ import annotations

import asyncio
import json

import pytest

from support.fleet import Fleet, fleet

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
