"""Moonwell on the devnet: an mToken for USDC over a JumpRateModel with Base's parameters.

Contracts (``contracts/src/moonwell``): ``MToken`` (Compound v2 math, per second),
``JumpRateModel``, the ``Comptroller``'s pause switch on supplying (the deployer is admin
and pause guardian) and a WETH-like collateral token (fixed price) for borrowers.
"""

from __future__ import annotations

from web3 import Web3

from yieldagent.composition.deployments import ProtocolDeployment
from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.tokens import deploy_token
from yieldagent.devnet.toolchain import compile_project

WAD = 10**18
# Moonwell USDC on Base, yearly, scaled 1e18 (reference-facts.md): base, multiplier, jump, kink.
BASE_RATE = 0
MULTIPLIER = 67 * WAD // 1000
JUMP_MULTIPLIER = 9 * WAD
KINK = 9 * WAD // 10
RESERVE_FACTOR = WAD // 10
INITIAL_EXCHANGE_RATE = 2 * 10**14  # 0.02 underlying per mToken, 6 vs 8 decimals
COLLATERAL_PRICE = 3000 * 10**8  # USD per WETH, scaled 1e8
COLLATERAL_FACTOR = 80 * WAD // 100


def deploy_moonwell(d: Deployer, usdc: str) -> ProtocolDeployment:
    """Deploys the rate model, a collateral token and the mUSDC market.

    ``contracts``: ``rate_model`` (JumpRateModel), ``comptroller``, ``collateral`` (WETH).
    """
    artifacts = compile_project()
    model = d.deploy(artifacts["JumpRateModel"], BASE_RATE, MULTIPLIER, JUMP_MULTIPLIER, KINK)
    weth = deploy_token(d, "Wrapped Ether (devnet)", "WETH", 18)
    comptroller = d.deploy(artifacts["Comptroller"], d.admin)
    mtoken = d.deploy(
        artifacts["MToken"],
        Web3.to_checksum_address(usdc),
        comptroller.address,
        model.address,
        INITIAL_EXCHANGE_RATE,
        RESERVE_FACTOR,
        weth.address,
        COLLATERAL_PRICE,
        COLLATERAL_FACTOR,
        "Moonwell USDC (devnet)",
        "mUSDC",
    )
    return ProtocolDeployment(
        name="moonwell",
        kind="moonwell",
        address=str(mtoken.address),
        contracts={
            "rate_model": str(model.address),
            "comptroller": str(comptroller.address),
            "collateral": str(weth.address),
        },
    )
