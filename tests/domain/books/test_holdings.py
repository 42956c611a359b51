"""What the wallets of a chain hold per token: the catalog's token balance."""

from __future__ import annotations

from sqlalchemy import Engine

from support.wallet_setup import BASE, BASE_USDC, USDC, activated, make_lifecycle, make_reports
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.ports.credentials import Partner


async def test_holdings_count_active_wallets_and_not_deactivated_ones(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    reports = make_reports(engine, chains)
    assert reports.holdings(BASE) == {}
    wallet = await activated(lifecycle, engine, market, owner.id, 1_000 * USDC)
    held = reports.holdings(BASE)[BASE_USDC]
    assert 1_000 * USDC - 10 <= held <= 1_000 * USDC  # pool rounding favours the pool
    await lifecycle.deactivate(owner.id, BASE, wallet.address, transfer=True)
    assert reports.holdings(BASE).get(BASE_USDC, 0) == 0
