"""Each guard trips on what it watches and on nothing else, and a pool's verdict is the
strictest state its trips ask for."""

from __future__ import annotations

from typing import Any

import pytest

from yieldagent.domain.market.history import MAX_SNAPSHOTS, Snapshot, recorded
from yieldagent.domain.market.readings import (
    CollateralFeed,
    PoolReading,
    RiskState,
    SequencerStatus,
)
from yieldagent.domain.risk.guards import Exposure, Rule, assess
from yieldagent.domain.risk.settings import RiskSettings

HOUR = 3_600
NOW = 1_767_225_600
RAY = 10**27
TVL = 10_000_000 * 10**6
DEFAULTS = RiskSettings()


def _snapshot(hours_ago: float = 0, **changes: Any) -> Snapshot:
    values: dict[str, object] = {
        "at": NOW - int(hours_ago * HOUR),
        "tvl": TVL,
        "borrows": TVL * 7 // 10,
        "share_price": RAY,
    }
    values.update(changes)
    return Snapshot(**values)  # type: ignore[arg-type]


def _reading(now: Snapshot | None = None, *history: Snapshot, **extra: object) -> PoolReading:
    return PoolReading("aave_v3", now or _snapshot(), tuple(history), **extra)  # type: ignore[arg-type]


def test_a_healthy_pool_is_ok() -> None:
    history = [_snapshot(hours) for hours in range(24, 0, -1)]
    verdict = assess(_reading(None, *history), Exposure(ours=TVL // 20), DEFAULTS)
    assert verdict.state == RiskState.OK
    assert verdict.reasons == ()
    assert verdict.takes_funds and not verdict.exit


@pytest.mark.parametrize(
    ("now", "state"),
    [
        pytest.param({"frozen": True}, RiskState.EXIT, id="frozen"),
        pytest.param({"supply_paused": True}, RiskState.EXIT, id="supply-paused"),
        pytest.param({"withdraw_paused": True}, RiskState.NO_NEW_FUNDS, id="withdraw-paused"),
    ],
)
def test_a_paused_or_frozen_pool_trips_the_pause_guard(
    now: dict[str, Any], state: RiskState
) -> None:
    verdict = assess(_reading(_snapshot(**now)), Exposure(), DEFAULTS)
    assert verdict.state == state
    assert verdict.rules == (Rule.PAUSED,)


def test_a_pool_whose_withdrawals_reopen_is_exited_within_the_window() -> None:
    paused = _snapshot(2, withdraw_paused=True)
    assert assess(_reading(None, paused), Exposure(), DEFAULTS).state == RiskState.EXIT
    long_ago = _snapshot(25, withdraw_paused=True)
    assert assess(_reading(None, long_ago), Exposure(), DEFAULTS).state == RiskState.OK


def test_a_tvl_that_halves_within_a_day_trips_and_one_that_does_not_stays_ok() -> None:
    halved = _snapshot(tvl=TVL * 49 // 100, borrows=0)
    verdict = assess(_reading(halved, _snapshot(20)), Exposure(), DEFAULTS)
    assert verdict.state == RiskState.EXIT
    assert verdict.rules == (Rule.TVL_DROP,)
    exactly_half = _snapshot(tvl=TVL // 2, borrows=0)
    assert assess(_reading(exactly_half, _snapshot(20)), Exposure(), DEFAULTS).exit is False
    # a peak older than the window does not count
    assert assess(_reading(halved, _snapshot(25)), Exposure(), DEFAULTS).state == RiskState.OK


def test_high_utilisation_trips_only_once_it_has_lasted() -> None:
    full = {"borrows": TVL * 96 // 100}
    brief = _reading(_snapshot(**full), _snapshot(1), _snapshot(0.5, **full))
    assert assess(brief, Exposure(), DEFAULTS).state == RiskState.OK
    lasting = _reading(_snapshot(**full), _snapshot(2), _snapshot(1, **full))
    verdict = assess(lasting, Exposure(), DEFAULTS)
    assert verdict.state == RiskState.NO_NEW_FUNDS
    assert verdict.rules == (Rule.UTILISATION,)
    shorter = RiskSettings(utilisation_seconds=1_800)
    assert assess(brief, Exposure(), shorter).rules == (Rule.UTILISATION,)


def test_free_liquidity_below_a_twentieth_of_our_position_starts_an_exit() -> None:
    cash = TVL // 1_000
    reading = _reading(_snapshot(borrows=TVL - cash))
    assert assess(reading, Exposure(ours=cash * 20), DEFAULTS).state == RiskState.OK
    verdict = assess(reading, Exposure(ours=cash * 20 + 20), DEFAULTS)
    assert verdict.state == RiskState.EXIT
    assert verdict.rules == (Rule.LIQUIDITY,)
    assert assess(reading, Exposure(ours=0), DEFAULTS).state == RiskState.OK


def test_a_falling_share_price_is_a_loss_until_an_operator_clears_it() -> None:
    fallen = _snapshot(share_price=RAY - 1)
    reading = _reading(fallen, _snapshot(3))
    verdict = assess(reading, Exposure(), DEFAULTS)
    assert verdict.state == RiskState.EXIT
    assert verdict.rules == (Rule.LOSS,)
    # cleared after the fall: the old price no longer counts
    assert assess(reading, Exposure(cleared_at=NOW - HOUR), DEFAULTS).state == RiskState.OK
    # an exclusion stays until cleared, whatever the price does
    excluded = assess(_reading(), Exposure(loss_excluded=True), DEFAULTS)
    assert excluded.state == RiskState.EXIT
    assert "operator" in excluded.reasons[0]


def test_a_share_price_below_the_highest_the_service_saw_is_a_loss() -> None:
    reading = _reading(_snapshot(share_price=RAY - 1))  # no history: a chain that keeps none
    assert assess(reading, Exposure(peak_share_price=RAY - 1), DEFAULTS).state == RiskState.OK
    verdict = assess(reading, Exposure(peak_share_price=RAY), DEFAULTS)
    assert (verdict.state, verdict.rules) == (RiskState.EXIT, (Rule.LOSS,))
    unread = _reading(_snapshot(share_price=0))  # a pool judged on its quote alone
    assert assess(unread, Exposure(peak_share_price=RAY), DEFAULTS).state == RiskState.OK


def test_a_collateral_five_percent_below_its_peg_starts_an_exit() -> None:
    peg = 100_000_000
    near = _reading(collateral=(CollateralFeed("USDe", peg * 96 // 100, peg),))
    assert assess(near, Exposure(), DEFAULTS).state == RiskState.OK
    off = _reading(collateral=(CollateralFeed("USDe", peg * 95 // 100, peg),))
    verdict = assess(off, Exposure(), DEFAULTS)
    assert verdict.state == RiskState.EXIT
    assert verdict.rules == (Rule.DEPEG,)
    assert "USDe" in verdict.reasons[0]


def test_a_stale_or_unreadable_feed_stops_new_funds_and_a_fallen_one_still_exits() -> None:
    peg = 100_000_000
    max_age = DEFAULTS.max_feed_age_seconds
    current = CollateralFeed("USDe", peg, peg, updated_at=NOW - max_age)
    assert assess(_reading(collateral=(current,)), Exposure(), DEFAULTS).state == RiskState.OK
    old = CollateralFeed("USDe", peg, peg, updated_at=NOW - max_age - 1)
    gone = CollateralFeed("sUSD", 0, peg, readable=False)
    for feeds, names in (((old,), "USDe"), ((gone,), "sUSD"), ((old, gone), "USDe, sUSD")):
        verdict = assess(_reading(collateral=feeds), Exposure(), DEFAULTS)
        assert (verdict.state, verdict.rules) == (RiskState.NO_NEW_FUNDS, (Rule.DEPEG,))
        assert verdict.reasons == (
            f"the price feed of collateral {names} is stale or cannot be read",
        )
    fallen = CollateralFeed("USDC.e", peg * 90 // 100, peg, updated_at=NOW)
    verdict = assess(_reading(collateral=(gone, fallen)), Exposure(), DEFAULTS)
    assert verdict.state == RiskState.EXIT
    assert verdict.reasons == ("collateral USDC.e is 5% or more below its peg",)


def test_every_feed_is_stale_while_the_sequencer_is_down_and_for_its_grace_after() -> None:
    peg = 100_000_000
    grace = DEFAULTS.sequencer_grace_seconds
    fallen = CollateralFeed("USDe", peg * 90 // 100, peg, updated_at=NOW)  # an old price?
    steady = CollateralFeed("sUSD", peg, peg, updated_at=NOW)
    feeds = (fallen, steady)
    cases = [
        (SequencerStatus(up=False, since=NOW - 10 * HOUR), "the chain's sequencer is down"),
        (
            SequencerStatus(up=True, since=NOW - grace + 1),
            f"the chain's sequencer came back up less than {grace} s ago",
        ),
        (
            SequencerStatus(up=False, since=0, readable=False),
            "the chain's sequencer uptime feed cannot be read",
        ),
    ]
    for sequencer, why in cases:
        verdict = assess(_reading(collateral=feeds, sequencer=sequencer), Exposure(), DEFAULTS)
        # no exit on a price that may be from before the outage, and no new funds
        assert (verdict.state, verdict.rules) == (RiskState.NO_NEW_FUNDS, (Rule.DEPEG,))
        assert verdict.reasons == (f"the price feed of collateral USDe, sUSD is stale: {why}",)
    back = SequencerStatus(up=True, since=NOW - grace)  # the grace period is over
    verdict = assess(_reading(collateral=feeds, sequencer=back), Exposure(), DEFAULTS)
    assert verdict.state == RiskState.EXIT  # the fallen price now counts
    calm = _reading(collateral=(steady,), sequencer=back)
    assert assess(calm, Exposure(), DEFAULTS).state == RiskState.OK
    # A pool lending against no priced collateral has nothing to distrust.
    down = SequencerStatus(up=False, since=NOW)
    assert assess(_reading(sequencer=down), Exposure(), DEFAULTS).state == RiskState.OK


def test_a_pool_we_hold_our_share_of_takes_no_new_funds() -> None:
    verdict = assess(_reading(), Exposure(ours=TVL * 15 // 100), DEFAULTS)
    assert verdict.state == RiskState.NO_NEW_FUNDS
    assert verdict.rules == (Rule.POOL_SHARE,)
    assert assess(_reading(), Exposure(ours=TVL * 15 // 100 - 1), DEFAULTS).takes_funds


def test_the_verdict_is_the_strictest_trip_with_every_reason() -> None:
    now = _snapshot(withdraw_paused=True, share_price=RAY - 1)
    verdict = assess(_reading(now, _snapshot(1)), Exposure(), DEFAULTS)
    assert verdict.state == RiskState.EXIT
    assert verdict.rules == (Rule.PAUSED, Rule.LOSS)
    assert len(verdict.reasons) == 2
    only = assess(_reading(now, _snapshot(1)), Exposure(), DEFAULTS, guards=[Rule.PAUSED])
    assert only.state == RiskState.NO_NEW_FUNDS


def test_a_history_stays_small_and_within_its_window() -> None:
    history: tuple[Snapshot, ...] = ()
    for hour in range(100):
        history = recorded(history, Snapshot(NOW + hour * HOUR, TVL, 0, RAY), 24 * HOUR)
    assert len(history) == 25
    assert history[0].at == NOW + 75 * HOUR
    history = recorded(history, Snapshot(NOW + 99 * HOUR, TVL // 2, 0, RAY), 24 * HOUR)
    assert len(history) == 26 and history[-2:] == (
        Snapshot(NOW + 99 * HOUR, TVL, 0, RAY),
        Snapshot(NOW + 99 * HOUR, TVL // 2, 0, RAY),
    )
    many: tuple[Snapshot, ...] = ()
    for minute in range(200):
        many = recorded(many, Snapshot(NOW + minute * 60, TVL, 0, RAY), 24 * HOUR)
    assert len(many) == MAX_SNAPSHOTS
