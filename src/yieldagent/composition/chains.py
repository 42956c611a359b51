"""Builds the chain ports the service runs on, from the settings.

Every catalog chain is simulated unless ``YIELDAGENT_RPC_URL_<chain_id>`` names a node for
it; then web3 serves it, with the contracts its deployment manifest names
(``YIELDAGENT_DEPLOYMENT_<chain_id>``, by default the devnet's ``<data dir>/devnet.json``).
The catalog served for that chain is moved to the manifest's addresses.

``safe_chains`` says where Safe accounts can be created, with what: on a web3 chain, the
Safe and operator module its manifest names and the configured fee collector; on a
simulated chain, Safe's canonical addresses and stand-in addresses for the module (the
simulator runs no contract code, so an account there is a simulated Safe).
"""

from __future__ import annotations

import asyncio

from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from sqlalchemy import Engine

from yieldagent.chain.simulated.chain import SimulatedChain
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.chain.web3.config import CollateralFeedConfig
from yieldagent.composition.deployments import Manifest, chain_config
from yieldagent.config import Settings
from yieldagent.domain.catalog import Catalog, relocate
from yieldagent.domain.errors import ConfigurationError
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.partners.safe_accounts import (
    COMPATIBILITY_FALLBACK_HANDLER_1_4_1,
    SAFE_L2_1_4_1,
    SAFE_PROXY_FACTORY_1_4_1,
    SafeAccountConstants,
)
from yieldagent.domain.partners.smart_accounts import SafeChains
from yieldagent.domain.ports.module_changes import ModuleChangeSource
from yieldagent.domain.ports.signer import Signer
from yieldagent.storage.nonces import NonceStore
from yieldagent.storage.simulation import SimulationStore

SEQUENCER_UPTIME_FEEDS: dict[int, str] = {
    8453: "0xBCF85224fc0756B9Fa45aA7892530B47e10b6433",  # Base: Chainlink's L2 sequencer uptime
}
"""Each rollup's L2 sequencer uptime feed (Chainlink's: answer 0 up, 1 down; ``startedAt``
when that status began), read with the collateral feeds: while the sequencer is down, and
for ``YIELDAGENT_RISK_SEQUENCER_GRACE_SECONDS`` after, the depeg guard trusts no price. A
local devnet has no sequencer and reads none."""


def simulated_market(
    settings: Settings, engine: Engine, catalog: Catalog, set_speed: bool = True
) -> SimulatedMarket:
    """The simulated world in the service's database, started (created at first use).

    ``set_speed``: apply YIELDAGENT_SIM_SPEED; the service does, one-off commands do not.
    """
    market = SimulatedMarket(
        SimulationStore(engine), catalog, settings.sim_seed, settings.sim_speed
    )
    market.start(set_speed)
    return market


def simulated_chains(market: SimulatedMarket, catalog: Catalog) -> dict[int, MarketChain]:
    """A chain port for every catalog chain, on the simulated market."""
    return {chain_id: SimulatedChain(market, chain_id) for chain_id in catalog.chain_ids()}


def served_catalog(settings: Settings, catalog: Catalog) -> Catalog:
    """The catalog as the service serves it: each web3 chain at its manifest's addresses."""
    for chain_id in sorted(settings.rpc_urls):
        path = settings.deployment(chain_id)
        if path is None:
            continue
        manifest = Manifest.load(path)
        if manifest.chain_id != chain_id:
            raise ConfigurationError(f"{path} describes chain {manifest.chain_id}, not {chain_id}")
        addresses = {p.name: p.address for p in manifest.protocols}
        catalog = relocate(catalog, chain_id, manifest.token, addresses)
    return catalog


def build_chains(
    settings: Settings,
    engine: Engine,
    market: SimulatedMarket,
    catalog: Catalog,
    operator: Signer,
) -> dict[int, MarketChain]:
    """A port for every chain of ``catalog`` (the served one): web3 where an RPC URL is
    set, the simulated market elsewhere. Web3 ports belong to the event loop that first
    uses them: build one set per loop."""
    chains = simulated_chains(market, catalog)
    for chain_id, url in sorted(settings.rpc_urls.items()):
        chains[chain_id] = _web3_chain(settings, engine, operator, chain_id, url)
    return chains


def _web3_chain(
    settings: Settings, engine: Engine, operator: Signer, chain_id: int, url: str
) -> MarketChain:
    from yieldagent.chain.web3.adapter import Web3Chain  # web3 loads only for a web3 chain
    from yieldagent.chain.web3.transactions import SendSettings

    path = settings.deployment(chain_id)
    if path is None:
        raise ConfigurationError(
            f"YIELDAGENT_RPC_URL_{chain_id} is set, but no deployment manifest names the "
            f"chain's contracts: set YIELDAGENT_DEPLOYMENT_{chain_id} (or run make devnet)"
        )
    safe = _web3_constants(settings, chain_id, operator.address)
    overrides: dict[str, object] = {}
    if chain_id in settings.collateral_feeds:  # the setting replaces the manifest's feeds
        overrides["collateral_feeds"] = tuple(
            CollateralFeedConfig.of(*feed) for feed in settings.collateral_feeds[chain_id]
        )
    if not settings.devnet:
        overrides["sequencer_feed"] = SEQUENCER_UPTIME_FEEDS.get(chain_id)
    config = chain_config(
        Manifest.load(path),
        confirmations=settings.confirmations,
        log_range=settings.log_range,
        multicall_batch=settings.multicall_batch,
        log_address_batch=settings.log_address_batch,
        head_reuse_seconds=settings.head_reuse_seconds,
        safe=None if isinstance(safe, str) else safe,
        **overrides,
    )
    sending = SendSettings(
        receipt_timeout_seconds=settings.tx_timeout_seconds,
        max_in_flight=settings.tx_max_in_flight,
        resend_after_seconds=settings.tx_resend_seconds,
    )
    return Web3Chain.connect(url, config, operator, NonceStore(engine), sending)


async def verify_deployments(settings: Settings, operator: str) -> None:
    """Refuses to start when a web3 chain's manifest names contracts the chain does not
    hold as this project builds them (``chain.web3.deployment_check``), naming each
    difference: one batch of reads per chain, the chains at once."""
    from web3 import AsyncHTTPProvider, AsyncWeb3  # web3 loads only for a web3 chain

    from yieldagent.chain.web3.deployment_check import ExpectedDeployment, check_deployment

    checks: dict[int, ExpectedDeployment] = {}
    for chain_id in sorted(settings.rpc_urls):
        path = settings.deployment(chain_id)
        safe = Manifest.load(path).safe if path is not None else None
        if safe is None:
            continue  # no accounts there (safe_chains says why), so no module to trust
        checks[chain_id] = ExpectedDeployment(
            chain_id=chain_id,
            module=safe.module,
            module_setup=safe.module_setup,
            factory=safe.factory,
            singleton=safe.singleton,
            fallback_handler=safe.fallback_handler,
            multi_send_call_only=safe.multi_send_call_only,
            admin=safe.admin,
            operator=operator,
        )

    async def check(chain_id: int, expected: ExpectedDeployment) -> list[str]:
        w3 = AsyncWeb3(AsyncHTTPProvider(settings.rpc_urls[chain_id]))
        try:
            return await check_deployment(w3, expected)
        finally:
            await w3.provider.disconnect()

    found = await asyncio.gather(*(check(c, expected) for c, expected in checks.items()))
    problems = [
        f"chain {chain_id}: {problem}"
        for chain_id, listed in zip(checks, found, strict=True)
        for problem in listed
    ]
    if problems:
        manifests = ", ".join(
            f"YIELDAGENT_DEPLOYMENT_{c}" for c, listed in zip(checks, found, strict=True) if listed
        )
        raise ConfigurationError(
            f"the chain does not hold what {manifests} names; deploy with "
            "`yieldagent operator deploy-module` and use the manifest it writes:\n"
            + "\n".join(problems)
        )


def module_change_sources(settings: Settings) -> dict[int, tuple[ModuleChangeSource, int]]:
    """The change logs of each web3 chain's operator module, with the block to read them
    from the first time (the manifest's ``deployed_block``). A simulated chain has none:
    the simulator runs no module and has no admin. Sources belong to the event loop that
    first uses them."""
    from yieldagent.chain.web3.module_changes import Web3ModuleChanges

    sources: dict[int, tuple[ModuleChangeSource, int]] = {}
    for chain_id, url in sorted(settings.rpc_urls.items()):
        path = settings.deployment(chain_id)
        manifest = Manifest.load(path) if path is not None else None
        if manifest is None or manifest.safe is None:
            continue
        source = Web3ModuleChanges.connect(
            url, chain_id, manifest.safe.module, settings.confirmations
        )
        sources[chain_id] = (source, manifest.deployed_block)
    return sources


def _named(name: str) -> str:
    """A fixed address no key controls, named after what it stands for on the simulator."""
    return to_checksum_address(keccak(text=f"yieldagent.simulated.{name}")[12:])


SIMULATED_MODULE = _named("operator-module")
SIMULATED_MODULE_SETUP = _named("operator-module-setup")
SIMULATED_FEE_COLLECTOR = _named("fee-collector")
"""Where a simulated chain's Safe accounts say their module, set-up and (unless
``YIELDAGENT_FEE_COLLECTOR`` names one) fee collector are."""


def fee_collector(settings: Settings) -> str:
    """Where fees go: ``YIELDAGENT_FEE_COLLECTOR``, else (simulated chains only, since a
    real chain refuses to create accounts without one) the simulated collector."""
    return settings.fee_collector or SIMULATED_FEE_COLLECTOR


def safe_chains(settings: Settings, catalog: Catalog, operator: str) -> SafeChains:
    """Each chain's Safe account constants, or why accounts cannot be created there."""
    constants: dict[int, SafeAccountConstants] = {}
    refusals: dict[int, str] = {}
    configured = settings.fee_collector
    for chain_id in catalog.chain_ids():
        if configured and to_checksum_address(configured) == to_checksum_address(operator):
            refusals[chain_id] = (
                "YIELDAGENT_FEE_COLLECTOR is the operator's address; fees must never reach "
                "the operator key: set another collector"
            )
        elif chain_id in settings.rpc_urls:
            found = _web3_constants(settings, chain_id, operator)
            if isinstance(found, str):
                refusals[chain_id] = found
            else:
                constants[chain_id] = found
        else:
            [token, *_] = catalog.chain(chain_id).tokens
            constants[chain_id] = SafeAccountConstants(
                chain_id=chain_id,
                factory=SAFE_PROXY_FACTORY_1_4_1,
                singleton=SAFE_L2_1_4_1,
                fallback_handler=COMPATIBILITY_FALLBACK_HANDLER_1_4_1,
                module_setup=SIMULATED_MODULE_SETUP,
                module=SIMULATED_MODULE,
                token=token.address,
                fee_collector=fee_collector(settings),
            )
    return SafeChains(constants, refusals)


def _web3_constants(settings: Settings, chain_id: int, operator: str) -> SafeAccountConstants | str:
    """A web3 chain's constants from its manifest, or why there are none."""
    if not settings.fee_collector:
        return "YIELDAGENT_FEE_COLLECTOR is not set; a real chain needs a fee collector"
    path = settings.deployment(chain_id)
    if path is None:
        return f"no deployment manifest names its contracts (YIELDAGENT_DEPLOYMENT_{chain_id})"
    manifest = Manifest.load(path)
    safe = manifest.safe
    if safe is None:
        return f"its deployment manifest {path} names no Safe operator module"
    if to_checksum_address(safe.operator) != to_checksum_address(operator):
        return (
            f"the operator module lets {safe.operator} act, not this service's operator {operator}"
        )
    return SafeAccountConstants(
        chain_id=chain_id,
        factory=safe.factory,
        singleton=safe.singleton,
        fallback_handler=safe.fallback_handler,
        module_setup=safe.module_setup,
        module=safe.module,
        token=to_checksum_address(manifest.token),
        fee_collector=to_checksum_address(settings.fee_collector),
    )
