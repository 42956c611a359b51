"""The fleet read at one block: an agent cycle over many Safe wallets on the devnet, each
request the service makes counted at the node's proxy (``support.fleet``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

import pytest
from eth_typing import HexStr
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak

from support.devnet_service import utilization
from support.fleet import CHAIN, UNIT, Fleet, fleet
from yieldagent.catalog import load_catalog
from yieldagent.composition.chains import served_catalog
from yieldagent.composition.compose import build_lifecycle
from yieldagent.devnet import actions
from yieldagent.domain.ports.chain import ChainTx
from yieldagent.storage.runs import RunStore
from yieldagent.v1 import catalog_pb2

__all__ = ["fleet"]

pytestmark = pytest.mark.evm

PROTOCOLS = ("aave", "compound", "moonwell", "morpho_gauntlet_usdc_prime")
WALLETS = 40
VAULT = "morpho_gauntlet_usdc_prime"


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
    listings = list(
        await asyncio.gather(*(fleet.catalog.ListProtocols(protocols, None) for _ in range(50)))
    )
    await asyncio.gather(*(fleet.catalog.ListTokens(tokens, None) for _ in range(50)))
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


@pytest.mark.parametrize("failure", ["429", "5xx", "drop", "error"])
async def test_a_node_refusing_a_share_of_requests_leaves_the_books_exact_and_no_wallet_stuck(
    fleet: Fleet, failure: str
) -> None:
    """A third of the requests refused for the whole cycle: the service asks again, each
    run ends (none left `running`), and once the node is back the next cycle's runs,
    those of the wallets whose run failed included, all end well."""
    wallets = await fleet.activate_many(12, PROTOCOLS)
    held = {p: 0 for p in PROTOCOLS}
    for wallet in wallets:
        for position in await fleet.chain.positions(wallet.address, fleet.devnet.usdc):
            held[position.protocol] += position.amount
    least = min(PROTOCOLS, key=lambda p: held[p])
    with utilization(fleet.devnet, least, 0.99):  # its rate jumps: funds move to it
        fleet.make_all_due()
        await asyncio.sleep(1.1)  # the kept head gone: the cycle reads the pushed pool
        fleet.proxy.fail(failure, share=1 / 3, seconds=600, retry_after=1)
        try:
            ran = await fleet.agent.run_cycle()
        finally:
            fleet.proxy.heal()
        refused = fleet.proxy.counts().failures
        after_cycle = fleet.statuses()
        during, failed_while_failing = fleet.outcomes(), fleet.failures()
        await fleet.agent.reconcile()  # as the agent cycle job ends
        after_tick = fleet.statuses()
        fleet.make_all_due()  # the next run of each, a failed one's as of any other
        recovered = await fleet.agent.run_cycle()
        print(
            json.dumps(
                {
                    "failure": failure,
                    "ran": ran,
                    "refused": refused,
                    "after_cycle": after_cycle,
                    "outcomes_while_failing": during,
                    "failed_while_failing": failed_while_failing,
                    "after_tick": after_tick,
                    "outcomes_once_recovered": fleet.outcomes(),
                    "runs": fleet.runs(),
                }
            )
        )
    assert sum(refused.values()) > 0
    assert ran == recovered == len(wallets)
    assert during.get("completed", 0) >= len(wallets) // 2  # most end well meanwhile
    for reason in failed_while_failing:  # a failed run tells neither the node's URL nor words
        assert fleet.proxy.url not in reason and "127.0.0.1" not in reason
        assert "compute units" not in reason and "internal error" not in reason
    assert "running" not in after_cycle
    assert after_tick == {"activated": len(wallets)}
    assert set(fleet.outcomes()) <= {"completed", "no_action"}  # every run ended well
    assert fleet.runs().get("completed", 0) > 0  # and the funds moved to the pushed pool
    assert fleet.statuses() == {"activated": len(wallets)}
    fleet.assert_books(wallets)


async def test_when_a_pools_guard_trips_the_whole_fleet_leaves_it_in_one_cycle(
    fleet: Fleet,
) -> None:
    wallets = await fleet.activate_many(20, (VAULT,))
    [(_, listed)] = fleet.devnet.manifest.collateral_feeds.items()
    assert all(fleet.stored(w).positions.get(VAULT, 0) > 0 for w in wallets)
    assert await fleet.agent.run_cycle() == len(wallets)  # each runs next an interval later
    actions.set_feed_price(fleet.devnet.url, listed["feed"], "0.90")  # the collateral depegs
    await asyncio.sleep(1.1)  # the kept head gone: the cycle reads the fallen feed
    # one wallet is due; every other one would run an interval from now
    RunStore(fleet.engine).schedule(wallets[0].id, 0)
    ran = await fleet.agent.run_cycle()
    assert ran == len(wallets)
    holding = [w.address for w in wallets if fleet.stored(w).positions.get(VAULT, 0) > 0]
    assert holding == []
    assert fleet.runs() == {"completed": len(wallets)}  # one run each, out of the vault
    fleet.assert_books(wallets)


async def test_the_refresh_asks_only_the_safes_whose_module_logs_changed(fleet: Fleet) -> None:
    wallets = await fleet.activate_many(12, ("aave",))
    await fleet.lifecycle.refresh(CHAIN)  # the first: every Safe asked, the cursor stored
    fleet.devnet.d.anvil("evm_mine")
    await asyncio.sleep(1.1)  # the kept head gone: the refresh reads the new block
    before = fleet.proxy.counts()
    await fleet.lifecycle.refresh(CHAIN)
    quiet = fleet.proxy.counts().minus(before)
    print(
        json.dumps({"wallets": len(wallets), "requests": quiet.requests, "methods": quiet.methods})
    )
    assert "eth_getCode" not in quiet.methods  # no Safe asked whether its module is on
    # the module's logs and the fleet's transfers both ways; no history, no holdings
    assert quiet.methods["eth_getLogs"] == 3
    assert quiet.requests <= 4  # and the head, the paused pools' switches: not per wallet

    # the owner of one Safe disables the module (here the Safe itself, impersonated)
    revoked = wallets[0].address
    module = fleet.devnet.manifest.safe.module if fleet.devnet.manifest.safe else ""
    data = HexStr("0xe009cfde" + "00" * 31 + "01" + "00" * 12 + module.removeprefix("0x").lower())
    fleet.devnet.d.fund(revoked, 10**18)
    fleet.devnet.d.anvil("anvil_impersonateAccount", revoked)
    sent = fleet.devnet.w3.eth.send_transaction({"from": revoked, "to": revoked, "data": data})
    assert fleet.devnet.w3.eth.wait_for_transaction_receipt(sent)["status"] == 1
    fleet.devnet.d.anvil("anvil_stopImpersonatingAccount", revoked)
    await asyncio.sleep(1.1)  # the kept head gone: the refresh reads up to the new block
    before = fleet.proxy.counts()
    await fleet.lifecycle.refresh(CHAIN)
    told = fleet.proxy.counts().minus(before)
    assert told.methods.get("eth_getCode") == 1  # that Safe alone
    assert fleet.statuses() == {"activated": len(wallets) - 1, "blocked": 1}
    assert fleet.stored(wallets[0]).status_reason.startswith("the owner revoked the operator")


async def test_the_refresh_books_a_deposit_nobody_announced_from_the_fleets_transfer_logs(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    wallets = await fleet.activate_many(12, ("aave",))
    await fleet.lifecycle.refresh(CHAIN)  # the first: every wallet booked, the cursors stored
    read: list[str] = []
    history, histories = fleet.chain.history, fleet.chain.histories

    async def one(holder: str, since_block: int) -> list[ChainTx]:
        read.append(holder)
        return await history(holder, since_block)

    async def many(holders: Sequence[str], since_block: int) -> dict[str, list[ChainTx]]:
        read.extend(holders)
        return await histories(holders, since_block)

    monkeypatch.setattr(fleet.chain, "history", one)
    monkeypatch.setattr(fleet.chain, "histories", many)
    fleet.devnet.d.anvil("evm_mine")
    await asyncio.sleep(1.1)  # the kept head gone: the refresh reads up to the new block
    before = fleet.proxy.counts()
    await fleet.lifecycle.refresh(CHAIN)
    quiet = fleet.proxy.counts().minus(before)
    assert read == []  # no wallet's history: the watch named none
    assert quiet.methods["eth_getLogs"] == 3  # the module's logs, the transfers both ways

    target = wallets[5]
    principal = fleet.stored(target).principal
    eoa = to_checksum_address(keccak(text="a stranger")[12:])
    actions.deposit(fleet.devnet.url, fleet.devnet.usdc, eoa, target.address, 25 * UNIT)
    await asyncio.sleep(1.1)
    before = fleet.proxy.counts()
    await fleet.lifecycle.refresh(CHAIN)
    told = fleet.proxy.counts().minus(before)
    print(json.dumps({"wallets": len(wallets), "quiet": quiet.methods, "told": told.methods}))
    assert read == [target.address]  # that wallet's history alone
    assert fleet.stored(target).principal == principal + 25 * UNIT

    # a new process over the same database: it reads from the stored cursor
    restarted = build_lifecycle(
        fleet.settings,
        fleet.engine,
        {CHAIN: fleet.chain},
        served_catalog(fleet.settings, load_catalog()),
        fleet.operator,
    )
    other = wallets[8]
    principal = fleet.stored(other).principal
    actions.deposit(fleet.devnet.url, fleet.devnet.usdc, eoa, other.address, 7 * UNIT)
    await asyncio.sleep(1.1)
    read.clear()
    await restarted.refresh(CHAIN)
    assert read == [other.address]
    assert fleet.stored(other).principal == principal + 7 * UNIT
    assert fleet.stored(target).principal > 0
    fleet.assert_books(wallets)
