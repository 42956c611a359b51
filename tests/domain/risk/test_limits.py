"""What the guards let a wallet hold, which moves they refuse, and when a move waits."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from yieldagent.domain.constraints import Constraints
from yieldagent.domain.market.readings import RiskState
from yieldagent.domain.risk.guards import OK, Rule, Trip, Verdict
from yieldagent.domain.risk.limits import (
    guarded,
    move_loss_refused,
    must_wait,
    share_room,
    size_cap,
    unbound_below,
    wallet_cap,
)
from yieldagent.domain.risk.settings import RiskSettings

DEFAULTS = RiskSettings()
EXIT = Verdict(RiskState.EXIT, (Trip(Rule.TVL_DROP, RiskState.EXIT, "TVL fell"),))
FULL = Verdict(RiskState.NO_NEW_FUNDS, (Trip(Rule.UTILISATION, RiskState.NO_NEW_FUNDS, "full"),))
amounts = st.integers(0, 10**15)


@given(tvl=amounts, ours=amounts, share=st.sampled_from([0.01, 0.15, 0.3, 0.5, 0.99]))
def test_the_share_room_is_the_most_that_keeps_the_service_within_its_share(
    tvl: int, ours: int, share: float
) -> None:
    ours = min(ours, tvl)
    settings = RiskSettings(max_pool_share=share)
    room = share_room(tvl, ours, settings)
    limit = Fraction(str(share))
    if room > 0:
        assert Fraction(ours + room, tvl + room) <= limit
    if Fraction(ours, max(tvl, 1)) < limit or tvl == 0:
        # one unit more would break it
        assert Fraction(ours + room + 1, tvl + room + 1) > limit


@given(tvl=amounts, held=amounts)
def test_the_size_cap_keeps_the_pool_ten_times_the_position(tvl: int, held: int) -> None:
    held = min(held, tvl)
    cap = size_cap(tvl, held, DEFAULTS)
    assert tvl - held + cap >= 10 * cap
    assert tvl - held + cap + 1 < 10 * (cap + 1)


@given(tvl=amounts, ours=amounts, held=amounts, state=st.sampled_from(list(RiskState)))
def test_a_wallet_cap_respects_every_guard(
    tvl: int, ours: int, held: int, state: RiskState
) -> None:
    ours = min(ours, tvl)
    held = min(held, ours)
    verdict = {RiskState.OK: OK, RiskState.NO_NEW_FUNDS: FULL, RiskState.EXIT: EXIT}[state]
    cap = wallet_cap(tvl, ours, held, verdict, DEFAULTS)
    if state == RiskState.EXIT:
        assert cap == 0
        return
    if state == RiskState.NO_NEW_FUNDS:
        assert cap <= held
    # the service never grows beyond its share of the pool after its change
    if cap > held:
        grown = cap - held
        assert Fraction(ours + grown, tvl + grown) <= Fraction(3, 20)
    # the pool stays ten times the wallet's position after its change
    assert tvl - held + cap >= 10 * cap


def test_guarded_constraints_exclude_exits_and_cap_the_rest() -> None:
    rules = Constraints(max_amount={"aave_v3": 50}, min_amount={"compound_v3": 10})
    out = guarded(
        rules,
        {"compound_v3": EXIT, "aave_v3": OK, "morpho": FULL},
        {"aave_v3": 80, "morpho": 30, "compound_v3": 0},
    )
    assert out.excluded == {"compound_v3"}
    assert out.max_amount == {"aave_v3": 50, "morpho": 30}
    assert out.min_amount == {}
    assert guarded(rules, {"aave_v3": OK}, {}) is rules


def test_a_move_losing_more_than_a_basis_point_is_refused() -> None:
    assert not move_loss_refused(1_000_000, 1_000_000, DEFAULTS)
    assert not move_loss_refused(1_000_000, 999_900, DEFAULTS)  # exactly 1 bp
    assert move_loss_refused(1_000_000, 999_899, DEFAULTS)
    assert not move_loss_refused(1_000_000, 1_000_100, DEFAULTS)  # a gain is no loss


def test_a_yield_only_move_waits_six_hours_after_the_last() -> None:
    assert not must_wait(None, 100_000.0, DEFAULTS)
    assert must_wait(100_000.0, 100_000.0 + 6 * 3_600 - 1, DEFAULTS)
    assert not must_wait(100_000.0, 100_000.0 + 6 * 3_600, DEFAULTS)


@settings(max_examples=300, deadline=None)
@given(
    tvl=st.integers(0, 10**15),
    service=st.integers(0, 10**15),
    total=st.integers(0, 10**15),
    held_share=st.fractions(0, 1),
    share=st.sampled_from([0.05, 0.15, 0.5, 1.0]),
    multiple=st.integers(1, 20),
)
def test_no_cap_binds_a_wallet_worth_less_than_the_pools_unbound_value(
    tvl: int,
    service: int,
    total: int,
    held_share: Fraction,
    share: float,
    multiple: int,
) -> None:
    guards = RiskSettings(max_pool_share=share, min_pool_multiple=multiple)
    held = int(total * held_share)
    if total <= unbound_below(tvl, service, guards):
        assert wallet_cap(tvl, max(service, held), held, OK, guards) >= total
