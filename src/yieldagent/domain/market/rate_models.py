"""Interest rate models of the lending protocols, in integer math as on chain.

Units:

* Rates are ANNUAL rates scaled by ``RAY`` (1e27), as Python ints: 4% a year is
  ``4 * RAY // 100`` (``percent("0.04")``). No compounding is implied: an APR.
* Amounts (``supply``, ``borrows``) are in the token's smallest units. ``supply`` is the total
  supplied, borrows included (Aave: available liquidity + debt; Moonwell: cash + borrows -
  reserves), so a deposit ``x`` makes the utilization ``borrows / (supply + x)``.
* Utilization is a ``RAY``-scaled fraction in ``[0, RAY]``.
* ``rate_at_target`` is the state of an adaptive model (Morpho Blue), an annual ``RAY`` rate;
  the other models ignore it (their ``initial_rate_at_target()`` is 0).

All rate arithmetic is integer, rounding half up like Aave's ``rayMul`` / ``rayDiv``. Floats
appear only in the display helpers ``apr_percent`` and ``apy_from_apr``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import ClassVar, Protocol

RAY = 10**27
WAD = 10**18
SECONDS_PER_YEAR = 31_536_000

_GUARD = 10**18  # extra digits ray_exp works with before rounding to RAY
LN2_EXACT = 693_147_180_559_945_309_417_232_121_458_176_568_075_500_134  # ln 2, scaled by 1e45


def ray_mul(a: int, b: int) -> int:
    """``a * b`` of two RAY-scaled numbers, rounded half up."""
    return (a * b + RAY // 2) // RAY


def ray_div(a: int, b: int) -> int:
    """``a / b`` as a RAY-scaled number, rounded half up (``b`` must be positive)."""
    return (a * RAY + b // 2) // b


def percent(value: float | str) -> int:
    """The RAY-scaled int of a fraction given in decimal: ``percent("0.04")`` is 4%."""
    exact = Decimal(value if isinstance(value, str) else str(value))
    if not exact.is_finite():
        raise ValueError(f"not a finite number: {value!r}")
    return int(exact.scaleb(27, Context(prec=100)).to_integral_value(ROUND_HALF_UP))


def apr_percent(rate: int) -> float:
    """A RAY rate as a percent, for display: 4% a year gives ``4.0``."""
    return rate * 100 / RAY


def apy_from_apr(rate: int) -> float:
    """The yearly yield in percent of an annual RAY rate compounded every second (display)."""
    per_second = rate / RAY / SECONDS_PER_YEAR
    try:
        apy = math.expm1(SECONDS_PER_YEAR * math.log1p(per_second)) * 100
    except OverflowError:  # beyond ~70,000% a year
        return math.inf
    # (1 + a/n)^n - 1 >= a for a >= 0: keep float rounding from breaking that.
    return max(apy, apr_percent(rate)) if rate >= 0 else apy


def ray_exp(x: int) -> int:
    """``e ** x`` of a RAY-scaled (signed) ``x``, as a RAY-scaled int, rounded half up.

    ``x = k ln2 + r`` with ``|r| <= ln2 / 2``; the Taylor series of ``e ** r`` is summed with
    18 guard digits, then shifted by ``k``: the relative error is far below 1e-18.
    """
    if x < -70 * RAY:  # e ** -70 < 1e-30: rounds to 0
        return 0
    exact_x = x * _GUARD
    k = (2 * exact_x + LN2_EXACT) // (2 * LN2_EXACT)
    r = exact_x - k * LN2_EXACT
    total = term = one = RAY * _GUARD
    n = 1
    while term != 0:
        term = term * r // (n * one)
        total += term
        n += 1
    numerator, denominator = (total << k, _GUARD) if k >= 0 else (total, _GUARD << -k)
    return (numerator + denominator // 2) // denominator


def _utilization(supply: int, borrows: int) -> int:
    if supply <= 0 or borrows <= 0:
        return 0
    return min(RAY, ray_div(borrows, supply))


@dataclass(frozen=True, slots=True)
class Rates:
    """A pool's annual rates, scaled by RAY."""

    borrow: int
    supply: int  # what suppliers earn, after the reserve factor / fee


class RateModel(Protocol):
    """How a pool's rates follow from its supply and borrows."""

    @property
    def kind(self) -> str:
        """``aave_v3``, ``compound_v3``, ``morpho_blue`` or ``moonwell``."""

    def utilization(self, supply: int, borrows: int) -> int:
        """``borrows / supply``, RAY-scaled, 0 when nothing is supplied, at most RAY."""

    def rates(self, supply: int, borrows: int, rate_at_target: int) -> Rates:
        """Rates for ``supply`` and ``borrows`` (token units) and the model's adaptive state."""

    def adapt(self, supply: int, borrows: int, rate_at_target: int, seconds: int) -> int:
        """The adaptive state after ``seconds`` at this utilization (unchanged if not adaptive)."""

    def initial_rate_at_target(self) -> int:
        """The adaptive state of a new market (0 for models that do not adapt)."""

    @property
    def kinks(self) -> tuple[int, ...]:
        """Utilizations (RAY) where the supply rate's slope changes; a full market (``RAY``)
        is one for every model, as utilization stops there."""


class _Model:
    """What the models share; the non-adaptive ones keep all of it."""

    __slots__ = ()

    def utilization(self, supply: int, borrows: int) -> int:
        return _utilization(supply, borrows)

    def adapt(self, supply: int, borrows: int, rate_at_target: int, seconds: int) -> int:
        return rate_at_target

    def initial_rate_at_target(self) -> int:
        return 0


@dataclass(frozen=True, slots=True)
class AaveV3(_Model):
    """Aave v3's two-slope curve around an optimal utilization."""

    kind: ClassVar[str] = "aave_v3"
    optimal_utilization: int
    base_rate: int
    slope1: int
    slope2: int
    reserve_factor: int

    @classmethod
    def base_usdc(cls) -> AaveV3:
        return cls(percent("0.90"), 0, percent("0.04"), percent("0.60"), percent("0.10"))

    @property
    def kinks(self) -> tuple[int, ...]:
        return (self.optimal_utilization, RAY)

    def rates(self, supply: int, borrows: int, rate_at_target: int) -> Rates:
        u = _utilization(supply, borrows)
        if u <= self.optimal_utilization:
            borrow = self.base_rate + ray_div(ray_mul(self.slope1, u), self.optimal_utilization)
        else:
            excess = ray_div(u - self.optimal_utilization, RAY - self.optimal_utilization)
            borrow = self.base_rate + self.slope1 + ray_mul(self.slope2, excess)
        return Rates(borrow, ray_mul(ray_mul(borrow, u), RAY - self.reserve_factor))


def _kinked(u: int, kink: int, base: int, slope_low: int, slope_high: int) -> int:
    if u <= kink:
        return base + ray_mul(slope_low, u)
    return base + ray_mul(slope_low, kink) + ray_mul(slope_high, u - kink)


@dataclass(frozen=True, slots=True)
class CompoundV3(_Model):
    """Compound v3 (Comet): separate kinked curves; its supply rate is what suppliers earn."""

    kind: ClassVar[str] = "compound_v3"
    supply_kink: int
    supply_base: int
    supply_slope_low: int
    supply_slope_high: int
    borrow_kink: int
    borrow_base: int
    borrow_slope_low: int
    borrow_slope_high: int

    @classmethod
    def base_usdc(cls) -> CompoundV3:
        supply = percent("0.85"), 0, percent("0.048"), percent("1.6")
        borrow = percent("0.85"), percent("0.015"), percent("0.053"), percent("1.8")
        return cls(*supply, *borrow)

    @property
    def kinks(self) -> tuple[int, ...]:
        return (self.supply_kink, RAY)

    def rates(self, supply: int, borrows: int, rate_at_target: int) -> Rates:
        u = _utilization(supply, borrows)
        low, high = self.borrow_slope_low, self.borrow_slope_high
        borrow = _kinked(u, self.borrow_kink, self.borrow_base, low, high)
        low, high = self.supply_slope_low, self.supply_slope_high
        return Rates(borrow, _kinked(u, self.supply_kink, self.supply_base, low, high))


@dataclass(frozen=True, slots=True)
class Moonwell(_Model):
    """Moonwell's JumpRateModel (Compound v2): a base, a slope, and a jump above the kink."""

    kind: ClassVar[str] = "moonwell"
    base_rate: int
    kink: int
    multiplier: int
    jump_multiplier: int
    reserve_factor: int

    @classmethod
    def base_usdc(cls) -> Moonwell:
        return cls(0, percent("0.9"), percent("0.067"), percent("9.0"), percent("0.10"))

    @property
    def kinks(self) -> tuple[int, ...]:
        return (self.kink, RAY)

    def rates(self, supply: int, borrows: int, rate_at_target: int) -> Rates:
        u = _utilization(supply, borrows)
        borrow = _kinked(u, self.kink, self.base_rate, self.multiplier, self.jump_multiplier)
        return Rates(borrow, ray_mul(u, ray_mul(borrow, RAY - self.reserve_factor)))


TARGET_UTILIZATION = percent("0.9")
CURVE_STEEPNESS = 4 * RAY
ADJUSTMENT_SPEED = 50 * RAY  # per year
MIN_RATE_AT_TARGET = percent("0.001")
MAX_RATE_AT_TARGET = percent("2")
INITIAL_RATE_AT_TARGET = percent("0.04")
_MAX_EXPONENT = 100 * RAY  # e ** 100 leaves any rate at target clamped


@dataclass(frozen=True, slots=True)
class MorphoBlue(_Model):
    """Morpho Blue's AdaptiveCurveIrm: a curve around a rate at target that drifts with time.

    A ``rate_at_target`` of 0 means a market not yet initialized, as on chain: the initial
    rate at target (4% a year) is used.
    """

    kind: ClassVar[str] = "morpho_blue"
    fee: int = 0

    @classmethod
    def base_usdc(cls) -> MorphoBlue:
        return cls(fee=0)

    def initial_rate_at_target(self) -> int:
        return INITIAL_RATE_AT_TARGET

    @property
    def kinks(self) -> tuple[int, ...]:
        return (TARGET_UTILIZATION, RAY)

    def error(self, supply: int, borrows: int) -> int:
        """The signed, normalized distance to the target utilization, in ``[-RAY, RAY]``."""
        u = _utilization(supply, borrows)
        norm = TARGET_UTILIZATION if u <= TARGET_UTILIZATION else RAY - TARGET_UTILIZATION
        return ray_div(u - TARGET_UTILIZATION, norm)

    def rates(self, supply: int, borrows: int, rate_at_target: int) -> Rates:
        err = self.error(supply, borrows)
        coefficient = RAY - ray_div(RAY, CURVE_STEEPNESS) if err < 0 else CURVE_STEEPNESS - RAY
        borrow = ray_mul(ray_mul(coefficient, err) + RAY, rate_at_target or INITIAL_RATE_AT_TARGET)
        u = _utilization(supply, borrows)
        return Rates(borrow, ray_mul(ray_mul(borrow, u), RAY - self.fee))

    def adapt(self, supply: int, borrows: int, rate_at_target: int, seconds: int) -> int:
        start = rate_at_target or INITIAL_RATE_AT_TARGET
        # speed * err * seconds, with the speed per year: RAY-scaled, rounded half up
        linear = ADJUSTMENT_SPEED * self.error(supply, borrows) * seconds
        per_year = RAY * SECONDS_PER_YEAR
        exponent = (linear + per_year // 2) // per_year
        if exponent == 0:
            return start
        exponent = max(-_MAX_EXPONENT, min(_MAX_EXPONENT, exponent))
        adapted = ray_mul(start, ray_exp(exponent))
        return max(MIN_RATE_AT_TARGET, min(MAX_RATE_AT_TARGET, adapted))


def model_for(kind: str) -> RateModel:
    """The Base USDC model of a protocol kind."""
    models: dict[str, RateModel] = {
        AaveV3.kind: AaveV3.base_usdc(),
        CompoundV3.kind: CompoundV3.base_usdc(),
        MorphoBlue.kind: MorphoBlue.base_usdc(),
        Moonwell.kind: Moonwell.base_usdc(),
    }
    try:
        return models[kind]
    except KeyError:
        raise ValueError(f"unknown rate model: {kind!r}") from None


_OWN_MODELS = (AaveV3, CompoundV3, Moonwell, MorphoBlue)
_HALF = RAY // 2
_BELOW_NORM, _ABOVE_NORM = TARGET_UTILIZATION, RAY - TARGET_UTILIZATION
_BELOW_COEFFICIENT = RAY - ray_div(RAY, CURVE_STEEPNESS)  # MorphoBlue.rates' coefficients
_ABOVE_COEFFICIENT = CURVE_STEEPNESS - RAY

SupplyRate = Callable[[int], int]
"""A market's supply rate (annual, RAY) as a function of its total supply, its borrows and
adaptive state held fixed."""


def supply_rate_function(model: RateModel, borrows: int, rate_at_target: int) -> SupplyRate:
    """``lambda supply: model.rates(supply, borrows, rate_at_target).supply``, the same
    integers, with the constants worked out once: the optimizer asks for thousands of rates
    of one market. Models other than this module's own (a subclass with other arithmetic)
    keep their ``rates``."""
    kind = type(model)
    half = _HALF
    if borrows <= 0 or kind not in _OWN_MODELS:
        return lambda supply: model.rates(supply, borrows, rate_at_target).supply
    scaled = borrows * RAY  # utilization is ray_div(borrows, supply)

    if isinstance(model, AaveV3) and kind is AaveV3:
        optimal, base, slope1 = model.optimal_utilization, model.base_rate, model.slope1
        slope2, keep = model.slope2, RAY - model.reserve_factor
        above, optimal_half, above_half = RAY - optimal, optimal // 2, (RAY - optimal) // 2

        def aave(supply: int) -> int:
            u = 0 if supply <= 0 else (scaled + supply // 2) // supply
            if u > RAY:  # min(RAY, u), without the call
                u = RAY
            if u <= optimal:
                borrow = base + (((slope1 * u + half) // RAY) * RAY + optimal_half) // optimal
            else:
                excess = ((u - optimal) * RAY + above_half) // above
                borrow = base + slope1 + (slope2 * excess + half) // RAY
            return (((borrow * u + half) // RAY) * keep + half) // RAY

        return aave
    if isinstance(model, CompoundV3) and kind is CompoundV3:
        kink, base = model.supply_kink, model.supply_base
        low, high = model.supply_slope_low, model.supply_slope_high
        at_kink = base + (low * kink + half) // RAY

        def compound(supply: int) -> int:
            u = 0 if supply <= 0 else (scaled + supply // 2) // supply
            if u > RAY:  # min(RAY, u), without the call
                u = RAY
            if u <= kink:
                return base + (low * u + half) // RAY
            return at_kink + (high * (u - kink) + half) // RAY

        return compound
    if isinstance(model, Moonwell) and kind is Moonwell:
        kink, base, multiplier = model.kink, model.base_rate, model.multiplier
        jump, keep = model.jump_multiplier, RAY - model.reserve_factor
        at_kink = base + (multiplier * kink + half) // RAY

        def moonwell(supply: int) -> int:
            u = 0 if supply <= 0 else (scaled + supply // 2) // supply
            if u > RAY:  # min(RAY, u), without the call
                u = RAY
            if u <= kink:
                borrow = base + (multiplier * u + half) // RAY
            else:
                borrow = at_kink + (jump * (u - kink) + half) // RAY
            return (u * ((borrow * keep + half) // RAY) + half) // RAY

        return moonwell
    assert isinstance(model, MorphoBlue)
    target = rate_at_target or INITIAL_RATE_AT_TARGET
    keep = RAY - model.fee
    at, ray = TARGET_UTILIZATION, RAY
    below_norm, above_norm = _BELOW_NORM, _ABOVE_NORM
    below_half, above_half = below_norm // 2, above_norm // 2
    below_coefficient, above_coefficient = _BELOW_COEFFICIENT, _ABOVE_COEFFICIENT

    def morpho(supply: int) -> int:
        u = 0 if supply <= 0 else (scaled + supply // 2) // supply
        if u > ray:
            u = ray
        # err <= 0 below the target, where its coefficient may be either when it is 0
        if u <= at:
            err = ((u - at) * ray + below_half) // below_norm
            borrow = (((below_coefficient * err + half) // ray + ray) * target + half) // ray
        else:
            err = ((u - at) * ray + above_half) // above_norm
            borrow = (((above_coefficient * err + half) // ray + ray) * target + half) // ray
        if keep == ray:  # (x * RAY + half) // RAY is x
            return (borrow * u + half) // ray
        return (((borrow * u + half) // ray) * keep + half) // ray

    return morpho
