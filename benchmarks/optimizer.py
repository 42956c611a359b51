"""The optimizer: solve times of ``optimize``, the optimality check, and agreement with a
brute force.

- ``optimize`` for 5, 10 and 20 protocols (copies of Base's four pool kinds under distinct
  names) for 10,000 USDC, unconstrained and with ``min_protocols`` 3, and for 50 million
  USDC, which takes pools across their rate models' kinks: median and p90 in ms.
- ``is_settled`` on a wallet placed where ``optimize`` put it (the pools quoted after its
  deposits): median in µs, and its answer.
- A spot check against a brute force: two pools (every pair of Base's four), totals from
  10,000 to 50 million USDC; the largest shortfall of ``allocate``'s yield below the brute
  force's, relative.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from itertools import combinations

from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.genesis import genesis_pool
from yieldagent.chain.simulated.pools import copy_pool, deposit, quote_of
from yieldagent.domain.constraints import Constraints, Thresholds
from yieldagent.domain.market.curves import Candidate
from yieldagent.domain.optimizer.optimality import is_settled
from yieldagent.domain.optimizer.rebalance import Costs, optimize
from yieldagent.domain.optimizer.search import allocate
from yieldagent.simulated_world.state import PoolState

GENESIS = 1_767_225_600
BASE = 8453
UNIT = 10**6
COSTS = Costs(0.0054, 1.0, 6)
CASES = (
    ("unconstrained", Constraints(), 10_000),
    ("min_protocols=3", Constraints(min_protocols=3), 10_000),
    # large enough to push pools across their rate models' kinks
    ("unconstrained, 50M USDC (kinked curves)", Constraints(), 50_000_000),
)


def _emit(**figures: object) -> None:
    print(json.dumps({"benchmark": "optimizer", **figures}), flush=True)


def _base_pools() -> list[PoolState]:
    [token] = load_catalog().chain(BASE).tokens
    return [genesis_pool(BASE, token, p, 7, GENESIS) for p in token.protocols]


def _pools(count: int) -> list[PoolState]:
    base = _base_pools()
    return [replace(copy_pool(base[i % len(base)]), protocol=f"p{i}") for i in range(count)]


def _times(run: Callable[[int], object], runs: int) -> list[float]:
    """Seconds of each of ``runs`` calls, after one warm-up call."""
    run(-1)
    out = []
    for i in range(runs):
        start = time.perf_counter()
        run(i)
        out.append(time.perf_counter() - start)
    return out


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


def solve_times() -> None:
    for count in (5, 10, 20):
        pools = _pools(count)
        candidates = [Candidate(p.protocol, quote_of(p)) for p in pools]
        for label, rules, usdc in CASES:
            runs = 50 if usdc > 10_000 else 200

            def solve(
                i: int,
                rules: Constraints = rules,
                usdc: int = usdc,
                candidates: list[Candidate] = candidates,
            ) -> object:
                # a different amount each run: nothing is remembered between solves
                return optimize({}, (usdc + i % 97) * UNIT, candidates, rules, COSTS)

            times = _times(solve, runs)
            _emit(
                figure="optimize_ms",
                protocols=count,
                rules=label,
                median=round(statistics.median(times) * 1000, 3),
                p90=round(_p90(times) * 1000, 3),
                runs=runs,
            )


def _placed(
    pools: list[PoolState], usdc: int, rules: Constraints, copies: int
) -> tuple[dict[str, int], list[list[Candidate]]]:
    """Where ``optimize`` puts ``usdc`` idle, and ``copies`` lists of the candidates once it
    is deposited: equal quotes, distinct objects, as each wallet's valuation reads them."""
    fresh = [Candidate(p.protocol, quote_of(p)) for p in pools]
    target = optimize({}, usdc * UNIT, fresh, rules, COSTS).target
    after = []
    for pool in pools:
        copy = copy_pool(pool)
        if target.get(pool.protocol, 0):
            deposit(copy, target[pool.protocol])
        after.append(copy)
    lists = [
        [Candidate(p.protocol, quote_of(p), target.get(p.protocol, 0)) for p in after]
        for _ in range(copies)
    ]
    return dict(target), lists


def settled_times() -> None:
    """Each check sees fresh quote objects, as the agent does wallet after wallet."""
    runs = 2_000
    for count in (5, 10, 20):
        pools = _pools(count)
        for label, rules, _ in CASES[:2]:
            positions, lists = _placed(pools, 1_000, rules, runs + 1)

            def check(
                i: int,
                positions: dict[str, int] = positions,
                lists: list[list[Candidate]] = lists,
                rules: Constraints = rules,
            ) -> object:
                return is_settled(positions, 0, lists[i], rules, COSTS, Thresholds())

            times = _times(check, runs)
            _emit(
                figure="is_settled_us",
                protocols=count,
                rules=label,
                usdc=1_000,
                settled=bool(check(0)),
                median=round(statistics.median(times) * 1e6, 1),
                p90=round(_p90(times) * 1e6, 1),
            )


def _brute_force(total: int, first: Candidate, second: Candidate) -> float:
    """The best yearly yield of ``total`` split over two pools: a grid of 2,000 points and
    the pools' bends, then ever finer grids around the best point, down to single units."""

    def value(x: int) -> float:
        return first.yearly_yield(x) + second.yearly_yield(total - x)

    points = {total * i // 2_000 for i in range(2_001)}
    points |= {b for b in first.bends() if 0 <= b <= total}
    points |= {total - b for b in second.bends() if 0 <= b <= total}
    best = max(points, key=value)
    width = max(total // 2_000, 1)
    while width > 1:
        finer = max(width // 50, 1)
        around = range(max(best - width, 0), min(best + width, total) + 1, finer)
        best = max([best, *around], key=value)
        width = finer
    return value(best)


def brute_force_agreement() -> None:
    pools = _base_pools()
    worst = 0.0
    cases = 0
    for a, b in combinations(pools, 2):
        for usdc in (10_000, 1_000_000, 5_000_000, 50_000_000):
            candidates = [Candidate(p.protocol, quote_of(p)) for p in (a, b)]
            total = usdc * UNIT
            found = allocate(total, candidates, Constraints())
            by_name = {c.protocol: c for c in candidates}
            ours = sum(by_name[n].yearly_yield(x) for n, x in found.items())
            best = _brute_force(total, *candidates)
            worst = max(worst, (best - ours) / best)
            cases += 1
    _emit(figure="brute_force_shortfall", cases=cases, worst_relative=worst, tolerance=1e-4)


def main() -> None:
    solve_times()
    settled_times()
    brute_force_agreement()


if __name__ == "__main__":
    main()
