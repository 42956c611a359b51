"""Morpho Blue on the devnet: the real Morpho Blue, the adaptive curve IRM, four USDC markets
and an ERC-4626 vault over them (catalog name ``morpho_gauntlet_usdc_prime``).

Morpho Blue is compiled from the pinned ``@morpho-org/morpho-blue`` sources. Three markets lend
USDC against one volatile collateral (its ``ERC20Mock``, priced by its ``OracleMock``) at LLTVs
77%, 86% and 91.5%. The fourth lends against a dollar-pegged stable (``PEGGED_SYMBOL``, a
``DevToken``) at 91.5%, priced by a ``FeedOracle`` over a Chainlink-style ``DevPriceFeed``
(8 decimals, $1.00): the feed the manifest lists as pegged (``collateral_feeds``), which the
service's depeg guard reads and ``set_feed_price`` moves. The vault is seeded with
``SEED_ASSETS`` spread 45/30/15/10 over the markets, so that its allocation rule (see
``contracts/src/morpho/Vault.sol``) involves all four.
"""

from __future__ import annotations

from fractions import Fraction

from eth_abi.abi import encode
from web3 import Web3

from yieldagent.composition.deployments import ProtocolDeployment
from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.tokens import deploy_token, mint_and_approve
from yieldagent.devnet.toolchain import compile_project

WAD = 10**18
LLTVS = (770 * WAD // 1000, 860 * WAD // 1000, 915 * WAD // 1000)
# Morpho's oracle price: loan units per collateral unit, scaled 1e36. 1 collateral (18
# decimals) is worth 3,000 USDC (6 decimals).
ORACLE_PRICE = 3000 * 10**6 * 10**36 // 10**18
VAULT_NAME = "Gauntlet USDC Prime (devnet)"
VAULT_SYMBOL = "gtUSDCp"
SEED_ASSETS = 1_000_000 * 10**6
SEED_SPLIT = (45, 30, 15, 10)  # percent of the seed per market
PEGGED_SYMBOL = "USDT"
PEGGED_DECIMALS = 6
PEGGED_LLTV = 915 * WAD // 1000
FEED_DECIMALS = 8
PEG_USD = "1"
"""What the pegged collateral's feed answers at par, in dollars."""


def market_id(params: tuple[str, str, str, str, int]) -> str:
    """Morpho's market id: keccak256(abi.encode(MarketParams)), as 0x hex."""
    encoded = encode(["address", "address", "address", "address", "uint256"], list(params))
    return Web3.keccak(encoded).to_0x_hex()


def deploy_morpho(d: Deployer, usdc: str) -> ProtocolDeployment:
    """Deploys Morpho Blue, the IRM, the oracles, the collaterals, four markets and the vault.

    ``address`` is the vault; ``contracts``: ``morpho``, ``irm``, ``oracle``, ``collateral``
    (the volatile one's) and ``pegged_collateral``, ``pegged_feed``, ``pegged_oracle``;
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
    pegged = deploy_token(d, f"Devnet {PEGGED_SYMBOL}", PEGGED_SYMBOL, PEGGED_DECIMALS)
    feed = d.deploy(
        artifacts["DevPriceFeed"],
        FEED_DECIMALS,
        f"{PEGGED_SYMBOL} / USD",
        int(Fraction(PEG_USD) * 10**FEED_DECIMALS),
    )
    feed_oracle = d.deploy(artifacts["FeedOracle"], feed.address, PEGGED_DECIMALS, 6)
    every = [(collateral.address, oracle.address, lltv) for lltv in LLTVS]
    every.append((pegged.address, feed_oracle.address, PEGGED_LLTV))
    markets: list[str] = []
    for collateral_token, market_oracle, lltv in every:
        params = (usdc, collateral_token, market_oracle, irm.address, lltv)
        if not morpho.functions.isLltvEnabled(lltv).call():
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
            "pegged_collateral": str(pegged.address),
            "pegged_feed": str(feed.address),
            "pegged_oracle": str(feed_oracle.address),
        },
        markets=tuple(markets),
    )


def collateral_feeds(deployment: ProtocolDeployment) -> dict[str, dict[str, str]]:
    """The pegged collateral's feed and peg, by collateral (the manifest's
    ``collateral_feeds``)."""
    return {
        deployment.contracts["pegged_collateral"]: {
            "feed": deployment.contracts["pegged_feed"],
            "peg": PEG_USD,
        }
    }
