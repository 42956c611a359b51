"""A wallet's APR (``domain.books.apr.time_weighted_apr``) over hourly performance points: a month,
six months and a year of them, without flows and with a deposit or withdrawal every day;
median ms, and the year's time over the month's (12.2 when the cost is linear in points).
"""

from __future__ import annotations

import json
import random
import statistics
import time
from datetime import UTC, datetime, timedelta

from yieldagent.domain.books.apr import PerformancePoint, time_weighted_apr

START = datetime(2026, 1, 1, tzinfo=UTC)
PERIODS = (("1 month", 720), ("6 months", 4_380), ("1 year", 8_760))
RUNS = 50


def _emit(**figures: object) -> None:
    print(json.dumps({"benchmark": "apr", **figures}), flush=True)


def _points(hours: int, daily_flows: bool) -> list[PerformancePoint]:
    """Hourly points of a wallet growing about 4% a year; a flow every 24 hours if asked."""
    rnd = random.Random(hours)
    value, points = 1_000 * 10**6, []
    for hour in range(hours):
        flow = rnd.randint(-value // 10, value // 10) if daily_flows and hour % 24 == 0 else 0
        if hour == 0:
            flow = value
        points.append(
            PerformancePoint(START + timedelta(hours=hour), 0 if hour == 0 else value, flow)
        )
        value = (value + flow if hour else flow) * (10**8 + rnd.randint(0, 900)) // 10**8
    return points


def _median_ms(points: list[PerformancePoint]) -> float:
    time_weighted_apr(points)
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        time_weighted_apr(points)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    for flows in (False, True):
        label = "a flow a day" if flows else "no flows"
        medians = {}
        for name, hours in PERIODS:
            medians[hours] = _median_ms(_points(hours, flows))
            _emit(
                figure="apr_ms",
                period=name,
                points=hours,
                flows=label,
                median=round(medians[hours], 3),
            )
        _emit(
            figure="apr_year_over_month",
            flows=label,
            ratio=round(medians[8_760] / medians[720], 2),
            points_ratio=round(8_760 / 720, 2),
        )


if __name__ == "__main__":
    main()
