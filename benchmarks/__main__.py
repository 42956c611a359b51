"""Runs every benchmark and prints one JSON line per figure."""

from __future__ import annotations

from benchmarks import rest_reads, store_reads

if __name__ == "__main__":
    store_reads.main()
    rest_reads.main()
