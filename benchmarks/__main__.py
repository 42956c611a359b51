"""Runs every benchmark and prints one JSON line per figure.

``BENCH_DEVNET=1`` adds the devnet benchmark (``devnet_cycle``: anvil, the web3 adapter and
an agent cycle of ``BENCH_DEVNET_WALLETS`` wallets; minutes, not seconds).
"""

from __future__ import annotations

import os

from benchmarks import events, market, partner_reads, rest_reads, store_reads

if __name__ == "__main__":
    market.main()
    store_reads.main()
    rest_reads.main()
    partner_reads.main()
    events.main()
    if os.environ.get("BENCH_DEVNET") == "1":
        from benchmarks import devnet_cycle

        devnet_cycle.main()
