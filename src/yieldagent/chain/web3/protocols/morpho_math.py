"""Morpho Blue's accrual and its AdaptiveCurveIrm, in the contracts' own integer math.

A market's stored totals lack the interest accrued since its ``lastUpdate``, and the IRM's
stored ``rateAtTarget`` is the one of that moment. To quote a market as it is at a later
block, this module computes what the next interaction would compute first, digit for
digit: the IRM's average borrow rate and end rate at target over the elapsed time
(``AdaptiveCurveIrm._borrowRate``, with ``ExpLib.wExp``'s approximation of exp), and
Morpho's interest and fee shares (``Morpho._accrueInterest``, as
``MorphoBalancesLib.expectedMarketBalances`` does in a view). Everything is per second
and scaled by WAD (1e18), as on chain; Solidity's signed division rounds toward zero.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

WAD = 10**18
YEAR = 365 * 24 * 3600

# ConstantsLib of the AdaptiveCurveIrm (per second, WAD).
CURVE_STEEPNESS = 4 * WAD
ADJUSTMENT_SPEED = 50 * WAD // YEAR
TARGET_UTILIZATION = 9 * WAD // 10
INITIAL_RATE_AT_TARGET = 4 * WAD // 100 // YEAR
MIN_RATE_AT_TARGET = WAD // 1000 // YEAR
MAX_RATE_AT_TARGET = 2 * WAD // YEAR

# ExpLib.
LN_2 = 693_147_180_559_945_309
LN_WEI = -41_446_531_673_892_822_312
WEXP_UPPER_BOUND = 93_859_467_695_000_404_319
WEXP_UPPER_VALUE = 57_716_089_161_558_943_949_701_069_502_944_508_345_128_422_502_756_744_429_568

# SharesMathLib.
VIRTUAL_SHARES = 10**6
VIRTUAL_ASSETS = 1


def _div_to_zero(a: int, b: int) -> int:
    """Solidity's signed ``a / b``: rounded toward zero."""
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b > 0) else -quotient


def w_mul_to_zero(x: int, y: int) -> int:
    """``x * y / WAD``, rounded toward zero (signed)."""
    return _div_to_zero(x * y, WAD)


def w_div_to_zero(x: int, y: int) -> int:
    """``x * WAD / y``, rounded toward zero (signed)."""
    return _div_to_zero(x * WAD, y)


def w_exp(x: int) -> int:
    """``ExpLib.wExp``: e ** x (WAD), as x = q ln2 + r with a 2nd-order Taylor e ** r."""
    if x < LN_WEI:
        return 0
    if x >= WEXP_UPPER_BOUND:
        return WEXP_UPPER_VALUE
    adjustment = -(LN_2 // 2) if x < 0 else LN_2 // 2
    q = _div_to_zero(x + adjustment, LN_2)
    r = x - q * LN_2
    exp_r = WAD + r + r * r // WAD // 2
    return exp_r << q if q >= 0 else exp_r >> -q


def w_taylor_compounded(x: int, n: int) -> int:
    """Morpho's ``wTaylorCompounded``: e ** (x n) − 1 to the third order (WAD)."""
    first = x * n
    second = first * first // (2 * WAD)
    third = second * first // (3 * WAD)
    return first + second + third


def to_assets_down(shares: int, total_assets: int, total_shares: int) -> int:
    """``SharesMathLib.toAssetsDown``."""
    return shares * (total_assets + VIRTUAL_ASSETS) // (total_shares + VIRTUAL_SHARES)


def to_shares_down(assets: int, total_assets: int, total_shares: int) -> int:
    """``SharesMathLib.toSharesDown``."""
    return assets * (total_shares + VIRTUAL_SHARES) // (total_assets + VIRTUAL_ASSETS)


@dataclass(frozen=True, slots=True)
class MarketState:
    """Morpho Blue's ``market(id)``."""

    total_supply_assets: int
    total_supply_shares: int
    total_borrow_assets: int
    total_borrow_shares: int
    last_update: int
    fee: int

    def utilization(self) -> int:
        """``totalBorrowAssets.wDivDown(totalSupplyAssets)`` (0 for an empty market)."""
        if self.total_supply_assets == 0:
            return 0
        return self.total_borrow_assets * WAD // self.total_supply_assets


def error(utilization: int) -> int:
    """The IRM's normalized distance to the target utilization (WAD, signed)."""
    norm = WAD - TARGET_UTILIZATION if utilization > TARGET_UTILIZATION else TARGET_UTILIZATION
    return w_div_to_zero(utilization - TARGET_UTILIZATION, norm)


def curve(rate_at_target: int, err: int) -> int:
    """``AdaptiveCurveIrm._curve``: the borrow rate at ``err`` for a rate at target."""
    coefficient = WAD - w_div_to_zero(WAD, CURVE_STEEPNESS) if err < 0 else CURVE_STEEPNESS - WAD
    return w_mul_to_zero(w_mul_to_zero(coefficient, err) + WAD, rate_at_target)


def new_rate_at_target(start: int, linear_adaptation: int) -> int:
    """``_newRateAtTarget``: start × e ** adaptation, within the IRM's bounds."""
    adapted = w_mul_to_zero(start, w_exp(linear_adaptation))
    return max(min(adapted, MAX_RATE_AT_TARGET), MIN_RATE_AT_TARGET)


def borrow_rate(market: MarketState, start_rate_at_target: int, now: int) -> tuple[int, int]:
    """``AdaptiveCurveIrm._borrowRate``: (average borrow rate over the time since the
    market's last update, rate at target at ``now``), per second, WAD."""
    err = error(market.utilization())
    if start_rate_at_target == 0:  # the market's first interaction
        return curve(INITIAL_RATE_AT_TARGET, err), INITIAL_RATE_AT_TARGET
    linear = w_mul_to_zero(ADJUSTMENT_SPEED, err) * (now - market.last_update)
    if linear == 0:
        return curve(start_rate_at_target, err), start_rate_at_target
    end = new_rate_at_target(start_rate_at_target, linear)
    middle = new_rate_at_target(start_rate_at_target, _div_to_zero(linear, 2))
    average = _div_to_zero(start_rate_at_target + end + 2 * middle, 4)
    return curve(average, err), end


def accrued(
    market: MarketState, start_rate_at_target: int, now: int, has_irm: bool = True
) -> tuple[MarketState, int]:
    """The market and the IRM's rate at target as Morpho's next ``_accrueInterest`` at
    ``now`` would leave them."""
    elapsed = now - market.last_update
    if elapsed <= 0 or not has_irm:
        return market, start_rate_at_target
    rate, end = borrow_rate(market, start_rate_at_target, now)
    interest = market.total_borrow_assets * w_taylor_compounded(rate, elapsed) // WAD
    supply_assets = market.total_supply_assets + interest
    supply_shares = market.total_supply_shares
    if market.fee != 0:
        fee_amount = interest * market.fee // WAD
        supply_shares += to_shares_down(fee_amount, supply_assets - fee_amount, supply_shares)
    return (
        replace(
            market,
            total_supply_assets=supply_assets,
            total_supply_shares=supply_shares,
            total_borrow_assets=market.total_borrow_assets + interest,
            last_update=now,
        ),
        end,
    )
