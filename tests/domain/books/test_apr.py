"""A wallet's time-weighted APR: sub-periods split at flows, chained, annualized; and the
helpers that pick and interpolate performance points. Worked examples are done by hand."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from yieldagent.domain.books.apr import (
    YEAR_SECONDS,
    AprResult,
    PerformancePoint,
    SubPeriod,
    interpolate,
    time_weighted_apr,
)

P = PerformancePoint
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def _returns(result: AprResult) -> list[float]:
    return [period.return_ for period in result.sub_periods]


# -- worked examples -----------------------------------------------------------------------------


def test_one_deposit_growing_one_percent_in_thirty_days() -> None:
    # activation: nothing before, 1,000,000 deposited; 30 days later 1,010,000
    result = time_weighted_apr([P(T0, 0, 1_000_000), P(day(30), 1_010_000)])
    assert result.sub_periods == (SubPeriod(T0, day(30), 1_000_000, 1_010_000),)
    assert _returns(result) == [pytest.approx(0.01)]
    assert result.apr == pytest.approx(0.01 * 365 / 30 * 100)  # 12.1666… %


def test_a_deposit_in_the_middle_is_not_performance() -> None:
    # 1,000 → 1,010 in 10 days; then 500 is added: 1,510 → 1,525.1 in 10 more days
    result = time_weighted_apr(
        [P(T0, 0, 1_000_000), P(day(10), 1_010_000, 500_000), P(day(20), 1_525_100)]
    )
    assert result.sub_periods == (
        SubPeriod(T0, day(10), 1_000_000, 1_010_000),
        SubPeriod(day(10), day(20), 1_510_000, 1_525_100),
    )
    assert _returns(result) == [pytest.approx(0.01), pytest.approx(1_525.1 / 1_510 - 1)]
    chained = 1.01 * (1_525.1 / 1_510) - 1  # 0.0201
    assert chained == pytest.approx(0.0201)
    assert result.apr == pytest.approx(chained * 365 / 20 * 100)  # 36.6825 %


def test_a_withdrawal_in_the_middle_is_not_a_loss() -> None:
    # 1,000 → 1,020 in 10 days; 520 withdrawn: 500 → 505 in 20 more days
    result = time_weighted_apr(
        [P(T0, 0, 1_000_000), P(day(10), 1_020_000, -520_000), P(day(30), 505_000)]
    )
    assert result.sub_periods == (
        SubPeriod(T0, day(10), 1_000_000, 1_020_000),
        SubPeriod(day(10), day(30), 500_000, 505_000),
    )
    assert _returns(result) == [pytest.approx(0.02), pytest.approx(0.01)]
    assert result.apr == pytest.approx((1.02 * 1.01 - 1) * 365 / 30 * 100)  # 36.7433… %


def test_flows_at_the_ends_of_the_period() -> None:
    # A top-up at the first point counts from after it; a full withdrawal at the last
    # point ends the period at the value just before it.
    result = time_weighted_apr(
        [P(T0, 2_000_000, 1_000_000), P(day(10), 3_015_000), P(day(20), 3_030_000, -3_030_000)]
    )
    assert result.sub_periods == (SubPeriod(T0, day(20), 3_000_000, 3_030_000),)
    assert result.apr == pytest.approx(0.01 * 365 / 20 * 100)  # 18.25 %


def test_periodic_points_without_flows_merge_into_one_sub_period() -> None:
    points = [P(T0, 0, 1_000_000)] + [P(day(n), 1_000_000 + 997 * n) for n in range(1, 10)]
    points.append(P(day(10), 1_020_000))
    result = time_weighted_apr(points)
    assert result.sub_periods == (SubPeriod(T0, day(10), 1_000_000, 1_020_000),)
    assert result.apr == pytest.approx(0.02 * 36.5 * 100)


def test_periodic_points_on_both_sides_of_a_flow() -> None:
    points = [
        P(T0, 0, 1_000_000),
        P(day(1), 1_001_000),
        P(day(2), 1_010_000, 990_000),  # a deposit: 2,000,000 after it
        P(day(3), 2_002_000),
        P(day(4), 2_040_000),
    ]
    result = time_weighted_apr(points)
    assert result.sub_periods == (
        SubPeriod(T0, day(2), 1_000_000, 1_010_000),
        SubPeriod(day(2), day(4), 2_000_000, 2_040_000),
    )
    assert result.apr == pytest.approx((1.01 * 1.02 - 1) * 365 / 4 * 100)


def test_a_loss_gives_a_negative_apr() -> None:
    result = time_weighted_apr([P(T0, 0, 1_000_000), P(day(73), 990_000)])
    assert result.apr == pytest.approx(-0.01 * 5 * 100)


def test_no_growth_gives_zero() -> None:
    result = time_weighted_apr([P(T0, 0, 1_000_000), P(day(5), 1_000_000)])
    assert result.apr == 0.0
    assert _returns(result) == [0.0]


@pytest.mark.parametrize("points", [[], [P(T0, 0, 1_000_000)], [P(T0, 5, 0)]])
def test_fewer_than_two_points_give_nothing(points: list[PerformancePoint]) -> None:
    assert time_weighted_apr(points) == AprResult(0.0, ())


def test_sub_periods_starting_from_nothing_are_skipped() -> None:
    # Everything withdrawn at day 10, deposited again at day 20: nothing to earn between.
    result = time_weighted_apr(
        [
            P(T0, 0, 1_000_000),
            P(day(10), 1_010_000, -1_010_000),
            P(day(20), 0, 2_000_000),
            P(day(30), 2_040_000),
        ]
    )
    assert result.sub_periods == (
        SubPeriod(T0, day(10), 1_000_000, 1_010_000),
        SubPeriod(day(20), day(30), 2_000_000, 2_040_000),
    )
    assert result.apr == pytest.approx((1.01 * 1.02 - 1) * 365 / 30 * 100)


def test_a_wallet_that_never_held_anything_has_no_sub_periods() -> None:
    assert time_weighted_apr([P(T0, 0), P(day(3), 0), P(day(9), 0)]) == AprResult(0.0, ())


def test_two_points_at_one_moment_have_no_span_to_annualize() -> None:
    result = time_weighted_apr([P(T0, 0, 1_000_000), P(T0, 1_000_000)])
    assert result.apr == 0.0
    assert len(result.sub_periods) == 1


def test_points_may_come_in_any_order() -> None:
    points = [P(T0, 0, 1_000_000), P(day(10), 1_010_000, 500_000), P(day(20), 1_525_100)]
    assert time_weighted_apr(points[::-1]) == time_weighted_apr(points)


def test_one_year_of_five_percent_is_five_percent() -> None:
    end = T0 + timedelta(seconds=YEAR_SECONDS)
    assert time_weighted_apr([P(T0, 0, 10**24), P(end, 105 * 10**22)]).apr == pytest.approx(5.0)


def test_after_is_the_value_after_the_flow() -> None:
    assert P(T0, 1_000, -300).after == 700
    assert P(T0, 1_000).after == 1_000
    assert SubPeriod(T0, day(1), 800, 1_000).return_ == pytest.approx(0.25)


# -- properties -----------------------------------------------------------------------------------


@st.composite
def histories(draw: st.DrawFn) -> list[PerformancePoint]:
    """Points at increasing moments; flows anywhere, never taking more than is there."""
    count = draw(st.integers(2, 8))
    offsets = sorted(draw(st.lists(st.integers(1, 10**7), min_size=count - 1, max_size=count - 1)))
    moments = [T0] + [T0 + timedelta(seconds=sum(offsets[: i + 1])) for i in range(count - 1)]
    first = draw(st.integers(1, 10**24))
    points = [P(T0, 0, first)]
    held = first
    for moment in moments[1:]:
        value = held * draw(st.integers(900, 1_100)) // 1_000
        flow = draw(st.one_of(st.just(0), st.integers(-value, 10**24)))
        points.append(P(moment, value, flow))
        held = value + flow
    return points


@given(histories(), st.data())
def test_points_without_flows_inside_the_period_change_nothing(
    points: list[PerformancePoint], data: st.DataObject
) -> None:
    start, end = points[0].at, points[-1].at
    span = int((end - start).total_seconds())
    extra = data.draw(
        st.lists(
            st.builds(
                lambda s, v: P(start + timedelta(seconds=s), v),
                st.integers(1, max(span - 1, 1)),
                st.integers(0, 10**25),
            ),
            max_size=5,
        )
    )
    extra = [p for p in extra if start < p.at < end and p.at not in {q.at for q in points}]
    assert time_weighted_apr(points + extra) == time_weighted_apr(points)


@given(histories())
def test_the_apr_chains_the_sub_periods_and_annualizes(points: list[PerformancePoint]) -> None:
    result = time_weighted_apr(points)
    flows_inside = [p for p in points[1:] if p.flow != 0 or p is points[-1]]
    assert len(result.sub_periods) <= len(flows_inside)
    for period in result.sub_periods:
        assert period.initial_value > 0
        assert period.start < period.end
    # consecutive sub-periods do not overlap
    for earlier, later in zip(result.sub_periods, result.sub_periods[1:], strict=False):
        assert earlier.end <= later.start
    growth = 1.0
    for period in result.sub_periods:
        growth *= period.final_value / period.initial_value
    span = (points[-1].at - points[0].at).total_seconds()
    assert result.apr == pytest.approx((growth - 1) * YEAR_SECONDS / span * 100)
    shuffled = list(points)
    random.Random(len(points)).shuffle(shuffled)
    assert time_weighted_apr(shuffled) == result


# -- interpolate ----------------------------------------------------------------------------------


def test_interpolate_grows_at_a_constant_rate() -> None:
    before = P(T0, 600_000, 400_000)  # 1,000,000 after the deposit
    after = P(day(2), 4_000_000, 123_456)  # its own flow does not matter
    assert interpolate(before, after, T0) == 1_000_000
    assert interpolate(before, after, day(1)) == 2_000_000  # × 2 a day
    assert interpolate(before, after, day(0.5)) == int(1_000_000 * 4**0.25) == 1_414_213
    assert interpolate(before, after, day(1.5)) == int(1_000_000 * 4**0.75) == 2_828_427


def test_interpolate_starts_after_the_flow_at_the_first_point() -> None:
    withdrawal = P(T0, 3_000_000, -2_000_000)  # 1,000,000 left after it
    halfway = interpolate(withdrawal, P(day(2), 1_210_000), day(1))
    assert halfway == int(1_000_000 * 1.21**0.5)  # 1,100,000 up to float rounding
    assert abs(halfway - 1_100_000) <= 1
    assert halfway == interpolate(P(T0, 1_000_000), P(day(2), 1_210_000), day(1))
    deposit = P(T0, 250_000, 750_000)  # 1,000,000 after it
    assert interpolate(deposit, P(day(2), 4_000_000), day(1)) == 2_000_000


def test_interpolate_falls_at_a_constant_rate_too() -> None:
    assert interpolate(P(T0, 4_000_000), P(day(2), 1_000_000), day(1)) == 2_000_000


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (P(T0, 500, -500), P(day(1), 1_000)),  # nothing after the flow
        (P(T0, 1_000), P(day(1), 0)),  # nothing at the end
        (P(T0, 1_000, 10), P(T0, 2_000)),  # no time between them
    ],
)
def test_interpolate_degenerate_cases_keep_the_starting_value(
    before: PerformancePoint, after: PerformancePoint
) -> None:
    assert interpolate(before, after, T0 + timedelta(hours=1)) == before.after


@given(
    start=st.integers(1, 10**15),
    end=st.integers(1, 10**15),
    a=st.integers(0, 86_400),
    b=st.integers(0, 86_400),
)
def test_interpolate_is_monotonic_and_between_its_ends(
    start: int, end: int, a: int, b: int
) -> None:
    before, after = P(T0, start), P(day(1), end)
    early, late = sorted((a, b))
    x = interpolate(before, after, T0 + timedelta(seconds=early))
    y = interpolate(before, after, T0 + timedelta(seconds=late))
    low, high = min(start, end), max(start, end)
    for value in (x, y):
        assert low - 1 <= value <= high
    assert (x <= y + 1) if end >= start else (y <= x + 1)


@pytest.mark.parametrize(
    ("before", "after", "at", "expected"),
    [
        (P(T0, 7), P(day(1), 61), day(1), 61),
        (P(T0, 10**21 + 1), P(day(1), 10**21 + 5), T0, 10**21 + 1),
    ],
)
def test_interpolate_passes_through_its_points(
    before: PerformancePoint, after: PerformancePoint, at: datetime, expected: int
) -> None:
    assert interpolate(before, after, at) == expected


# -- the linear implementation against the quadratic reference ------------------------------------


def _reference_apr(points: list[PerformancePoint]) -> AprResult:
    """A straightforward quadratic ``time_weighted_apr``: the reference the linear one must
    agree with."""
    ordered = sorted(points, key=lambda p: p.at)
    if len(ordered) < 2:
        return AprResult(0.0, ())
    periods: list[SubPeriod] = []
    opened = ordered[0]
    for point in ordered[1:]:
        closes = point.flow != 0 or point is ordered[-1]
        if closes:
            if opened.after > 0:
                periods.append(SubPeriod(opened.at, point.at, opened.after, point.value))
            opened = point
    growth = 1.0
    for period in periods:
        growth *= 1 + period.return_
    span = (ordered[-1].at - ordered[0].at).total_seconds()
    apr = (growth - 1) * YEAR_SECONDS / span * 100 if span > 0 else 0.0
    return AprResult(apr, tuple(periods))


@st.composite
def series(draw: st.DrawFn) -> list[PerformancePoint]:
    """Up to a few hundred points in any order, moments repeated, values and flows of any
    sign, some points repeated as the very same object."""
    count = draw(st.integers(0, 300))
    seed = draw(st.integers(0, 2**32))
    rnd = random.Random(seed)
    points = [
        P(
            T0 + timedelta(hours=rnd.randint(0, count)),
            rnd.choice([0, rnd.randint(1, 10**12), rnd.randint(-(10**6), 10**12)]),
            rnd.choice([0, 0, 0, rnd.randint(-(10**12), 10**12)]),
        )
        for _ in range(count)
    ]
    repeat, in_order = draw(st.booleans()), draw(st.booleans())
    if points and repeat:
        points.insert(rnd.randrange(len(points)), points[-1])
    if in_order:
        points.sort(key=lambda p: p.at)
    return points


@given(series())
def test_the_linear_apr_equals_the_one_it_replaced(points: list[PerformancePoint]) -> None:
    assert time_weighted_apr(points) == _reference_apr(points)


def test_a_year_of_hourly_points_equals_the_one_it_replaced() -> None:
    rnd = random.Random(13)
    value, points = 10**9, []
    for hour in range(8_760):
        flow = rnd.randint(-value // 10, value // 10) if hour % 24 == 0 else 0
        points.append(P(T0 + timedelta(hours=hour), value, flow))
        value = (value + flow) * (10**6 + rnd.randint(0, 10)) // 10**6
    assert time_weighted_apr(points) == _reference_apr(points)
