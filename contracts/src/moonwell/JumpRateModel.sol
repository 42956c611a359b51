// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

/// @title JumpRateModel (devnet)
/// @notice Moonwell's timestamp-based jump rate model (Compound v2's): per-second rates scaled
/// 1e18, each the yearly parameter divided by 31,536,000 (truncated).
/// borrow = base + multiplier * u up to the kink; above it, base + multiplier * kink +
/// jumpMultiplier * (u - kink); supply = u * borrow * (1 - reserveFactor);
/// u = borrows / (cash + borrows - reserves).
contract JumpRateModel {
    uint256 public constant timestampsPerYear = 31_536_000;
    bool public constant isInterestRateModel = true;

    uint256 public immutable baseRatePerTimestamp;
    uint256 public immutable multiplierPerTimestamp;
    uint256 public immutable jumpMultiplierPerTimestamp;
    uint256 public immutable kink;

    event NewInterestParams(
        uint256 baseRatePerTimestamp, uint256 multiplierPerTimestamp, uint256 jumpMultiplierPerTimestamp, uint256 kink
    );

    constructor(uint256 baseRatePerYear, uint256 multiplierPerYear, uint256 jumpMultiplierPerYear, uint256 kink_) {
        baseRatePerTimestamp = baseRatePerYear * 1e18 / timestampsPerYear / 1e18;
        multiplierPerTimestamp = multiplierPerYear * 1e18 / timestampsPerYear / 1e18;
        jumpMultiplierPerTimestamp = jumpMultiplierPerYear * 1e18 / timestampsPerYear / 1e18;
        kink = kink_;
        emit NewInterestParams(baseRatePerTimestamp, multiplierPerTimestamp, jumpMultiplierPerTimestamp, kink);
    }

    /// @notice borrows / (cash + borrows - reserves), scaled 1e18 (0 without borrows).
    function utilizationRate(uint256 cash, uint256 borrows, uint256 reserves) public pure returns (uint256) {
        if (borrows == 0) return 0;
        return borrows * 1e18 / (cash + borrows - reserves);
    }

    /// @notice The per-second borrow rate, scaled 1e18.
    function getBorrowRate(uint256 cash, uint256 borrows, uint256 reserves) public view returns (uint256) {
        uint256 util = utilizationRate(cash, borrows, reserves);
        if (util <= kink) return util * multiplierPerTimestamp / 1e18 + baseRatePerTimestamp;
        uint256 normalRate = kink * multiplierPerTimestamp / 1e18 + baseRatePerTimestamp;
        return (util - kink) * jumpMultiplierPerTimestamp / 1e18 + normalRate;
    }

    /// @notice The per-second supply rate, scaled 1e18.
    function getSupplyRate(uint256 cash, uint256 borrows, uint256 reserves, uint256 reserveFactorMantissa)
        public
        view
        returns (uint256)
    {
        uint256 oneMinusReserveFactor = 1e18 - reserveFactorMantissa;
        uint256 rateToPool = getBorrowRate(cash, borrows, reserves) * oneMinusReserveFactor / 1e18;
        return utilizationRate(cash, borrows, reserves) * rateToPool / 1e18;
    }
}
