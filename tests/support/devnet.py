"""The devnet for tests marked ``evm``: one anvil per test session, everything deployed.

``devnet`` (session scope) starts anvil on a free port, runs ``deploy_all`` and yields a
``Devnet`` (unpacks as ``manifest, url``); anvil stops when the session ends. Tests share
that chain: one that must leave no trace asks for ``devnet_snapshot`` instead, which reverts
the chain to where the test found it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import pytest
from web3 import HTTPProvider, Web3

from yieldagent.composition.deployments import Manifest, ProtocolDeployment
from yieldagent.devnet.anvil import Anvil, free_port, rpc
from yieldagent.devnet.deploy import deploy_all
from yieldagent.devnet.deployer import Deployer


class Devnet(NamedTuple):
    """A running devnet: what was deployed, and its RPC URL; shortcuts to drive it."""

    manifest: Manifest
    url: str

    @property
    def d(self) -> Deployer:
        """A deployer on this devnet (anvil's unlocked accounts, actors)."""
        return Deployer(self.url)

    @property
    def w3(self) -> Web3:
        """A synchronous Web3 on this devnet."""
        return Web3(HTTPProvider(self.url))

    @property
    def usdc(self) -> str:
        """The devnet USDC's address."""
        return self.manifest.token

    @property
    def compound(self) -> ProtocolDeployment:
        """The Comet deployment."""
        return self.manifest.protocol("compound")

    @property
    def moonwell(self) -> ProtocolDeployment:
        """The mToken deployment."""
        return self.manifest.protocol("moonwell")

    @property
    def morpho(self) -> ProtocolDeployment:
        """The Morpho Blue vault deployment."""
        return self.manifest.protocol("morpho_gauntlet_usdc_prime")

    @property
    def router(self) -> str | None:
        """The reward token's swap router."""
        return self.manifest.swap_router


@pytest.fixture(scope="session")
def devnet() -> Iterator[Devnet]:
    """The session's devnet (anvil on a free port, chain id 8453)."""
    with Anvil.start(free_port()) as anvil:
        yield Devnet(deploy_all(anvil.url), anvil.url)


@pytest.fixture
def devnet_snapshot(devnet: Devnet) -> Iterator[Devnet]:
    """The session's devnet, reverted after the test to the state it had before."""
    snapshot = rpc(devnet.url, "evm_snapshot")
    yield devnet
    assert rpc(devnet.url, "evm_revert", [snapshot]) is True
