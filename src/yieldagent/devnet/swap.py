"""The devnet's swap router: a constant-product COMP/USDC pool, for selling claimed rewards."""

from __future__ import annotations

from web3 import Web3

from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.tokens import mint_and_approve
from yieldagent.devnet.toolchain import compile_project

SEED_REWARD = 100_000 * 10**18  # COMP
SEED_USDC = 5_000_000 * 10**6  # so 1 COMP ~ 50 USDC


def deploy_swap_router(
    d: Deployer,
    usdc: str,
    reward_token: str,
    seed_reward: int = SEED_REWARD,
    seed_usdc: int = SEED_USDC,
) -> str:
    """Deploys the ``SwapRouter``, seeds its ``reward_token``/USDC pool, returns its address."""
    router = d.deploy(compile_project()["SwapRouter"])
    reward_token, usdc = Web3.to_checksum_address(reward_token), Web3.to_checksum_address(usdc)
    mint_and_approve(d, reward_token, d.admin, router.address, seed_reward)
    mint_and_approve(d, usdc, d.admin, router.address, seed_usdc)
    d.transact(router.functions.addLiquidity(reward_token, usdc, seed_reward, seed_usdc))
    return str(router.address)
