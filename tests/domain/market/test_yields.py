"""A pool's yield in parts: they reconcile, unknown stays unknown, and the history's
averages and groups are what their points say."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.market.quotes import MarketQuote, PoolQuote
from yieldagent.domain.market.rate_models import apr_percent, apy_from_apr, model_for
from yieldagent.domain.market.yields import (
    DAY_SECONDS,
    Interval,
    YieldParts,
    YieldPoint,
    YieldRecorder,
    average,
    bucketed,
    parts_of,
    point_of,
)

FEE_BPS = 1000
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"


def _quote(reward_yearly: int | None) -> PoolQuote:
    model = model_for("aave_v3")
    market = MarketQuote("aave", 100_000_000 * 10**6, 80_000_000 * 10**6)
    return PoolQuote("aave", USDC, model, (market,), reward_yearly=reward_yearly)


def test_the_parts_reconcile_with_a_ten_percent_fee() -> None:
    quote = _quote(reward_yearly=1_500_000 * 10**6)  # 1.5 % of the pool a year
    parts = parts_of(quote, FEE_BPS)
    assert parts.base == apy_from_apr(quote.rate())
    assert parts.base is not None and parts.base > apr_percent(quote.rate())  # compounded
    assert parts.rewards is not None and parts.rewards == pytest.approx(1.5)
    assert parts.total == parts.base + parts.rewards
    assert parts.net == parts.total * (1 - FEE_BPS / 10_000)


def test_no_reward_program_is_a_known_zero() -> None:
    parts = parts_of(_quote(reward_yearly=0), FEE_BPS)
    assert parts.rewards == 0.0
    assert parts.total == parts.base


def test_rewards_the_chain_cannot_tell_are_null_and_so_are_the_sums() -> None:
    parts = parts_of(_quote(reward_yearly=None), FEE_BPS)
    assert parts.base is not None
    assert (parts.rewards, parts.total, parts.net) == (None, None, None)


def test_without_a_quote_nothing_is_known() -> None:
    parts = parts_of(None, FEE_BPS)
    assert (parts.base, parts.rewards, parts.total, parts.net) == (None, None, None, None)


@given(
    st.floats(0, 1_000, allow_nan=False),
    st.floats(0, 1_000, allow_nan=False),
    st.integers(0, 10_000),
)
def test_any_parts_reconcile(base: float, rewards: float, fee_bps: int) -> None:
    parts = YieldParts(base, rewards, fee_bps)
    assert parts.total == base + rewards
    assert parts.net == pytest.approx((base + rewards) * (1 - fee_bps / 10_000))
    assert parts.net is not None and parts.total is not None and parts.net <= parts.total


def _point(at: int, base: float, rewards: float | None = 1.0) -> YieldPoint:
    return YieldPoint("aave", USDC, at, 1_000, 800, base, rewards)


def test_an_average_takes_the_points_of_its_window_only() -> None:
    now = 100 * DAY_SECONDS
    points = [_point(now - 10 * DAY_SECONDS, 9.0), _point(now - DAY_SECONDS, 3.0), _point(now, 5.0)]
    week = average(points, 7, now, FEE_BPS)
    month = average(points, 30, now, FEE_BPS)
    assert week is not None and month is not None
    assert (week.parts.base, week.points, week.since) == (4.0, 2, now - DAY_SECONDS)
    assert month.parts.base == pytest.approx(17 / 3)
    assert month.parts.total == pytest.approx(17 / 3 + 1.0)
    assert month.parts.net == pytest.approx((17 / 3 + 1.0) * 0.9)


def test_no_point_in_the_window_is_no_average() -> None:
    assert average([_point(0, 4.0)], 7, 30 * DAY_SECONDS, FEE_BPS) is None
    assert average([], 30, 0, FEE_BPS) is None


def test_an_average_of_unknown_rewards_has_no_total() -> None:
    found = average([_point(10, 4.0, None)], 7, 10, FEE_BPS)
    assert found is not None
    assert (found.parts.base, found.parts.rewards, found.parts.total) == (4.0, None, None)


def test_points_group_by_utc_hour_and_day() -> None:
    points = [_point(0, 2.0), _point(1800, 4.0), _point(3600, 6.0), _point(DAY_SECONDS, 1.0)]
    hours = bucketed(points, Interval.HOUR)
    assert [(p.at, p.apy_base) for p in hours] == [(0, 3.0), (3600, 6.0), (DAY_SECONDS, 1.0)]
    days = bucketed(points, Interval.DAY)
    assert [(p.at, p.apy_base) for p in days] == [(0, 4.0), (DAY_SECONDS, 1.0)]
    assert bucketed(points, None) == points


def test_a_point_carries_the_pool_size_and_utilization() -> None:
    quote = _quote(0)
    point = point_of(quote, 42)
    assert (point.at, point.supply, point.borrows) == (42, 100_000_000 * 10**6, 80_000_000 * 10**6)
    assert point.utilization == 0.8
    assert point.apy_base == parts_of(quote, 0).base
    assert point.apy_rewards == 0.0


def test_a_vault_lends_out_its_share_of_each_markets_borrows() -> None:
    # The vault holds a tenth of one market (90 % lent out) and all of another (50 %).
    markets = (
        MarketQuote("a", 10_000_000 * 10**6, 9_000_000 * 10**6, held=1_000_000 * 10**6),
        MarketQuote("b", 3_000_000 * 10**6, 1_500_000 * 10**6),
    )
    quote = PoolQuote("morpho", USDC, model_for("morpho_blue"), markets)
    point = point_of(quote, 42)
    assert point.supply == 4_000_000 * 10**6
    assert point.borrows == (900_000 + 1_500_000) * 10**6
    assert point.utilization == 0.6


class _History:
    def __init__(self) -> None:
        self.kept: list[tuple[int, YieldPoint]] = []

    def record(self, chain_id: int, points: Sequence[YieldPoint]) -> None:
        self.kept += [(chain_id, p) for p in points]

    def latest_at(self, chain_id: int) -> int | None:
        return max((p.at for c, p in self.kept if c == chain_id), default=None)

    def points(
        self, chain_id: int, token: str, protocol: str, start: int | None, end: int | None
    ) -> list[YieldPoint]:
        return [p for c, p in self.kept if c == chain_id and p.protocol == protocol]

    def prune(self, chain_id: int, before: int) -> int:
        kept = [(c, p) for c, p in self.kept if c != chain_id or p.at >= before]
        pruned = len(self.kept) - len(kept)
        self.kept = kept
        return pruned


async def test_the_recorder_records_once_per_interval_and_forgets_the_old(
    chains: dict[int, MarketChain], market: SimulatedMarket
) -> None:
    history = _History()
    recorder = YieldRecorder(history, load_catalog(), every_seconds=3600, keep_seconds=DAY_SECONDS)
    base = chains[8453]
    assert await recorder.record(8453, base) == 4  # every Base USDC pool
    assert await recorder.record(8453, base) == 0  # not due yet
    start = history.latest_at(8453)
    assert start is not None
    market.advance(3600)
    assert await recorder.record(8453, base) == 4
    market.advance(2 * DAY_SECONDS)
    assert await recorder.record(8453, base) == 4
    assert {p.at for _, p in history.kept} == {start + 3600 + 2 * DAY_SECONDS}
    moonwell = next(p for _, p in history.kept if p.protocol == "moonwell")
    assert moonwell.apy_rewards is not None and moonwell.apy_rewards > 0  # WELL emissions
    assert not math.isnan(moonwell.apy_base)
