"""Morpho Blue on the devnet: the real Morpho Blue, the adaptive curve IRM, three USDC markets
and an ERC-4626 vault over them (catalog name ``morpho_gauntlet_usdc_prime``).

Morpho Blue is compiled from the pinned ``@morpho-org/morpho-blue`` sources; the oracle is its
``OracleMock`` (fixed price) and the collateral its ``ERC20Mock``. The three markets lend USDC
against the same collateral at LLTVs 77%, 86% and 91.5%. The vault is seeded with
``SEED_ASSETS`` spread 50/30/20 over the markets, so that its allocation rule (see
``contracts/src/morpho/Vault.sol``) involves all three.
"""

from __future__ import annotations

from eth_abi.abi import encode
from web3 import Web3

from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.manifest import ProtocolDeployment
from yieldagent.devnet.tokens import mint_and_approve
from yieldagent.devnet.toolchain import compile_project

WAD = 10**18
LLTVS = (770 * WAD // 1000, 860 * WAD // 1000, 915 * WAD // 1000)
# Morpho's oracle price: loan units per collateral unit, scaled 1e36. 1 collateral (18
# decimals) is worth 3,000 USDC (6 decimals).
ORACLE_PRICE = 3000 * 10**6 * 10**36 // 10**18
VAULT_NAME = "Gauntlet USDC Prime (devnet)"
VAULT_SYMBOL = "gtUSDCp"
SEED_ASSETS = 1_000_000 * 10**6
SEED_SPLIT = (50, 30, 20)  # percent of the seed per market


def market_id(params: tuple[str, str, str, str, int]) -> str:
    """Morpho's market id: keccak256(abi.encode(MarketParams)), as 0x hex."""
    encoded = encode(["address", "address", "address", "address", "uint256"], list(params))
    return Web3.keccak(encoded).to_0x_hex()


def deploy_morpho(d: Deployer, usdc: str) -> ProtocolDeployment:
    """Deploys Morpho Blue, the IRM, the oracle, the collateral, three markets and the vault.

    ``address`` is the vault; ``contracts``: ``morpho``, ``irm``, ``oracle``, ``collateral``;
    ``markets``: the market ids in the vault's queue order.
    """
    artifacts = compile_project()
    usdc = Web3.to_checksum_address(usdc)
    morpho = d.deploy(artifacts["Morpho"], d.admin)
    irm = d.deploy(artifacts["AdaptiveCurveIrm"], morpho.address)
    oracle = d.deploy(artifacts["OracleMock"])
    d.transact(oracle.functions.setPrice(ORACLE_PRICE))
    collateral = d.deploy(artifacts["ERC20Mock"])
    d.transact(morpho.functions.enableIrm(irm.address))
    vault = d.deploy(artifacts["Vault"], morpho.address, usdc, VAULT_NAME, VAULT_SYMBOL)
    markets: list[str] = []
    for lltv in LLTVS:
        params = (usdc, collateral.address, oracle.address, irm.address, lltv)
        d.transact(morpho.functions.enableLltv(lltv))
        d.transact(morpho.functions.createMarket(params))
        d.transact(vault.functions.addMarket(params))
        markets.append(market_id(params))
    mint_and_approve(d, usdc, d.admin, vault.address, SEED_ASSETS)
    d.transact(vault.functions.deposit(SEED_ASSETS, d.admin))
    targets = [SEED_ASSETS * share // 100 for share in SEED_SPLIT[:-1]] + [2**256 - 1]
    d.transact(vault.functions.reallocate(targets))
    return ProtocolDeployment(
        name="morpho_gauntlet_usdc_prime",
        kind="morpho_blue",
        address=str(vault.address),
        contracts={
            "morpho": str(morpho.address),
            "irm": str(irm.address),
            "oracle": str(oracle.address),
            "collateral": str(collateral.address),
        },
        markets=tuple(markets),
    )
