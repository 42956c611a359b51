"""Fixtures shared by the whole suite: databases, engines, partners and the devnet.

Every storage-touching test runs on SQLite, and also on PostgreSQL whenever
``YIELDAGENT_TEST_DATABASE_URL`` is set (each test then gets a schema of its own). Tests
marked ``evm`` share one anvil devnet per session (``support.devnet``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from support.books import assert_books_balance
from support.databases import BACKENDS, temporary_database
from support.devnet import devnet, devnet_snapshot
from support.wallet_setup import BASE, make_lifecycle
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.composition.chains import simulated_chains
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.domain.ports.credentials import Partner
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.simulation import SimulationStore

__all__ = ["devnet", "devnet_snapshot"]  # the evm tests' fixtures, for every folder

GENESIS_WALL = 1_767_225_600.0  # 2026-01-01T00:00:00Z
SEED = 7


@pytest.fixture
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL of an empty database: SQLite always, PostgreSQL when configured."""
    with temporary_database(getattr(request, "param", "sqlite"), tmp_path) as url:
        yield url


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Runs every test that uses a database once per backend."""
    if "database_url" in metafunc.fixturenames and not any(
        m.name == "sqlite_only" for m in metafunc.definition.iter_markers()
    ):
        metafunc.parametrize("database_url", BACKENDS, indirect=True)


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    """A migrated database."""
    engine = create_db_engine(database_url)
    migrate(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def partners(engine: Engine) -> PartnerStore:
    """The partner store of the test database."""
    return PartnerStore(engine)


@pytest.fixture
def partner(partners: PartnerStore) -> tuple[Partner, str]:
    """A partner with every permission, and its API key."""
    return partners.create("acme", PERMISSIONS)


@pytest.fixture
def market(engine: Engine) -> SimulatedMarket:
    """The simulated market at genesis, with simulated time standing still."""
    simulated = SimulatedMarket(
        SimulationStore(engine), load_catalog(), SEED, speed=0.0, wall=lambda: GENESIS_WALL
    )
    simulated.start()
    return simulated


@pytest.fixture
def chains(market: SimulatedMarket) -> dict[int, MarketChain]:
    """A chain port per catalog chain, on the simulated market."""
    return simulated_chains(market, load_catalog())


@pytest.fixture
def books_balance_after(
    request: pytest.FixtureRequest, engine: Engine, market: SimulatedMarket
) -> Iterator[None]:
    """After the test and the worker's next tick (which books deposits nobody announced),
    the one conservation check (``support.books``) on every wallet of its database: the
    scenario must leave books that agree with the chain, to the unit. A test that leaves a
    wallet mid-operation on purpose is marked ``unsettled``."""
    yield
    if request.node.get_closest_marker("unsettled"):
        return
    asyncio.run(make_lifecycle(engine, simulated_chains(market, load_catalog())).refresh(BASE))
    with engine.connect() as connection:
        ids = [row.id for row in connection.execute(text("SELECT id FROM wallets"))]
    assert_books_balance(engine, market, ids)
