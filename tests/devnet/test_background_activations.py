"""Background placement on the devnet: the partner's calls book the deposits and send
nothing; the worker's job deploys every open activation's Safe account at once, at
consecutive nonces, and the agent's cycle places the funds; the books agree with the chain
(``support.fleet``)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import cast

import pytest
from eth_utils.address import to_checksum_address
from web3.types import TxData

from support.fleet import CHAIN, Fleet, fleet
from yieldagent.catalog import load_catalog
from yieldagent.composition.chains import served_catalog
from yieldagent.composition.compose import activation_placement, build_agent, build_lifecycle
from yieldagent.domain.books.wallet_states import WalletStatus

__all__ = ["fleet"]

pytestmark = pytest.mark.evm

PROTOCOLS = ("aave", "compound", "moonwell", "morpho_gauntlet_usdc_prime")
WALLETS = 6


async def _pending(fleet: Fleet) -> int:
    w3, operator = fleet.chain.w3, to_checksum_address(fleet.operator)
    return int(await w3.eth.get_transaction_count(operator, "pending")) - int(
        await w3.eth.get_transaction_count(operator, "latest")
    )


async def test_the_job_deploys_the_accounts_together_and_the_agent_places_the_funds(
    fleet: Fleet,
) -> None:
    settings = replace(fleet.settings, activation_placement="background")
    catalog = served_catalog(settings, load_catalog())
    lifecycle = build_lifecycle(
        settings, fleet.engine, {CHAIN: fleet.chain}, catalog, fleet.operator
    )
    fleet.lifecycle = lifecycle
    before = fleet.proxy.counts()
    wallets = await fleet.activate_many(WALLETS, PROTOCOLS)

    assert fleet.proxy.counts().minus(before).transactions == 0
    assert {w.status for w in wallets} == {WalletStatus.ACTIVATING}
    for wallet in wallets:
        assert await fleet.chain.reader.code(wallet.address) == b""

    first = fleet.devnet.w3.eth.block_number + 1
    job = activation_placement(build_agent(settings, fleet.engine, lifecycle), lifecycle, bool)
    fleet.devnet.d.anvil("evm_setAutomine", False)
    try:
        running = asyncio.ensure_future(job())
        for _ in range(600):
            if await _pending(fleet) == WALLETS or running.done():
                break
            await asyncio.sleep(0.05)
        assert await _pending(fleet) == WALLETS  # every deployment in flight, none mined
    finally:
        fleet.devnet.d.anvil("evm_setAutomine", True)
        fleet.devnet.d.anvil("evm_mine")
    await asyncio.wait_for(running, 120)

    assert fleet.statuses() == {WalletStatus.ACTIVATED: WALLETS}
    safe = fleet.chain.config.safe
    assert safe is not None
    block = fleet.devnet.w3.eth.get_block(first, full_transactions=True)
    mined = cast(list[TxData], block["transactions"])
    deployments = [tx for tx in mined if tx.get("to") == safe.factory]
    assert len(deployments) == WALLETS  # all in the one block
    nonces = [int(tx["nonce"]) for tx in deployments]
    assert nonces == list(range(nonces[0], nonces[0] + WALLETS))
    for wallet in wallets:
        assert await fleet.chain.reader.code(wallet.address)
        assert sum(fleet.stored(wallet).positions.values()) > 0  # placed by the agent
    fleet.assert_books(wallets)
