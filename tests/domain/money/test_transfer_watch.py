"""The refresh on a chain that watches the fleet's transfers (``TransferWatch``): it books
only the wallets the logs name since the stored cursor, values the ones whose hourly point
is due without reading their histories, and moves the cursor only past what it booked."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine

from support.wallet_setup import (
    BASE,
    USDC,
    activated,
    chain_value,
    policy,
    stored,
    top_up_deposit,
)
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.composition.clock import SYSTEM_CLOCK
from yieldagent.domain.books.wallets import Wallet
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.money.lifecycle import SNAPSHOT_SECONDS, TRANSFER_WATCH, Lifecycle
from yieldagent.domain.ports.chain import ChainTx, TransferWatch
from yieldagent.domain.ports.credentials import Partner
from yieldagent.storage.operations import OperationStore
from yieldagent.storage.wallets import WalletStore
from yieldagent.storage.watch_cursors import WatchCursorStore

pytestmark = pytest.mark.usefixtures("books_balance_after")


class Watched:
    """The simulated chain with a fleet-wide transfer watch, as the web3 chain keeps one
    (from the holders' histories), counting whose histories the books read."""

    def __init__(self, chain: MarketChain) -> None:
        self._chain = chain
        self.read: list[str] = []
        """The holders whose histories were read, in order."""
        self.watched: list[tuple[int, int]] = []
        """The block ranges the watch was asked for."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._chain, name)

    async def history(self, holder: str, since_block: int) -> list[ChainTx]:
        self.read.append(holder)
        return await self._chain.history(holder, since_block)

    async def histories(self, holders: Sequence[str], since_block: int) -> dict[str, list[ChainTx]]:
        self.read += holders
        return {h: await self._chain.history(h, since_block) for h in holders}

    async def transfers_touching(
        self, accounts: Sequence[str], from_block: int, to_block: int
    ) -> dict[str, int]:
        self.watched.append((from_block, to_block))
        found: dict[str, int] = {}
        for account in accounts:
            for event in await self._chain.history(account, from_block):
                if event.block_number <= to_block:
                    found.setdefault(account, event.block_number)
        return found


def watching(engine: Engine, chains: dict[int, MarketChain]) -> tuple[Lifecycle, Watched]:
    """The lifecycle over ``engine`` with Base behind the watch, and its cursors stored."""
    chain = Watched(chains[BASE])
    assert isinstance(chain, TransferWatch)
    served: dict[int, Any] = {**chains, BASE: chain}
    lifecycle = Lifecycle(
        WalletStore(engine),
        OperationStore(engine),
        served,
        load_catalog(),
        policy(),
        SYSTEM_CLOCK,
        cursors=WatchCursorStore(engine),
    )
    return lifecycle, chain


async def fleet(
    lifecycle: Lifecycle, engine: Engine, market: SimulatedMarket, partner_id: int, count: int
) -> list[Wallet]:
    """``count`` activated wallets."""
    return [
        await activated(
            lifecycle, engine, market, partner_id, (1_000 + i) * USDC, agent_id=f"fleet-{i}"
        )
        for i in range(count)
    ]


async def head_number(chains: dict[int, MarketChain]) -> int:
    return (await chains[BASE].head()).number


async def test_the_first_refresh_books_every_wallet_and_stores_the_cursor(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    lifecycle, chain = watching(engine, chains)
    wallets = await fleet(lifecycle, engine, market, partner[0].id, 3)
    chain.read.clear()

    await lifecycle.refresh(BASE)

    assert sorted(chain.read) == sorted(w.address for w in wallets)
    assert chain.watched == []  # no cursor yet: nothing to read from
    cursors = WatchCursorStore(engine)
    assert cursors.cursor(BASE, TRANSFER_WATCH) == await head_number(chains) + 1


async def test_only_the_wallets_the_transfers_name_are_booked(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    lifecycle, chain = watching(engine, chains)
    wallets = await fleet(lifecycle, engine, market, partner[0].id, 4)
    await lifecycle.refresh(BASE)
    cursor = WatchCursorStore(engine).cursor(BASE, TRANSFER_WATCH)
    synced = {w.id: stored(engine, w.address).synced_block for w in wallets}
    market.advance(60)
    target = wallets[2]
    before = stored(engine, target.address)
    top_up_deposit(market, target.address, 50 * USDC)  # nobody announced it
    market.advance(60)
    chain.read.clear()

    assert await lifecycle.refresh(BASE) == 1

    assert chain.read == [target.address]  # the others' histories are not read
    assert chain.watched == [(cursor, await head_number(chains))]
    booked = stored(engine, target.address)
    assert booked.principal == before.principal + 50 * USDC
    assert len(WalletStore(engine).deposits(target.id)) == 2
    for other in (w for w in wallets if w.id != target.id):
        assert stored(engine, other.address).synced_block == synced[other.id]
    cursors = WatchCursorStore(engine)
    assert cursors.cursor(BASE, TRANSFER_WATCH) == await head_number(chains) + 1

    chain.read.clear()
    assert await lifecycle.refresh(BASE) == 0  # nothing new since: nothing read
    assert chain.read == []


async def test_wallets_whose_point_is_due_are_valued_without_reading_their_histories(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    lifecycle, chain = watching(engine, chains)
    wallets = await fleet(lifecycle, engine, market, partner[0].id, 3)
    await lifecycle.refresh(BASE)
    market.advance(SNAPSHOT_SECONDS + 60)
    chain.read.clear()
    points = {w.id: len(WalletStore(engine).points(w.id)) for w in wallets}

    assert await lifecycle.refresh(BASE) == len(wallets)

    assert chain.read == []
    head = await head_number(chains)
    for wallet in wallets:
        saved = stored(engine, wallet.address)
        assert saved.valued_at - wallet.valued_at >= timedelta(seconds=SNAPSHOT_SECONDS)
        assert saved.synced_block == head  # the watch saw nothing of it up to here
        [*_, point] = WalletStore(engine).points(wallet.id)
        assert len(WalletStore(engine).points(wallet.id)) == points[wallet.id] + 1
        assert point.value == chain_value(market, wallet.address)


async def test_a_busy_wallet_the_transfers_name_holds_the_cursor_at_its_transfer(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    lifecycle, chain = watching(engine, chains)
    wallets = await fleet(lifecycle, engine, market, partner[0].id, 3)
    await lifecycle.refresh(BASE)
    market.advance(60)
    busy, quiet = wallets[0], wallets[1]
    top_up_deposit(market, busy.address, 10 * USDC)
    deposited = await head_number(chains)
    market.advance(60)
    top_up_deposit(market, quiet.address, 20 * USDC)
    market.advance(60)
    other = lifecycle.books.leases.owner("operation")
    assert lifecycle.books.leases.try_acquire(busy.id, other)  # an operation holds it
    chain.read.clear()

    await lifecycle.refresh(BASE)

    assert chain.read == [quiet.address]
    assert stored(engine, quiet.address).principal == quiet.principal + 20 * USDC
    assert stored(engine, busy.address).principal == busy.principal
    cursors = WatchCursorStore(engine)
    assert cursors.cursor(BASE, TRANSFER_WATCH) == deposited  # not past the busy one's

    lifecycle.books.leases.release(busy.id, other)
    chain.read.clear()
    await lifecycle.refresh(BASE)
    # read from the held cursor: the quiet one is named again, its deposit booked once
    assert sorted(chain.read) == sorted([busy.address, quiet.address])
    assert stored(engine, busy.address).principal == busy.principal + 10 * USDC
    assert stored(engine, quiet.address).principal == quiet.principal + 20 * USDC
    assert cursors.cursor(BASE, TRANSFER_WATCH) == await head_number(chains) + 1


async def test_a_restarted_service_resumes_from_the_stored_cursor(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    lifecycle, _ = watching(engine, chains)
    wallets = await fleet(lifecycle, engine, market, partner[0].id, 3)
    await lifecycle.refresh(BASE)
    cursor = WatchCursorStore(engine).cursor(BASE, TRANSFER_WATCH)
    market.advance(60)
    top_up_deposit(market, wallets[1].address, 5 * USDC)
    market.advance(60)

    restarted, chain = watching(engine, chains)  # a new process over the same database
    await restarted.refresh(BASE)

    assert chain.watched == [(cursor, await head_number(chains))]
    assert chain.read == [wallets[1].address]
    assert stored(engine, wallets[1].address).principal == wallets[1].principal + 5 * USDC


async def test_a_chain_without_the_watch_books_every_wallet_each_refresh(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    lifecycle = Lifecycle(
        WalletStore(engine),
        OperationStore(engine),
        chains,
        load_catalog(),
        policy(),
        SYSTEM_CLOCK,
        cursors=WatchCursorStore(engine),
    )
    wallet = (await fleet(lifecycle, engine, market, partner[0].id, 1))[0]
    await lifecycle.refresh(BASE)
    market.advance(60)
    top_up_deposit(market, wallet.address, 7 * USDC)
    market.advance(60)
    await lifecycle.refresh(BASE)
    assert stored(engine, wallet.address).principal == wallet.principal + 7 * USDC
    assert WatchCursorStore(engine).cursor(BASE, TRANSFER_WATCH) is None
