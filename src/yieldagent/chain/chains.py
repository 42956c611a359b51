"""Builds the chain ports the service runs on, from the settings."""

from __future__ import annotations

from sqlalchemy import Engine

from yieldagent.chain.port import ChainPort
from yieldagent.chain.simulated.chain import SimulatedChain
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.config import Settings
from yieldagent.domain.catalog import Catalog
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
