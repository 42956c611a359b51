"""The admin's changes of the operator module are seen: a proposal reaches every wallet on
the chain once (its stream and its partner's webhook), across restarts of the watch, only
once its block has its confirmations, and stays pending, with its effective time, until
the admin applies or cancels it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from eth_utils.address import to_checksum_address
from sqlalchemy import Engine, update

from support.devnet import Devnet
from support.wallet_setup import OTHER_EOA, USDC, activated, make_lifecycle
from support.webhook_delivery import LOCAL, Clock, deliverer
from support.webhook_receiver import Receiver
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.chain.web3.module_changes import Web3ModuleChanges
from yieldagent.chain.web3.module_listing import Kind, Rule, rule_change, token_change
from yieldagent.composition.chains import module_change_sources
from yieldagent.composition.compose import module_change_watch
from yieldagent.config import load_settings
from yieldagent.devnet.anvil import rpc
from yieldagent.devnet.safe import TIMELOCK_DELAY, module_at
from yieldagent.domain.books.events import MODULE_CHANGE_PROPOSED, WalletEvent
from yieldagent.domain.books.module_changes import watch_module_changes
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.domain.ports.credentials import Partner
from yieldagent.servicers.events import wallet_event
from yieldagent.storage.events import EventStore
from yieldagent.storage.module_changes import ModuleChangeStore
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.tables import ModuleChangeCursorRow
from yieldagent.storage.webhooks import WebhookStore
from yieldagent.webhooks.admin import set_webhook
from yieldagent.webhooks.sealing import SecretBox, load_box

pytestmark = pytest.mark.evm

CHAIN = 8453
TARGET = to_checksum_address("0x" + "ab" * 20)  # what the admin would list: any address
WITHDRAW = "withdraw(address,uint256,address)"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    started = Receiver().start()
    yield started
    started.release()
    started.stop()


@pytest.fixture
def box(tmp_path: Path) -> SecretBox:
    return load_box(None, tmp_path)


def _module(net: Devnet) -> Any:
    assert net.manifest.safe is not None
    return module_at(net.d, net.manifest.safe.module)


def _propose(net: Devnet, change: tuple[Any, ...]) -> tuple[str, datetime]:
    """Proposes ``change`` with the admin key: its id and its block's time."""
    assert net.manifest.safe is not None
    module = _module(net)
    receipt = net.d.transact(module.functions.proposeChange(change), sender=net.manifest.safe.admin)
    [log] = module.events.ChangeProposed().process_receipt(receipt)
    block = net.w3.eth.get_block(receipt["blockNumber"])
    return "0x" + bytes(log["args"]["id"]).hex(), datetime.fromtimestamp(block["timestamp"], UTC)


async def _watch(net: Devnet, engine: Engine, start: int, confirmations: int = 1) -> int:
    """One run of the watch, as a freshly started process runs it."""
    assert net.manifest.safe is not None
    source = Web3ModuleChanges.connect(net.url, CHAIN, net.manifest.safe.module, confirmations)
    try:
        return await watch_module_changes(CHAIN, source, ModuleChangeStore(engine), start, 2_000)
    finally:
        await source.close()


def _told(engine: Engine, wallet_id: int) -> list[WalletEvent]:
    events = EventStore(engine).after(wallet_id, 0, 100)
    return [e for e in events if e.kind == MODULE_CHANGE_PROPOSED]


async def test_a_proposal_reaches_every_wallet_once_and_is_pending_until_cancelled(
    net: Devnet,
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
    partners: PartnerStore,
    receiver: Receiver,
    box: SecretBox,
) -> None:
    owner, _ = partner
    other, _ = partners.create("globex", PERMISSIONS)
    set_webhook(WebhookStore(engine), box, owner.name, receiver.url, LOCAL)
    lifecycle = make_lifecycle(engine, chains)
    first = await activated(lifecycle, engine, market, owner.id, 50 * USDC)
    second = await activated(lifecycle, engine, market, other.id, 50 * USDC, eoa=OTHER_EOA)
    start = net.w3.eth.block_number
    rule = Rule(Kind.WITHDRAW, 3, 0, 0, (2,), (0,))
    change_id, proposed_at = _propose(net, rule_change(TARGET, WITHDRAW, rule))

    # Three confirmations: the proposal's block is the head, so it is not read yet.
    assert await _watch(net, engine, start, confirmations=3) == 0
    assert ModuleChangeStore(engine).pending(CHAIN) == [] and _told(engine, first.id) == []
    rpc(net.url, "anvil_mine", [2])
    assert await _watch(net, engine, start, confirmations=3) == 1

    [pending] = ModuleChangeStore(engine).pending(CHAIN)
    assert (pending.change_id, pending.kind, pending.subject) == (change_id, "rule", TARGET)
    assert (pending.selector, pending.new_value) == ("0x69328dec", "withdraw")
    assert pending.proposed_at == proposed_at
    assert pending.effective_at == proposed_at + timedelta(seconds=TIMELOCK_DELAY)
    for wallet in (first, second):
        [event] = _told(engine, wallet.id)
        assert (event.wallet, event.partner_id) == (wallet.address, wallet.partner_id)
        assert event.data == {
            "module": pending.module,
            "change_id": change_id,
            "kind": "rule",
            "subject": TARGET,
            "selector": "0x69328dec",
            "new_value": "withdraw",
            "proposed_at": proposed_at.isoformat().replace("+00:00", "Z"),
            "effective_at": (proposed_at + timedelta(days=2)).isoformat().replace("+00:00", "Z"),
        }
        message = wallet_event(event)  # what WatchWallet sends
        assert message.module_change_proposed.change_id == change_id
        assert message.module_change_proposed.effective_at == event.data["effective_at"]

    # The stream: a watcher from the wallet's first event meets it among the others.
    stored = EventStore(engine).after(first.id, 0, 100)
    stream = EventStore(engine, poll_seconds=0.05).watch(first.id, 0)
    seen = [await asyncio.wait_for(anext(stream), 5) for _ in stored]
    await stream.aclose()  # type: ignore[attr-defined]  # an async generator's
    assert [e.id for e in seen if e.kind == MODULE_CHANGE_PROPOSED] == [
        _told(engine, first.id)[0].id
    ]

    # A restart reads on from the cursor; one that finds the range again tells nothing twice.
    assert await _watch(net, engine, start) == 0
    with engine.begin() as connection:
        connection.execute(update(ModuleChangeCursorRow).values(next_block=start))
    assert await _watch(net, engine, start) == 0
    assert len(_told(engine, first.id)) == len(_told(engine, second.id)) == 1

    # The webhook: the hooked partner's wallet is posted once; the other partner has no hook.
    await deliverer(engine, box, Clock()).deliver_due()
    posts = [r.json() for r in receiver.received if r.json()["type"] == MODULE_CHANGE_PROPOSED]
    assert [(p["wallet"], p["data"]["change_id"]) for p in posts] == [(first.address, change_id)]
    await deliverer(engine, box, Clock()).deliver_due()
    assert len([r for r in receiver.received if r.json()["type"] == MODULE_CHANGE_PROPOSED]) == 1

    assert net.manifest.safe is not None
    net.d.transact(
        _module(net).functions.cancelChange(bytes.fromhex(change_id[2:])),
        sender=net.manifest.safe.admin,
    )
    await _watch(net, engine, start)
    assert ModuleChangeStore(engine).pending(CHAIN) == []


async def test_an_applied_change_is_no_longer_pending(
    net: Devnet,
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    owner, _ = partner
    wallet = await activated(make_lifecycle(engine, chains), engine, market, owner.id, 5 * USDC)
    assert net.manifest.safe is not None and net.manifest.reward_token is not None
    start = net.w3.eth.block_number
    feed = net.manifest.safe.price_feeds[net.manifest.reward_token]
    change = token_change(net.manifest.reward_token, feed, 3_600, reward=True)
    change_id, proposed_at = _propose(net, change)
    assert await _watch(net, engine, start) == 1
    [pending] = ModuleChangeStore(engine).pending(CHAIN)
    assert (pending.kind, pending.subject, pending.new_value) == (
        "token",
        net.manifest.reward_token,
        feed,
    )
    assert pending.effective_at == proposed_at + timedelta(seconds=TIMELOCK_DELAY)
    rpc(net.url, "evm_increaseTime", [TIMELOCK_DELAY])
    rpc(net.url, "evm_mine")
    net.d.transact(_module(net).functions.applyChange(change), sender=net.manifest.safe.admin)
    assert await _watch(net, engine, start) == 0
    assert ModuleChangeStore(engine).pending(CHAIN) == []
    [event] = _told(engine, wallet.id)
    assert event.data["change_id"] == change_id


def test_only_a_web3_chain_with_a_module_is_watched(net: Devnet, tmp_path: Path) -> None:
    """The simulator runs no module and has no admin: a simulated chain has no source, so
    nothing is ever pending there; nor on a web3 chain whose manifest names no module."""
    assert module_change_sources(load_settings({"YIELDAGENT_DATA_DIR": str(tmp_path)})) == {}
    bare, full = tmp_path / "bare.json", tmp_path / "full.json"
    replace(net.manifest, safe=None).write(bare)
    net.manifest.write(full)
    values = {"YIELDAGENT_DATA_DIR": str(tmp_path), "YIELDAGENT_RPC_URL_8453": net.url}
    settings = load_settings({**values, "YIELDAGENT_DEPLOYMENT_8453": str(bare)})
    assert module_change_sources(settings) == {}
    settings = load_settings({**values, "YIELDAGENT_DEPLOYMENT_8453": str(full)})
    [(source, start)] = module_change_sources(settings).values()
    assert start == net.manifest.deployed_block
    assert isinstance(source, Web3ModuleChanges) and net.manifest.safe is not None
    assert source.module == net.manifest.safe.module


async def test_the_workers_job_reads_the_manifests_module(
    net: Devnet, engine: Engine, tmp_path: Path
) -> None:
    """The job the service's worker runs: from the manifest's deployment block, the chain's
    confirmations and log range as configured."""
    manifest = tmp_path / "deployment.json"
    replace(net.manifest, deployed_block=net.w3.eth.block_number).write(manifest)
    settings = load_settings(
        {
            "YIELDAGENT_DATA_DIR": str(tmp_path),
            "YIELDAGENT_RPC_URL_8453": net.url,
            "YIELDAGENT_DEPLOYMENT_8453": str(manifest),
            "YIELDAGENT_CONFIRMATIONS": "1",
        }
    )
    change_id, _ = _propose(net, rule_change(TARGET, WITHDRAW, Rule(Kind.NONE, 0)))
    job = module_change_watch(settings, engine)
    await job()
    [pending] = ModuleChangeStore(engine).pending(CHAIN)
    assert (pending.change_id, pending.new_value) == (change_id, "unlisted")
    await job()  # the next tick reads on from the cursor
    assert len(ModuleChangeStore(engine).pending(CHAIN)) == 1
