"""The soak (``benchmarks/soak.py``): a mixed partner load at about 80% of the measured
capacity of the mix, against the whole service in its own process, on each backend.

It passes only with no 5xx (and no request left without a reply), every replayed
withdrawal answered as the first, the books exact for every wallet, and the resident memory
of the server and of Envoy flat over the run's last window (the last five minutes; the
last half of a shorter run), under 5% growth each. ``SOAK_SECONDS`` sets the duration:
a short smoke run by default, ten minutes under ``make soak``. The memory bound is checked
when that window holds a minute or more: a shorter run is still warming its caches. The
smoke run drives 8 wallets, a longer one ``SOAK_WALLETS``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sqlalchemy import Engine

from benchmarks.soak import FEE_COLLECTOR, WALLETS, growth, soak, window
from support.books import book_disagreements
from support.databases import BACKENDS, temporary_database
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.storage.db import create_db_engine
from yieldagent.storage.simulation import SimulationStore

SECONDS = float(os.environ.get("SOAK_SECONDS", "15"))
MAX_GROWTH = 0.05


@pytest.mark.rest
@pytest.mark.timeout(0)
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_mixed_load_leaves_no_server_error_flat_memory_and_exact_books(
    backend: str, tmp_path: Path
) -> None:
    with temporary_database(backend, tmp_path) as url:
        outcome = soak(SECONDS, url, tmp_path, WALLETS if SECONDS >= 120 else 8)
        print(json.dumps({"soak": backend, **outcome.report()}))

        assert outcome.server_errors == 0, outcome.report()["statuses"]
        assert not outcome.replay_mismatches
        assert outcome.replays > 0
        assert outcome.server_memory
        assert outcome.envoy_memory
        engine = create_db_engine(url)
        try:
            problems = book_disagreements(
                engine, _market(engine), outcome.wallet_ids, FEE_COLLECTOR
            )
        finally:
            engine.dispose()
        assert not problems, "\n".join(problems)
        if window(SECONDS) >= 60:
            assert growth(outcome.server_memory, SECONDS) < MAX_GROWTH, outcome.report()
            assert growth(outcome.envoy_memory, SECONDS) < MAX_GROWTH, outcome.report()


def _market(engine: Engine) -> SimulatedMarket:
    """The simulated chain the service ran on, to check the books against."""
    market = SimulatedMarket(SimulationStore(engine), load_catalog(), 7, speed=0.0)
    market.start(set_speed=False)
    return market
