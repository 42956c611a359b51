// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

import {IIrm} from "@morpho-org/morpho-blue/src/interfaces/IIrm.sol";
import {Id, MarketParams, Market} from "@morpho-org/morpho-blue/src/interfaces/IMorpho.sol";
import {MarketParamsLib} from "@morpho-org/morpho-blue/src/libraries/MarketParamsLib.sol";

/// @title AdaptiveCurveIrm (devnet)
/// @notice Morpho Blue's adaptive curve interest rate model, written here after the algorithm of
/// Morpho Labs' AdaptiveCurveIrm (morpho-blue-irm, MIT), with its production constants:
/// curve steepness 4, adjustment speed 50 per year, target utilization 90%, initial rate at
/// target 4% a year, bounded to [0.1%, 200%] a year. All values are per second, scaled 1e18,
/// and every step rounds as the original does (toward zero), so rates match it to the wei.
/// - u = totalBorrowAssets / totalSupplyAssets (rounded down); err = (u - 0.9) / 0.9 below the
///   target, (u - 0.9) / 0.1 above it.
/// - curve(r, err) = r * ((1 - 1/4) * err + 1) for err < 0, r * ((4 - 1) * err + 1) otherwise.
/// - The rate at target moves as r * exp(speed * err * elapsed) (exp: 2^q * 2nd-order Taylor);
///   the borrow rate returned is curve(average rate at target over the elapsed time, err),
///   the average taken by the trapezoidal rule with two steps.
contract AdaptiveCurveIrm is IIrm {
    using MarketParamsLib for MarketParams;

    int256 internal constant WAD = 1e18;
    int256 public constant CURVE_STEEPNESS = 4 ether;
    int256 public constant ADJUSTMENT_SPEED = int256(50 ether) / 365 days;
    int256 public constant TARGET_UTILIZATION = 0.9 ether;
    int256 public constant INITIAL_RATE_AT_TARGET = int256(0.04 ether) / 365 days;
    int256 public constant MIN_RATE_AT_TARGET = int256(0.001 ether) / 365 days;
    int256 public constant MAX_RATE_AT_TARGET = int256(2 ether) / 365 days;

    /// @dev ln(2) and ln(1e-18), scaled 1e18.
    int256 internal constant LN_2 = 0.693147180559945309 ether;
    int256 internal constant LN_WEI = -41.446531673892822312 ether;
    /// @dev exp is clipped above ln(type(int256).max / 1e36) so that exp * 1e18 cannot overflow.
    int256 internal constant EXP_UPPER_BOUND = 93.859467695000404319 ether;
    int256 internal constant EXP_UPPER_VALUE = 57716089161558943949701069502944508345128.422502756744429568 ether;

    /// @notice Morpho Blue, the only caller of `borrowRate`.
    address public immutable MORPHO;
    /// @notice Each market's rate at target (0 until its first interaction).
    mapping(Id => int256) public rateAtTarget;

    event BorrowRateUpdate(Id indexed id, uint256 avgBorrowRate, uint256 rateAtTarget);

    constructor(address morpho) {
        require(morpho != address(0), "zero address");
        MORPHO = morpho;
    }

    /// @inheritdoc IIrm
    function borrowRateView(MarketParams memory marketParams, Market memory market) external view returns (uint256) {
        (uint256 average,) = _rates(marketParams.id(), market);
        return average;
    }

    /// @inheritdoc IIrm
    function borrowRate(MarketParams memory marketParams, Market memory market) external returns (uint256) {
        require(msg.sender == MORPHO, "not Morpho");
        Id id = marketParams.id();
        (uint256 average, int256 end) = _rates(id, market);
        rateAtTarget[id] = end;
        emit BorrowRateUpdate(id, average, uint256(end));
        return average;
    }

    /// @dev The average borrow rate since the market's last update, and the new rate at target.
    function _rates(Id id, Market memory market) private view returns (uint256, int256) {
        int256 utilization = market.totalSupplyAssets == 0
            ? int256(0)
            : int256(uint256(market.totalBorrowAssets) * uint256(WAD) / market.totalSupplyAssets);
        int256 span = utilization > TARGET_UTILIZATION ? WAD - TARGET_UTILIZATION : TARGET_UTILIZATION;
        int256 err = (utilization - TARGET_UTILIZATION) * WAD / span;

        int256 start = rateAtTarget[id];
        if (start == 0) return (uint256(_curve(INITIAL_RATE_AT_TARGET, err)), INITIAL_RATE_AT_TARGET);

        int256 speed = ADJUSTMENT_SPEED * err / WAD;
        int256 linearAdaptation = speed * int256(block.timestamp - market.lastUpdate);
        if (linearAdaptation == 0) return (uint256(_curve(start, err)), start);

        // The average of curve(start * exp(speed * t)) over the elapsed time T: curve is linear in
        // the rate, and the trapezoidal rule with two steps gives (r(0) + 2 r(T/2) + r(T)) / 4.
        int256 end = _adapted(start, linearAdaptation);
        int256 middle = _adapted(start, linearAdaptation / 2);
        int256 average = (start + end + 2 * middle) / 4;
        return (uint256(_curve(average, err)), end);
    }

    function _curve(int256 rate, int256 err) private pure returns (int256) {
        int256 coefficient = err < 0 ? WAD - WAD * WAD / CURVE_STEEPNESS : CURVE_STEEPNESS - WAD;
        return (coefficient * err / WAD + WAD) * rate / WAD;
    }

    /// @dev start * exp(linearAdaptation), bounded to [MIN_RATE_AT_TARGET, MAX_RATE_AT_TARGET].
    function _adapted(int256 start, int256 linearAdaptation) private pure returns (int256) {
        int256 rate = start * _exp(linearAdaptation) / WAD;
        if (rate < MIN_RATE_AT_TARGET) return MIN_RATE_AT_TARGET;
        if (rate > MAX_RATE_AT_TARGET) return MAX_RATE_AT_TARGET;
        return rate;
    }

    /// @dev e^x scaled 1e18: x = q ln2 + r with q rounded half toward zero, |r| <= ln2/2, and
    /// e^r ~ 1 + r + r^2/2; then shifted by q.
    function _exp(int256 x) private pure returns (int256) {
        unchecked {
            if (x < LN_WEI) return 0;
            if (x >= EXP_UPPER_BOUND) return EXP_UPPER_VALUE;
            int256 half = x < 0 ? -(LN_2 / 2) : LN_2 / 2;
            int256 q = (x + half) / LN_2;
            int256 r = x - q * LN_2;
            int256 expR = WAD + r + (r * r) / WAD / 2;
            return q >= 0 ? expR << uint256(q) : expR >> uint256(-q);
        }
    }
}
