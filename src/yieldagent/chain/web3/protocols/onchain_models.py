"""Rate models that compute as the contracts do: per second, scaled by 1e18, truncating.

The domain's models compute annual RAY rates. Comet, Moonwell's JumpRateModel and Morpho's
AdaptiveCurveIrm compute per-second WAD rates and truncate at every step, so at a few
percent a year (about 1e9 units a second) the domain's rate and the contract's differ by
up to a few parts in 1e9. These subclasses keep the domain's parameters (annual RAY, each
an exact multiple of the contract's per-second value) and its interface, but ``rates``
redoes the contract's own integer arithmetic and annualizes the result, so a quote gives
the contract's rate to the unit. Everything else (kinks, adaptation) is the domain's.
"""

from __future__ import annotations

from dataclasses import dataclass

from yieldagent.chain.web3.protocols import morpho_math as mm
from yieldagent.domain.market.rate_models import (
    RAY,
    SECONDS_PER_YEAR,
    CompoundV3,
    Moonwell,
    MorphoBlue,
    Rates,
    ray_div,
    ray_mul,
)

WAD = 10**18
WAD_TO_RAY = 10**9
ANNUAL_RAY_PER_WAD_SECOND = SECONDS_PER_YEAR * WAD_TO_RAY


def per_second(annual: int) -> int:
    """The contract's per-second WAD rate of an annual RAY parameter built from it."""
    return annual // ANNUAL_RAY_PER_WAD_SECOND


def annual(rate_per_second: int) -> int:
    """A per-second WAD rate as an annual RAY rate (exact)."""
    return rate_per_second * ANNUAL_RAY_PER_WAD_SECOND


def _wad_utilization(supply: int, borrows: int) -> int:
    """``borrows * 1e18 / supply``, truncated, within [0, 1e18] (0 with nothing supplied
    or borrowed)."""
    if supply <= 0 or borrows <= 0:
        return 0
    return min(borrows * WAD // supply, WAD)


@dataclass(frozen=True, slots=True)
class CometModel(CompoundV3):
    """Comet's ``getSupplyRate`` / ``getBorrowRate`` of ``getUtilization``."""

    def rates(self, supply: int, borrows: int, rate_at_target: int) -> Rates:
        u = _wad_utilization(supply, borrows)
        supply_rate = _comet_curve(
            u, self.supply_kink, self.supply_base, self.supply_slope_low, self.supply_slope_high
        )
        borrow_rate = _comet_curve(
            u, self.borrow_kink, self.borrow_base, self.borrow_slope_low, self.borrow_slope_high
        )
        return Rates(annual(borrow_rate), annual(supply_rate))


def _comet_curve(u: int, kink: int, base: int, low: int, high: int) -> int:
    kink_wad = kink // WAD_TO_RAY
    base, low, high = per_second(base), per_second(low), per_second(high)
    if u <= kink_wad:
        return base + low * u // WAD
    return base + low * kink_wad // WAD + high * (u - kink_wad) // WAD


@dataclass(frozen=True, slots=True)
class JumpRateModel(Moonwell):
    """Moonwell's ``JumpRateModel.getBorrowRate`` / ``getSupplyRate`` (supply = cash +
    borrows − reserves)."""

    def rates(self, supply: int, borrows: int, rate_at_target: int) -> Rates:
        u = _wad_utilization(supply, borrows)
        kink = self.kink // WAD_TO_RAY
        base, multiplier = per_second(self.base_rate), per_second(self.multiplier)
        if u <= kink:
            borrow = u * multiplier // WAD + base
        else:
            normal = kink * multiplier // WAD + base
            borrow = (u - kink) * per_second(self.jump_multiplier) // WAD + normal
        to_pool = borrow * (WAD - self.reserve_factor // WAD_TO_RAY) // WAD
        return Rates(annual(borrow), annual(u * to_pool // WAD))


@dataclass(frozen=True, slots=True)
class AdaptiveCurveModel(MorphoBlue):
    """Morpho Blue's AdaptiveCurveIrm: the borrow rate its ``borrowRateView`` returns for a
    market just accrued (``rate_at_target`` an exact multiple of a per-second WAD rate);
    supply rate = borrow rate × utilization × (1 − fee), as Morpho's suppliers earn."""

    def rates(self, supply: int, borrows: int, rate_at_target: int) -> Rates:
        u = 0 if supply <= 0 else min(max(borrows, 0) * WAD // supply, WAD)
        start = per_second(rate_at_target) or mm.INITIAL_RATE_AT_TARGET
        borrow = annual(mm.curve(start, mm.error(u)))
        u_ray = min(RAY, ray_div(borrows, supply)) if supply > 0 and borrows > 0 else 0
        return Rates(borrow, ray_mul(ray_mul(borrow, u_ray), RAY - self.fee))
