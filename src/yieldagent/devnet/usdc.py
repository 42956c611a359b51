"""The devnet's USDC: a 6-decimal ERC-20 (``contracts/src/USDC.sol``) that anyone may mint.

It exists on the devnet only; on a real chain the token is Circle's.
"""

from __future__ import annotations

from web3.contract import Contract

from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.toolchain import Artifact, compile_project

USDC_DECIMALS = 6
USDC_SYMBOL = "USDC"
ONE_USDC = 10**USDC_DECIMALS


def usdc_artifact() -> Artifact:
    """The compiled USDC contract (its ABI serves any ERC-20)."""
    return compile_project()["src/USDC.sol:USDC"]


def deploy_usdc(d: Deployer) -> Contract:
    """Deploys a fresh USDC from ``d.admin``."""
    return d.deploy(usdc_artifact())


def mint(d: Deployer, usdc: str, to: str, amount: int) -> None:
    """Mints ``amount`` (base units) of the devnet USDC at ``usdc`` to ``to``."""
    d.transact(d.at(usdc_artifact(), usdc).functions.mint(d.w3.to_checksum_address(to), amount))


def ensure_balance(d: Deployer, usdc: str, holder: str, amount: int) -> None:
    """Mints to ``holder`` what it lacks to hold at least ``amount``."""
    token = d.at(usdc_artifact(), usdc)
    missing = amount - int(token.functions.balanceOf(d.w3.to_checksum_address(holder)).call())
    if missing > 0:
        mint(d, usdc, holder, missing)
