"""Builds the chain ports the service runs on, from the settings.

Every catalog chain is simulated unless ``YIELDAGENT_RPC_URL_<chain_id>`` names a node for
it; then web3 serves it, with the contracts its deployment manifest names
(``YIELDAGENT_DEPLOYMENT_<chain_id>``, by default the devnet's ``<data dir>/devnet.json``).
The catalog served for that chain is moved to the manifest's addresses.
"""

from __future__ import annotations

from sqlalchemy import Engine

from yieldagent.chain.simulated.chain import SimulatedChain
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.config import Settings
from yieldagent.domain.catalog import Catalog, relocate
from yieldagent.domain.errors import ConfigurationError
from yieldagent.domain.ports.chain import ChainPort
from yieldagent.domain.ports.signer import Signer
from yieldagent.storage.simulation import SimulationStore


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


def simulated_chains(market: SimulatedMarket, catalog: Catalog) -> dict[int, ChainPort]:
    """A chain port for every catalog chain, on the simulated market."""
    return {chain_id: SimulatedChain(market, chain_id) for chain_id in catalog.chain_ids()}


def served_catalog(settings: Settings, catalog: Catalog) -> Catalog:
    """The catalog as the service serves it: each web3 chain at its manifest's addresses."""
    from yieldagent.devnet.manifest import Manifest

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
) -> dict[int, ChainPort]:
    """A port for every chain of ``catalog`` (the served one): web3 where an RPC URL is
    set, the simulated market elsewhere. Web3 ports belong to the event loop that first
    uses them: build one set per loop."""
    chains = simulated_chains(market, catalog)
    for chain_id, url in sorted(settings.rpc_urls.items()):
        chains[chain_id] = _web3_chain(settings, engine, operator, chain_id, url)
    return chains


def _web3_chain(
    settings: Settings, engine: Engine, operator: Signer, chain_id: int, url: str
) -> ChainPort:
    from yieldagent.chain.web3.adapter import Web3Chain
    from yieldagent.chain.web3.config import Web3ChainConfig
    from yieldagent.chain.web3.transactions import SendSettings
    from yieldagent.devnet.manifest import Manifest
    from yieldagent.storage.nonces import NonceStore

    path = settings.deployment(chain_id)
    if path is None:
        raise ConfigurationError(
            f"YIELDAGENT_RPC_URL_{chain_id} is set, but no deployment manifest names the "
            f"chain's contracts: set YIELDAGENT_DEPLOYMENT_{chain_id} (or run make devnet)"
        )
    config = Web3ChainConfig.from_manifest(
        Manifest.load(path),
        confirmations=settings.confirmations,
        log_range=settings.log_range,
    )
    sending = SendSettings(receipt_timeout_seconds=settings.tx_timeout_seconds)
    return Web3Chain.connect(url, config, operator, NonceStore(engine), sending)
