"""The devnet's risk switches, thrown as their real owners throw them: Aave's
PoolConfigurator freezes or pauses the USDC reserve (as its risk or emergency admin), the
Comet's governor pauses supply or withdrawals, and Morpho bad debt (the volatile
collateral's oracle crashes and every borrower of the markets it prices is liquidated, so
the debt the seized collateral no longer covers is written off against the suppliers and
the vault's share price falls). A depeg is ``actions.set_feed_price`` on the pegged
collateral's feed. Devnet only: the deployer holds every admin role here.
"""

from __future__ import annotations

from yieldagent.composition.deployments import ProtocolDeployment
from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.tokens import mint_and_approve
from yieldagent.devnet.toolchain import aave_artifact, compile_project

CRASHED_PRICE = 1
"""The volatile collateral's oracle price after the crash: next to nothing."""


def aave_freeze(d: Deployer, aave: ProtocolDeployment, usdc: str, frozen: bool) -> None:
    """Freezes (or unfreezes) Aave's USDC reserve: no supply or borrow; withdrawals go on."""
    configurator = d.at(aave_artifact("PoolConfigurator"), aave.contracts["pool_configurator"])
    d.transact(configurator.functions.setReserveFreeze(usdc, frozen))


def aave_pause(d: Deployer, aave: ProtocolDeployment, usdc: str, paused: bool) -> None:
    """Pauses (or unpauses) Aave's USDC reserve: nothing goes in or out."""
    configurator = d.at(aave_artifact("PoolConfigurator"), aave.contracts["pool_configurator"])
    d.transact(configurator.functions.setReservePause(usdc, paused))


def comet_pause(
    d: Deployer, comet: ProtocolDeployment, *, supply: bool = False, withdraw: bool = False
) -> None:
    """Sets the Comet's pause flags (transfers, absorbs and buys stay open), as its
    governor."""
    contract = d.at(compile_project()["Comet"], comet.address)
    d.transact(contract.functions.pause(supply, False, withdraw, False, False))


def morpho_bad_debt(d: Deployer, vault: ProtocolDeployment, usdc: str) -> int:
    """Crashes the vault's volatile collateral and liquidates every borrower of the
    markets its oracle prices, seizing all their collateral: the rest of their debt is
    bad debt. Returns how many positions were liquidated."""
    artifacts = compile_project()
    morpho = d.at(artifacts["Morpho"], vault.contracts["morpho"])
    oracle = d.at(artifacts["OracleMock"], vault.contracts["oracle"])
    d.transact(oracle.functions.setPrice(CRASHED_PRICE))
    liquidator = d.actor("morpho-liquidator")
    mint_and_approve(d, usdc, liquidator, morpho.address, 10**15)
    liquidated = 0
    for market in vault.markets:
        market_id = bytes.fromhex(market.removeprefix("0x"))
        params = morpho.functions.idToMarketParams(market_id).call()
        if params[2] != oracle.address:
            continue  # priced by another oracle: its borrowers stay healthy
        for borrower in d.accounts:
            collateral = morpho.functions.position(market_id, borrower).call()[2]
            if collateral:
                d.transact(
                    morpho.functions.liquidate(params, borrower, collateral, 0, b""),
                    sender=liquidator,
                )
                liquidated += 1
    return liquidated
