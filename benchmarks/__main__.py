"""Runs every benchmark and prints one JSON line per figure."""

from __future__ import annotations

from benchmarks import market, rest_reads, store_reads

if __name__ == "__main__":
    market.main()
    store_reads.main()
    rest_reads.main()
