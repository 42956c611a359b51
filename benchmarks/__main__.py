"""Runs every benchmark and prints one JSON line per figure.

In order: the simulated market, storage reads, the optimizer and its optimality check, APR,
the aggregates (``/stats``, ``/tokens``, the catalog at 100 and 100,000 wallets), REST
reads, the partners' poll beside FastAPI and the edge's ceiling, events, and the agent's
cycles (about 10 minutes of the whole). PostgreSQL figures are added when
``YIELDAGENT_TEST_DATABASE_URL`` is set.

``BENCH_ONLY=name,name`` runs only those (module names: ``partner_reads,agent``).
``BENCH_DEVNET=1`` adds the devnet benchmarks (``devnet_cycle``: anvil behind a proxy with a
round trip, the web3 adapter and agent cycles of ``BENCH_DEVNET_WALLETS`` wallets, today's
path one move after another and the pipelined one; minutes, not seconds; then
``batched_execution``: gas per move alone, pipelined and in one transaction).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from benchmarks import (
    agent,
    aggregates,
    apr,
    events,
    market,
    optimizer,
    partner_reads,
    rest_reads,
    store_reads,
)

BENCHMARKS: dict[str, Callable[[], None]] = {
    "market": market.main,
    "store_reads": store_reads.main,
    "optimizer": optimizer.main,
    "apr": apr.main,
    "aggregates": aggregates.main,
    "rest_reads": rest_reads.main,
    "partner_reads": partner_reads.main,
    "events": events.main,
    "agent": agent.main,
}

if __name__ == "__main__":
    only = {n for n in os.environ.get("BENCH_ONLY", "").split(",") if n}
    for name, run in BENCHMARKS.items():
        if not only or name in only:
            run()
    if os.environ.get("BENCH_DEVNET") == "1" and (not only or "devnet_cycle" in only):
        from benchmarks import batched_execution, devnet_cycle

        devnet_cycle.main()
        batched_execution.main()
