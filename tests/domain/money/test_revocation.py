"""The owner revokes the operator on chain: the worker's refresh blocks the wallet, says so
in a ``blocked`` event, and unblocks it once the owner allows the operator again."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from support.wallet_setup import BASE, USDC, activated, make_lifecycle, stored
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.errors import Conflict
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.money.lifecycle import REVOKED
from yieldagent.domain.ports.credentials import Partner
from yieldagent.storage.events import EventStore

pytestmark = pytest.mark.usefixtures("books_balance_after")

REASON = "the operator module is disabled on the Safe"


class Revocable:
    """The simulated chain, with the holders whose owners revoked the operator."""

    def __init__(self, chain: MarketChain) -> None:
        self.revoked: set[str] = set()
        original = chain.revocation

        async def revocation(holder: str) -> str | None:
            return REASON if holder in self.revoked else await original(holder)

        chain.revocation = revocation  # type: ignore[method-assign]


async def test_a_revoked_wallet_is_blocked_within_one_refresh_and_told(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 10_000 * USDC)
    other = await activated(lifecycle, engine, market, owner.id, 500 * USDC, agent_id="other")
    chain = Revocable(chains[BASE])
    chain.revoked.add(wallet.address)

    await lifecycle.refresh(BASE)

    blocked = stored(engine, wallet.address)
    assert blocked.status == WalletStatus.BLOCKED
    assert blocked.status_reason == f"{REVOKED}: {REASON}"
    assert stored(engine, other.address).status == WalletStatus.ACTIVATED
    [event] = [e for e in EventStore(engine).after(wallet.id, 0, 100) if e.kind == "blocked"]
    assert dict(event.data) == {
        "previous_status": "activated",
        "status_reason": blocked.status_reason,
    }
    with pytest.raises(Conflict, match="blocked"):  # the service no longer acts for it
        await lifecycle.withdraw(owner.id, BASE, wallet.address, USDC)

    await lifecycle.refresh(BASE)  # still revoked: nothing more happens
    assert len([e for e in EventStore(engine).after(wallet.id, 0, 100) if e.kind == "blocked"]) == 1

    chain.revoked.clear()  # the owner enabled the module again
    await lifecycle.refresh(BASE)
    assert stored(engine, wallet.address).status == WalletStatus.ACTIVATED
    assert stored(engine, wallet.address).status_reason == ""


async def test_a_wallet_the_operator_blocked_stays_blocked(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 1_000 * USDC)
    await lifecycle.operate(BASE, wallet.address, "block")
    await lifecycle.refresh(BASE)
    assert stored(engine, wallet.address).status == WalletStatus.BLOCKED
