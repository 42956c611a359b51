"""The composition root loads the operator's signer once, off the event loop, and a real
chain with a development key stops the service before it touches anything; the worker's
jobs do what they say."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from support.agent_setup import make_agent
from support.wallet_setup import (
    BASE,
    FEE,
    USDC,
    activation,
    fund,
    positions,
    stored,
)
from yieldagent.catalog import load_catalog
from yieldagent.chain.signers.local import LocalKeySigner
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.chain.simulated.risk import Scenarios
from yieldagent.composition import compose
from yieldagent.composition.compose import Service, load_operator
from yieldagent.config import Settings, load_settings
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.errors import ConfigurationError
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.ports.credentials import Partner

KEY = "0x" + "5e" * 32


async def test_the_key_is_loaded_in_a_thread_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[int] = []

    def loading(settings: Settings) -> LocalKeySigner:
        threads.append(threading.get_ident())
        return LocalKeySigner(KEY)

    monkeypatch.setattr(compose, "load_operator_wallet", loading)
    signer = await load_operator(load_settings({"YIELDAGENT_DATA_DIR": str(tmp_path)}))
    assert signer.address == LocalKeySigner(KEY).address
    assert threads and threads[0] != threading.get_ident()


async def test_a_real_chain_with_the_development_password_stops_the_start(tmp_path: Path) -> None:
    settings = load_settings(
        {
            "YIELDAGENT_DATA_DIR": str(tmp_path),
            "YIELDAGENT_ENV": "devnet",
            "YIELDAGENT_RPC_URL_8453": "http://127.0.0.1:1",
        }
    )
    service = Service(settings, with_edge=False)
    with pytest.raises(ConfigurationError, match="set YIELDAGENT_OPERATOR_KEY_PASSWORD"):
        await service.start()
    await service.stop()
    assert os.listdir(tmp_path) == []  # no database, no keystore


async def test_a_nodes_url_in_development_mode_stops_the_start(tmp_path: Path) -> None:
    settings = load_settings(
        {
            "YIELDAGENT_DATA_DIR": str(tmp_path),
            "YIELDAGENT_RPC_URL_8453": "http://127.0.0.1:1",
            "YIELDAGENT_OPERATOR_PRIVATE_KEY": "0x" + "5e" * 32,
        }
    )
    service = Service(settings, with_edge=False)
    with pytest.raises(ConfigurationError, match="YIELDAGENT_ENV is development"):
        await service.start()
    await service.stop()
    assert os.listdir(tmp_path) == []  # nothing listened, nothing was written


async def test_several_serving_processes_without_envoy_stop_the_start(tmp_path: Path) -> None:
    settings = load_settings(
        {"YIELDAGENT_DATA_DIR": str(tmp_path), "YIELDAGENT_GRPC_PROCESSES": "2"}
    )
    service = Service(settings, with_edge=False)
    with pytest.raises(ConfigurationError, match="needs the Envoy that `yieldagent run` starts"):
        await service.start()
    await service.stop()
    assert os.listdir(tmp_path) == []


async def test_the_activation_job_activates_open_activations_and_places_their_funds(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    settings = load_settings({"YIELDAGENT_ACTIVATION_PLACEMENT": "background"})
    lifecycle = compose.build_lifecycle(settings, engine, chains, load_catalog(), FEE)
    agent = make_agent(engine, lifecycle)
    funded = fund(engine, market, partner[0].id, 250_000 * USDC)
    wallet = await lifecycle.activate(
        partner[0].id, BASE, activation(funded.address, funded.tx_hash)
    )
    assert wallet.status == WalletStatus.ACTIVATING

    await compose.activation_placement(agent, lifecycle, lambda: False)()

    assert stored(engine, funded.address).status == WalletStatus.ACTIVATED
    assert positions(market, funded.address)


async def test_the_guards_watch_job_moves_an_exited_pools_wallets_out_when_none_is_due(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    settings = load_settings({})
    lifecycle = compose.build_lifecycle(settings, engine, chains, load_catalog(), FEE)
    agent = compose.build_agent(settings, engine, lifecycle)
    vault = "morpho_gauntlet_usdc_prime"
    funded = fund(engine, market, partner[0].id, 250_000 * USDC)
    await lifecycle.activate(
        partner[0].id, BASE, activation(funded.address, funded.tx_hash, protocols=(vault,))
    )
    assert positions(market, funded.address).get(vault, 0) > 0
    with engine.begin() as connection:
        connection.execute(text("UPDATE wallet_schedule SET next_run_at = 1e12"))
    job = compose.guard_watch(agent, lambda: False)

    await job()  # nothing exited: nothing runs
    assert positions(market, funded.address).get(vault, 0) > 0

    Scenarios(market).price(BASE, "WETH", "3000")  # the vault's collateral off its peg
    await job()
    assert positions(market, funded.address).get(vault, 0) == 0
