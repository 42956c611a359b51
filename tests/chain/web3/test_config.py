"""The adapter's configuration: from a devnet manifest, and the environment's overrides."""

from __future__ import annotations

import pytest

from yieldagent.chain.web3.config import Web3ChainConfig
from yieldagent.devnet.manifest import Manifest, ProtocolDeployment
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
    config = Web3ChainConfig.from_manifest(_manifest(), confirmations=2)
    [vault] = config.protocols
    assert config.token == "0x5FbDB2315678afecb367f032d93F642f64180aa3"
    assert vault.address == "0x82e01223d51Eb87e16A03E24687EDF0F294da6f1"
    assert vault.contracts == {"morpho": "0x809d550fca64d94Bd9F66E60752A544199cfAC3D"}
    assert vault.markets == ("0x" + "44" * 32,)
    assert (config.module, config.confirmations, config.log_range) == (None, 2, 2_000)
    assert config.protocol("morpho_gauntlet_usdc_prime") is vault
    with pytest.raises(ConfigurationError):
        config.protocol("aave")
