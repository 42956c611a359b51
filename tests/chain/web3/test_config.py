"""The adapter's configuration: from a devnet manifest, and the environment's overrides."""

from __future__ import annotations

from fractions import Fraction

import pytest

from yieldagent.chain.web3.config import CollateralFeedConfig
from yieldagent.composition.deployments import Manifest, ProtocolDeployment, chain_config
from yieldagent.config import load_settings
from yieldagent.domain.errors import ConfigurationError

USDC = "0x5fbdb2315678afecb367f032d93f642f64180aa3"
VAULT = "0x82e01223d51eb87e16a03e24687edf0f294da6f1"
MORPHO = "0x809d550fca64d94bd9f66e60752a544199cfac3d"


def _manifest() -> Manifest:
    vault = ProtocolDeployment(
        name="morpho_gauntlet_usdc_prime",
        kind="morpho_blue",
        address=VAULT,
        contracts={"morpho": MORPHO},
        markets=("0x" + "44" * 32,),
    )
    return Manifest(
        chain_id=8453,
        rpc_url="http://127.0.0.1:8545",
        deployed_block=90,
        token=USDC,
        token_symbol="USDC",
        token_decimals=6,
        protocols=(vault,),
        reward_token=None,
        swap_router=None,
        borrower=MORPHO,
        extras={},
    )


def test_a_manifest_gives_checksummed_contracts() -> None:
    config = chain_config(_manifest(), confirmations=2)
    [vault] = config.protocols
    assert config.token == "0x5FbDB2315678afecb367f032d93F642f64180aa3"
    assert vault.address == "0x82e01223d51Eb87e16A03E24687EDF0F294da6f1"
    assert vault.contracts == {"morpho": "0x809d550fca64d94Bd9F66E60752A544199cfAC3D"}
    assert vault.markets == ("0x" + "44" * 32,)
    assert (config.module, config.confirmations, config.log_range) == (None, 2, 2_000)
    assert config.protocol("morpho_gauntlet_usdc_prime") is vault
    with pytest.raises(ConfigurationError):
        config.protocol("aave")


USDT = "0xfde4C96c8593536E31F229EA8f37b2ADa2699bb2"
FEED = "0xf19d560eB8d2ADf07BD6D13ed03e1D11215721F9"


def test_pegged_collateral_feeds_are_a_per_chain_setting() -> None:
    settings = load_settings(
        {
            "YIELDAGENT_COLLATERAL_FEEDS_8453": f"{USDT.lower()}={FEED}:1, {FEED}={USDT}:0.5",
            "YIELDAGENT_COLLATERAL_FEEDS_1": "none",
        }
    )
    assert settings.collateral_feeds == {
        8453: ((USDT.lower(), FEED, "1"), (FEED, USDT, "0.5")),
        1: (),
    }
    [usdt, other] = [CollateralFeedConfig.of(*f) for f in settings.collateral_feeds[8453]]
    assert usdt == CollateralFeedConfig(USDT, FEED, Fraction(1))  # checksummed
    assert other.peg == Fraction(1, 2)
    with pytest.raises(ConfigurationError, match="not TOKEN=FEED:PEG"):
        load_settings({"YIELDAGENT_COLLATERAL_FEEDS_8453": f"{USDT}={FEED}"})
    with pytest.raises(ConfigurationError, match="not an address"):
        CollateralFeedConfig.of(USDT, "0x12", "1")
    with pytest.raises(ConfigurationError, match="above 0"):
        CollateralFeedConfig.of(USDT, FEED, "0")
