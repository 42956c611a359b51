"""Compound v3 on the devnet: a Comet for USDC with Base's launch rate curves, and its rewards.

Contracts (``contracts/src/compound``): ``Comet`` (the pool), ``CometRewards`` paying the
devnet reward token ``COMP`` (18 decimals, mintable) pro rata to supply, and a WETH-like
collateral token (fixed price) for borrowers. The deployer's admin account is the Comet's
governor and pause guardian: it alone may ``pause`` supply or withdrawals, as a scenario
would.
"""

from __future__ import annotations

from web3 import Web3

from yieldagent.composition.deployments import ProtocolDeployment
from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.tokens import deploy_token
from yieldagent.devnet.toolchain import compile_project

WAD = 10**18
SECONDS_PER_YEAR = 31_536_000
# Base cUSDCv3 at launch, yearly, scaled 1e18 (reference-facts.md); Comet divides by the year.
RATES = (
    85 * WAD // 100,  # supplyKink
    48 * WAD // 1000,  # supplyPerYearInterestRateSlopeLow
    16 * WAD // 10,  # supplyPerYearInterestRateSlopeHigh
    0,  # supplyPerYearInterestRateBase
    85 * WAD // 100,  # borrowKink
    53 * WAD // 1000,  # borrowPerYearInterestRateSlopeLow
    18 * WAD // 10,  # borrowPerYearInterestRateSlopeHigh
    15 * WAD // 1000,  # borrowPerYearInterestRateBase
)
COLLATERAL_PRICE = 3000 * 10**8  # USD per WETH, scaled 1e8
BORROW_COLLATERAL_FACTOR = 80 * WAD // 100
# 1,000 COMP a year shared by all suppliers; Comet's speed is whole tokens per second, 1e15.
BASE_TRACKING_SUPPLY_SPEED = 1000 * 10**15 // SECONDS_PER_YEAR


def deploy_compound(d: Deployer, usdc: str) -> ProtocolDeployment:
    """Deploys the Comet for ``usdc``, its collateral token, COMP and CometRewards.

    ``contracts``: ``rewards`` (CometRewards), ``reward_token`` (COMP), ``collateral`` (WETH).
    """
    artifacts = compile_project()
    weth = deploy_token(d, "Wrapped Ether (devnet)", "WETH", 18)
    comp = deploy_token(d, "Compound (devnet)", "COMP", 18)
    comet = d.deploy(
        artifacts["Comet"],
        Web3.to_checksum_address(usdc),
        weth.address,
        COLLATERAL_PRICE,
        BORROW_COLLATERAL_FACTOR,
        RATES,
        BASE_TRACKING_SUPPLY_SPEED,
        d.admin,  # governor
        d.admin,  # pause guardian
    )
    rewards = d.deploy(artifacts["CometRewards"], d.admin)
    d.transact(rewards.functions.setRewardConfig(comet.address, comp.address))
    return ProtocolDeployment(
        name="compound",
        kind="compound_v3",
        address=str(comet.address),
        contracts={
            "rewards": str(rewards.address),
            "reward_token": str(comp.address),
            "collateral": str(weth.address),
        },
    )
