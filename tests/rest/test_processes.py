"""Two serving processes behind one Envoy (``YIELDAGENT_GRPC_PROCESSES=2``), on SQLite: calls
reach both, a write through one is read at once through the other, and withdrawals from one
wallet sent through both at once move its money one at a time, with books that balance.

Which process served a call is read from Envoy's own per-endpoint counters (its admin
``/clusters``): each endpoint of the gRPC cluster is one process's port.
"""

from __future__ import annotations

import os
import threading
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from eth_utils.address import to_checksum_address
from sqlalchemy import Engine

from support.books import assert_books_balance
from support.databases import temporary_database
from support.funded import PROTOCOLS, USDC, Funded
from support.service import Response, RunningService, running_service
from support.wallet_setup import FEE
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.storage.db import create_db_engine
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.simulation import SimulationStore
from yieldagent.storage.wallets import WalletStore


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningService]:
    """The service with two serving processes, reached through its Envoy."""
    directory = tmp_path_factory.mktemp("two-processes")
    settings = {"YIELDAGENT_GRPC_PROCESSES": "2", "YIELDAGENT_FEE_COLLECTOR": FEE}
    with (
        temporary_database("sqlite", directory) as url,
        running_service(url, directory, settings) as service,
    ):
        yield service


@pytest.fixture(scope="module")
def engine(two: RunningService) -> Iterator[Engine]:
    engine = create_db_engine(two.database_url)
    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def market(engine: Engine) -> SimulatedMarket:
    market = SimulatedMarket(SimulationStore(engine), load_catalog(), 7, speed=0.0)
    market.start(set_speed=False)
    return market


def _activated(
    two: RunningService, engine: Engine, market: SimulatedMarket, name: str, eoa: int
) -> Funded:
    """A wallet of a new partner, activated through the edge with 1,000 USDC."""
    _, key = PartnerStore(engine).create(name, PERMISSIONS)
    headers = {"X-Partner-Name": name, "X-Partner-API-Key": key}
    owner = to_checksum_address(f"0x{eoa:040x}")
    response = two.request(
        "POST", "/api/v1/proxy/zerodev/smart-accounts", {"eoa": owner, "chain": 8453}, headers
    )
    assert response.status == 200, response.body
    wallet = response.json()["smartAccount"]
    transfer = market.deposit_from(8453, USDC, owner, wallet, 1_000 * 10**6)
    funded = Funded(owner, wallet, transfer.tx_hash, headers)
    response = two.request("POST", "/api/v1/8453/wallets", funded.activation(), headers)
    assert response.status == 201, response.body
    return funded


def _served(two: RunningService) -> dict[int, int]:
    """The calls Envoy has sent to each port of the gRPC cluster so far, by port."""
    admin = (two.data_dir / "envoy-admin.address").read_text().strip()
    with urllib.request.urlopen(f"http://{admin}/clusters") as reply:
        lines = reply.read().decode().splitlines()
    served = {}
    for line in lines:
        cluster, host, stat, *value = line.split("::")
        if cluster == "yieldagent_grpc" and stat == "rq_total":
            served[int(host.rsplit(":", 1)[1])] = int(value[0])
    return served


def _through(two: RunningService, method: str, path: str, *args: Any) -> tuple[Response, int]:
    """A call, and the port of the process that served it (calls made one at a time)."""
    before = _served(two)
    response = two.request(method, path, *args)
    after = _served(two)
    (port,) = [port for port, count in after.items() if count > before.get(port, 0)]
    return response, port


def test_calls_reach_every_serving_process(two: RunningService) -> None:
    assert len(two.serving) == 2
    assert len(set(two.serving.values())) == 2  # two processes, by their ids
    assert os.getpid() in two.serving.values()  # the main one runs in this test's process
    before = _served(two)
    assert set(before) == set(two.serving)  # Envoy's cluster lists each process's port

    for _ in range(20):
        assert two.request("GET", "/api/v1/healthcheck").status == 200

    after = _served(two)
    reached = {two.serving[port] for port in after if after[port] > before[port]}
    assert reached == set(two.serving.values())


def test_a_write_through_one_process_is_read_at_once_through_the_other(
    two: RunningService, engine: Engine, market: SimulatedMarket
) -> None:
    funded = _activated(two, engine, market, "read-your-writes", 1)
    url = f"/api/v1/8453/wallets/{funded.wallet}"
    crossed = 0
    for turn in range(20):
        protocols = [PROTOCOLS[turn % len(PROTOCOLS)]]
        written, writer = _through(two, "PUT", f"{url}/protocols", protocols, funded.headers)
        assert written.status == 204, written.body
        read, reader = _through(two, "GET", url)

        assert read.status == 200, read.body
        assert read.json()["selected_protocols"] == protocols
        crossed += writer != reader
    assert crossed > 0  # Envoy chose the other process for the read at least once


def test_withdrawals_through_both_processes_move_the_money_one_at_a_time(
    two: RunningService, engine: Engine, market: SimulatedMarket
) -> None:
    funded = _activated(two, engine, market, "money", 2)
    url = f"/api/v1/8453/wallets/{funded.wallet}:withdraw"
    start = threading.Barrier(8)
    before = _served(two)

    def withdraw(_: int) -> Response:
        start.wait()
        return two.request("POST", url, {"amount": 10 * 10**6}, funded.headers)

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(withdraw, range(8)))

    assert [a.status for a in answers] == [200] * 8, [a.body for a in answers]
    after = _served(two)
    assert all(after[port] > before[port] for port in after)  # both processes took some
    wallet = WalletStore(engine).get(8453, funded.wallet)
    assert wallet is not None
    assert len(WalletStore(engine).withdrawals(wallet.id)) == 8
    assert_books_balance(engine, market, [wallet.id])
