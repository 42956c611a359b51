"""The devnet's own mock tokens (``DevToken``: open mint, devnet only) and token helpers."""

from __future__ import annotations

from web3.contract import Contract

from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.toolchain import compile_project


def deploy_token(d: Deployer, name: str, symbol: str, decimals: int) -> Contract:
    """Deploys a ``DevToken``: an ERC-20 anyone may mint (devnet only)."""
    return d.deploy(compile_project()["DevToken"], name, symbol, decimals)


def token_at(d: Deployer, address: str) -> Contract:
    """A mintable ERC-20 (``mint(to, amount)``) at ``address``: a DevToken or the devnet USDC."""
    return d.at(compile_project()["DevToken"], address)


def mint_and_approve(d: Deployer, token: str, holder: str, spender: str, amount: int) -> None:
    """Mints ``amount`` of ``token`` to ``holder`` and lets ``spender`` take it."""
    erc20 = token_at(d, token)
    d.transact(erc20.functions.mint(holder, amount), sender=d.admin)
    d.transact(erc20.functions.approve(spender, amount), sender=holder)
