"""A devnet for the ``evm`` tests: anvil on a free port, everything deployed once per session,
and each test run inside an anvil snapshot that is reverted afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from web3 import HTTPProvider, Web3
from web3.types import RPCEndpoint

from support.devnet import Devnet
from yieldagent.devnet.anvil import Anvil, free_port
from yieldagent.devnet.compound import deploy_compound
from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.moonwell import deploy_moonwell
from yieldagent.devnet.morpho import deploy_morpho
from yieldagent.devnet.swap import deploy_swap_router
from yieldagent.devnet.tokens import deploy_token


@pytest.fixture(scope="session")
def devnet_session() -> Iterator[Devnet]:
    """Anvil with the devnet's contracts (a DevToken stands in for the devnet USDC)."""
    with Anvil(free_port()) as node:
        w3 = Web3(HTTPProvider(node.url))
        d = Deployer(w3)
        usdc = str(deploy_token(d, "USD Coin (devnet)", "USDC", 6).address)
        compound = deploy_compound(d, usdc)
        moonwell = deploy_moonwell(d, usdc)
        morpho = deploy_morpho(d, usdc)
        router = deploy_swap_router(d, usdc, compound.contracts["reward_token"])
        yield Devnet(w3, d, usdc, compound, moonwell, morpho, router)


@pytest.fixture
def devnet(devnet_session: Devnet) -> Iterator[Devnet]:
    """The shared devnet, restored to its deployed state after the test."""
    snapshot = devnet_session.w3.provider.make_request(RPCEndpoint("evm_snapshot"), [])["result"]
    yield devnet_session
    devnet_session.w3.provider.make_request(RPCEndpoint("evm_revert"), [snapshot])
