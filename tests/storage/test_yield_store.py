"""The pools' recorded yields: stored exactly, read back by pool and time, pruned by age."""

from __future__ import annotations

from sqlalchemy import Engine

from yieldagent.domain.market.yields import YieldPoint
from yieldagent.storage.yields import YieldStore

USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"


def _point(protocol: str, at: int, rewards: float | None = 0.5) -> YieldPoint:
    return YieldPoint(protocol, USDC, at, 10**30 + at, 7 * 10**29, 4.25, rewards)


def test_points_come_back_exact_by_pool_and_range(engine: Engine) -> None:
    store = YieldStore(engine)
    assert store.latest_at(8453) is None
    store.record(8453, [_point("aave", 100), _point("compound", 100, None)])
    store.record(8453, [_point("aave", 200), _point("compound", 200)])
    store.record(1, [_point("aave", 300)])
    assert store.latest_at(8453) == 200
    aave = store.points(8453, USDC, "aave", None, None)
    assert aave == [_point("aave", 100), _point("aave", 200)]
    assert store.points(8453, USDC, "compound", None, 150) == [_point("compound", 100, None)]
    assert store.points(8453, USDC, "aave", 150, 200) == [_point("aave", 200)]
    assert store.points(8453, USDC, "moonwell", None, None) == []


def test_prune_forgets_one_chains_old_points(engine: Engine) -> None:
    store = YieldStore(engine)
    store.record(8453, [_point("aave", 100), _point("aave", 200)])
    store.record(1, [_point("aave", 100)])
    assert store.prune(8453, 150) == 1
    assert [p.at for p in store.points(8453, USDC, "aave", None, None)] == [200]
    assert [p.at for p in store.points(1, USDC, "aave", None, None)] == [100]
