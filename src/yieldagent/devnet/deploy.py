"""Deploys the whole devnet on a running anvil and describes it in a ``Manifest``.

The order: Multicall3 at its canonical address (``multicall.py``), USDC, Aave v3, then
Compound v3, Moonwell and Morpho Blue with its vault, the swap router for the reward token,
Safe 1.4.1 with the operator module and its listing, and last the borrowers that give every
pool a realistic utilization. Compound, Moonwell, Morpho, the router, Safe and the borrowers
of those pools come from their own modules (``compound.py``, ``moonwell.py``, ``morpho.py``,
``swap.py``, ``safe.py``, ``borrowing.py``); a module that is not there yet is skipped with a
log line.
"""

from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from yieldagent.composition.deployments import Manifest, ProtocolDeployment
from yieldagent.devnet.aave import borrow_to_utilization_aave, deploy_aave
from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.multicall import deploy_multicall3
from yieldagent.devnet.toolchain import compile_project
from yieldagent.devnet.usdc import USDC_DECIMALS, USDC_SYMBOL, deploy_usdc

logger = logging.getLogger(__name__)

# The operator module's operator when none is given: anvil's dev account 4, whose key the
# tests sign with (``make devnet`` passes the service's operator).
DEFAULT_OPERATOR_ACCOUNT = 4

# The borrowers' targets: near each pool's kink, as on Base.
UTILIZATION = {
    "aave": 0.80,
    "compound": 0.80,
    "moonwell": 0.75,
    "morpho_gauntlet_usdc_prime": 0.90,
}
# module and its deploy function, in deployment order
PROTOCOL_MODULES = (
    ("compound", "deploy_compound"),
    ("moonwell", "deploy_moonwell"),
    ("morpho", "deploy_morpho"),
)


def _optional(module: str) -> ModuleType | None:
    """``yieldagent.devnet.<module>``, or None (logged) when this tree does not have it."""
    try:
        return importlib.import_module(f"yieldagent.devnet.{module}")
    except ModuleNotFoundError as error:
        if error.name != f"yieldagent.devnet.{module}":
            raise
        logger.warning("devnet: yieldagent.devnet.%s is missing; skipping it", module)
        return None


@contextmanager
def _timed(step: str, timings: dict[str, float]) -> Iterator[None]:
    started = time.monotonic()
    yield
    timings[step] = round(time.monotonic() - started, 3)
    logger.info("devnet: %s in %.2fs", step, timings[step], extra={"step": step})


def deploy_all(
    url: str,
    *,
    fee_collector: str | None = None,
    operator: str | None = None,
    manifest_path: Path | None = None,
) -> Manifest:
    """Deploys every contract of the devnet on the anvil at ``url`` and returns its manifest.

    ``fee_collector`` is the fee collector the manifest names for the service (anvil's
    account 0 by default; ``make devnet`` passes the service's). ``operator`` is the Safe operator
    module's operator key (anvil's account ``DEFAULT_OPERATOR_ACCOUNT`` by default). With
    ``manifest_path`` the manifest is also written there.
    """
    timings: dict[str, float] = {}
    started = time.monotonic()
    with _timed("compile", timings):
        compile_project()
    d = Deployer(url)
    collector = fee_collector or d.admin
    with _timed("multicall3", timings):
        deploy_multicall3(d)
    with _timed("usdc", timings):
        usdc = deploy_usdc(d).address
    with _timed("aave", timings):
        protocols: list[ProtocolDeployment] = [deploy_aave(d, usdc)]
    collateral_feeds: dict[str, dict[str, str]] = {}
    for module_name, function in PROTOCOL_MODULES:
        module = _optional(module_name)
        if module is not None:
            with _timed(module_name, timings):
                protocols.append(getattr(module, function)(d, usdc))
            if hasattr(module, "collateral_feeds"):
                collateral_feeds.update(module.collateral_feeds(protocols[-1]))

    reward_token = _role(protocols, "reward_token")
    swap_router = _role(protocols, "swap_router")
    swap = _optional("swap") if reward_token and not swap_router else None
    if swap is not None and reward_token is not None:
        with _timed("swap", timings):
            swap_router = swap.deploy_swap_router(d, usdc, reward_token)

    safe_deployment = None
    safe = _optional("safe")
    if safe is not None:
        with _timed("safe", timings):
            safe_deployment = safe.deploy_safe(
                d,
                usdc,
                protocols,
                operator or d.accounts[DEFAULT_OPERATOR_ACCOUNT],
                reward_token=reward_token,
                swap_router=swap_router,
            )

    with _timed("borrowers", timings):
        _borrow_everywhere(d, usdc, protocols)

    manifest = Manifest(
        chain_id=int(d.w3.eth.chain_id),
        rpc_url=url,
        deployed_block=int(d.w3.eth.block_number),
        token=usdc,
        token_symbol=USDC_SYMBOL,
        token_decimals=USDC_DECIMALS,
        protocols=tuple(protocols),
        reward_token=reward_token,
        swap_router=swap_router,
        borrower=d.actor("aave-borrower"),
        extras={"fee_collector": collector, "admin": d.admin},
        safe=safe_deployment,
        collateral_feeds=collateral_feeds,
    )
    if manifest_path is not None:
        manifest.write(manifest_path)
    logger.info(
        "devnet: deployed in %.2fs",
        time.monotonic() - started,
        extra={"timings": timings, "block": manifest.deployed_block},
    )
    return manifest


def _borrow_everywhere(d: Deployer, usdc: str, protocols: list[ProtocolDeployment]) -> None:
    borrowing = _optional("borrowing") if len(protocols) > 1 else None
    for deployment in protocols:
        utilization = UTILIZATION.get(deployment.name, 0.80)
        borrow: Callable[..., Any] | None = (
            borrow_to_utilization_aave
            if deployment.kind == "aave_v3"
            else getattr(borrowing, "borrow_to_utilization", None)
        )
        if borrow is None:
            logger.warning("devnet: no borrower for %s", deployment.name)
            continue
        borrow(d, deployment, usdc, utilization)


def _role(protocols: list[ProtocolDeployment], role: str) -> str | None:
    """The first contract any deployment records under ``role`` (``reward_token``, ...)."""
    return next((p.contracts[role] for p in protocols if role in p.contracts), None)
