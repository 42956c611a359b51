"""The service's settings on the test devnet, and a partner to call it with."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from eth_account import Account
from sqlalchemy import Engine

from support.anvil import dev_key
from support.devnet import Devnet
from yieldagent.devnet.aave import borrow_to_utilization_aave
from yieldagent.devnet.borrowing import borrow_to_utilization
from yieldagent.devnet.deploy import DEFAULT_OPERATOR_ACCOUNT, UTILIZATION
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.storage.partners import PartnerStore

OPERATOR_KEY = "0x" + dev_key(DEFAULT_OPERATOR_ACCOUNT).hex()
"""The key the devnet's operator module lets act: the service's operator on the devnet."""
SAFE_ACCOUNTS = "/api/v1/proxy/safe/smart-accounts"


def devnet_env(
    devnet: Devnet, directory: Path, operator_key: str, **settings: str
) -> dict[str, str]:
    """``YIELDAGENT_*`` settings that put chain 8453 on ``devnet`` (the others stay
    simulated): its manifest written under ``directory``, an operator funded for gas, fees
    to the policy's collector, agents that run only when asked, and no kept head (a test
    drives the chain between two calls and expects the next to see it at once); plus
    ``settings``."""
    manifest = directory / "deployment.json"
    devnet.manifest.write(manifest)
    devnet.d.fund(Account.from_key(operator_key).address, 10**21)
    return {
        "YIELDAGENT_ENV": "devnet",
        "YIELDAGENT_RPC_URL_8453": devnet.url,
        "YIELDAGENT_DEPLOYMENT_8453": str(manifest),
        "YIELDAGENT_OPERATOR_PRIVATE_KEY": operator_key,
        "YIELDAGENT_FEE_COLLECTOR": devnet.manifest.extras["fee_collector"],
        "YIELDAGENT_AGENT_INTERVAL_SECONDS": "1000000",
        "YIELDAGENT_METRICS_PORT": "0",
        "YIELDAGENT_HEAD_REUSE_SECONDS": "0",
        **settings,
    }


def partner(engine: Engine, name: str) -> dict[str, str]:
    """A new partner with every permission: its REST credential headers."""
    _, key = PartnerStore(engine).create(name, PERMISSIONS)
    return {"X-Partner-Name": name, "X-Partner-API-Key": key}


@contextmanager
def utilization(devnet: Devnet, protocol: str, target: float) -> Iterator[None]:
    """Borrowers take ``protocol``'s utilization to ``target`` (its rate jumps or falls),
    and bring it back to the devnet's usual level afterwards: other tests share the chain."""
    deployment = devnet.manifest.protocol(protocol)
    move = borrow_to_utilization_aave if deployment.kind == "aave_v3" else borrow_to_utilization
    move(devnet.d, deployment, devnet.usdc, target)
    try:
        yield
    finally:
        move(devnet.d, deployment, devnet.usdc, UTILIZATION[protocol])
