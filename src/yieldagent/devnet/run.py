"""``make devnet``: anvil on 127.0.0.1:8545 (chain id 8453) with everything deployed.

Starts anvil (its output in ``<data dir>/anvil.log``), deploys the devnet, writes the
manifest (``var/devnet.json``, or ``$YIELDAGENT_DEVNET_MANIFEST``), funds the service's
operator wallet with ether for gas, prints one JSON line that names the manifest and the
addresses, and stays in the foreground until SIGINT or SIGTERM, which stop anvil. The port
comes from ``YIELDAGENT_DEVNET_PORT`` (8545). The operator module's operator is the service's
operator wallet; the fee collector is the service's ``YIELDAGENT_FEE_COLLECTOR`` (else
anvil's account 0, never the operator), which ``make run`` must be given too to create Safe
accounts.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from dataclasses import replace
from pathlib import Path
from types import FrameType

from yieldagent.chain.operator import load_operator_wallet
from yieldagent.composition.deployments import Manifest
from yieldagent.config import load_settings, logged_secrets
from yieldagent.devnet.anvil import BASE_CHAIN_ID, Anvil
from yieldagent.devnet.deploy import deploy_all
from yieldagent.devnet.deployer import Deployer
from yieldagent.observability.logs import configure_logging

logger = logging.getLogger(__name__)

PORT_ENV = "YIELDAGENT_DEVNET_PORT"
DEFAULT_PORT = 8545
MANIFEST_ENV = "YIELDAGENT_DEVNET_MANIFEST"
DEFAULT_MANIFEST = Path("var") / "devnet.json"
OPERATOR_GAS_MONEY = 10**21  # wei (1,000 ether)


class _Stop(Exception):
    """SIGINT or SIGTERM arrived."""


def _stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signal.Signals(signum).name)


def manifest_path() -> Path:
    """Where the manifest goes: ``$YIELDAGENT_DEVNET_MANIFEST``, else ``var/devnet.json``."""
    return Path(os.environ.get(MANIFEST_ENV) or DEFAULT_MANIFEST)


def summary(manifest: Manifest, path: str) -> dict[str, object]:
    """What ``make devnet`` prints: the manifest's path and the addresses that matter."""
    return {
        "manifest": path,
        "rpc_url": manifest.rpc_url,
        "chain_id": manifest.chain_id,
        "block": manifest.deployed_block,
        "token": manifest.token,
        "protocols": {p.name: p.address for p in manifest.protocols},
        "operator": manifest.extras.get("operator"),
        "safe_module": manifest.safe and manifest.safe.module,
    }


def main() -> int:
    """Runs the devnet until interrupted; 0 on a clean stop, 1 if anvil died."""
    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format, logged_secrets(settings))
    port = int(os.environ.get(PORT_ENV) or DEFAULT_PORT)
    path = manifest_path()
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    anvil = Anvil(port, chain_id=BASE_CHAIN_ID, log=settings.data_dir / "anvil.log")
    try:
        anvil.launch()
        operator = load_operator_wallet(settings).address
        manifest = deploy_all(anvil.url, fee_collector=settings.fee_collector, operator=operator)
        Deployer(anvil.url).fund(operator, OPERATOR_GAS_MONEY)
        manifest = replace(manifest, extras={**manifest.extras, "operator": operator})
        manifest.write(path)
        print(json.dumps(summary(manifest, str(path.resolve()))), flush=True)
        while anvil.process is not None and anvil.process.poll() is None:
            time.sleep(0.5)
        logger.error("devnet: anvil exited with %s", anvil.process and anvil.process.returncode)
        return 1
    except _Stop as stop:
        logger.info("devnet: %s, stopping anvil", stop)
        return 0
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not skip the stop
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        anvil.stop()
