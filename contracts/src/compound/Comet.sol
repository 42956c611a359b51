// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

import {IERC20Like} from "../common/IERC20Like.sol";

/// @title Comet (devnet)
/// @notice A Compound v3 base-asset pool with the production Comet ABI for suppliers, Comet's
/// interest rate curves, its indexes (scale 1e15) and its accrual rule. Borrowing is the real
/// Comet gesture made devnet-simple: supply the one collateral asset (fixed price; `supplyTo`
/// supplies it for another account, as anyone may), then `withdraw` the base asset beyond your
/// balance; `supply` of the base repays a debt first.
/// Per-second rate parameters are the yearly ones divided by 31,536,000 (truncated), as Comet's
/// constructor does. Rewards accrue in `baseTrackingAccrued` (accrual scale 1e6) for
/// CometRewards, at `baseTrackingSupplySpeed` (scale 1e15, per second) shared pro rata to the
/// principal supplied. Its pause switches are Comet's: `pause` sets five flags at once (only the
/// governor or the pause guardian may), `supply` and `withdraw` revert with `Paused()` while
/// theirs is on, and `is*Paused` read them (the risk guards do).
contract Comet {
    struct UserBasic {
        int104 principal;
        uint64 baseTrackingIndex;
        uint64 baseTrackingAccrued;
    }

    struct Rates {
        uint64 supplyKink;
        uint64 supplyPerYearInterestRateSlopeLow;
        uint64 supplyPerYearInterestRateSlopeHigh;
        uint64 supplyPerYearInterestRateBase;
        uint64 borrowKink;
        uint64 borrowPerYearInterestRateSlopeLow;
        uint64 borrowPerYearInterestRateSlopeHigh;
        uint64 borrowPerYearInterestRateBase;
    }

    uint64 internal constant SECONDS_PER_YEAR = 31_536_000;
    uint64 internal constant BASE_INDEX_SCALE = 1e15;
    uint64 internal constant FACTOR_SCALE = 1e18;
    uint64 internal constant TRACKING_INDEX_SCALE = 1e15;
    uint256 internal constant PRICE_SCALE = 1e8;
    uint8 internal constant PAUSE_SUPPLY_OFFSET = 0;
    uint8 internal constant PAUSE_TRANSFER_OFFSET = 1;
    uint8 internal constant PAUSE_WITHDRAW_OFFSET = 2;
    uint8 internal constant PAUSE_ABSORB_OFFSET = 3;
    uint8 internal constant PAUSE_BUY_OFFSET = 4;

    /// @notice May pause, as the pause guardian may.
    address public immutable governor;
    /// @notice May pause (Comet's emergency role).
    address public immutable pauseGuardian;

    address public immutable baseToken;
    uint256 public immutable baseScale;
    uint256 internal immutable accrualDescaleFactor;
    address public immutable collateralAsset;
    uint256 internal immutable collateralScale;
    /// @notice Collateral price in USD, scaled 1e8 (the base asset is worth 1 USD).
    uint256 public immutable collateralPrice;
    /// @notice Share of the collateral's value that may be borrowed, scaled 1e18.
    uint64 public immutable borrowCollateralFactor;

    uint64 public immutable supplyKink;
    uint64 public immutable supplyPerSecondInterestRateSlopeLow;
    uint64 public immutable supplyPerSecondInterestRateSlopeHigh;
    uint64 public immutable supplyPerSecondInterestRateBase;
    uint64 public immutable borrowKink;
    uint64 public immutable borrowPerSecondInterestRateSlopeLow;
    uint64 public immutable borrowPerSecondInterestRateSlopeHigh;
    uint64 public immutable borrowPerSecondInterestRateBase;
    uint64 public immutable baseTrackingSupplySpeed;
    uint256 public constant trackingIndexScale = TRACKING_INDEX_SCALE;

    uint64 public baseSupplyIndex;
    uint64 public baseBorrowIndex;
    uint64 public trackingSupplyIndex;
    uint40 public lastAccrualTime;
    uint104 public totalSupplyBase;
    uint104 public totalBorrowBase;
    /// @dev One bit per pausable action, at the PAUSE_*_OFFSET positions (Comet's layout).
    uint8 internal pauseFlags;

    mapping(address => UserBasic) public userBasic;
    mapping(address => uint128) public collateralBalanceOf;

    event Supply(address indexed from, address indexed dst, uint256 amount);
    event Withdraw(address indexed src, address indexed to, uint256 amount);
    event SupplyCollateral(address indexed from, address indexed dst, address indexed asset, uint256 amount);
    event WithdrawCollateral(address indexed src, address indexed to, address indexed asset, uint256 amount);
    event PauseAction(bool supplyPaused, bool transferPaused, bool withdrawPaused, bool absorbPaused, bool buyPaused);

    error BadAsset();
    error NotCollateralized();
    error InsufficientReserves();
    error Paused();
    error Unauthorized();

    constructor(
        address baseToken_,
        address collateralAsset_,
        uint256 collateralPrice_,
        uint64 borrowCollateralFactor_,
        Rates memory rates,
        uint64 baseTrackingSupplySpeed_,
        address governor_,
        address pauseGuardian_
    ) {
        governor = governor_;
        pauseGuardian = pauseGuardian_;
        baseToken = baseToken_;
        baseScale = 10 ** IERC20Like(baseToken_).decimals();
        accrualDescaleFactor = baseScale / 1e6;
        collateralAsset = collateralAsset_;
        collateralScale = 10 ** IERC20Like(collateralAsset_).decimals();
        collateralPrice = collateralPrice_;
        borrowCollateralFactor = borrowCollateralFactor_;
        supplyKink = rates.supplyKink;
        supplyPerSecondInterestRateSlopeLow = rates.supplyPerYearInterestRateSlopeLow / SECONDS_PER_YEAR;
        supplyPerSecondInterestRateSlopeHigh = rates.supplyPerYearInterestRateSlopeHigh / SECONDS_PER_YEAR;
        supplyPerSecondInterestRateBase = rates.supplyPerYearInterestRateBase / SECONDS_PER_YEAR;
        borrowKink = rates.borrowKink;
        borrowPerSecondInterestRateSlopeLow = rates.borrowPerYearInterestRateSlopeLow / SECONDS_PER_YEAR;
        borrowPerSecondInterestRateSlopeHigh = rates.borrowPerYearInterestRateSlopeHigh / SECONDS_PER_YEAR;
        borrowPerSecondInterestRateBase = rates.borrowPerYearInterestRateBase / SECONDS_PER_YEAR;
        baseTrackingSupplySpeed = baseTrackingSupplySpeed_;
        baseSupplyIndex = BASE_INDEX_SCALE;
        baseBorrowIndex = BASE_INDEX_SCALE;
        lastAccrualTime = uint40(block.timestamp);
    }

    /* PAUSE */

    /// @notice Sets every pause flag at once; only the governor or the pause guardian.
    function pause(bool supplyPaused, bool transferPaused, bool withdrawPaused, bool absorbPaused, bool buyPaused)
        external
    {
        if (msg.sender != governor && msg.sender != pauseGuardian) revert Unauthorized();
        pauseFlags = uint8(0) | (_flag(supplyPaused) << PAUSE_SUPPLY_OFFSET)
            | (_flag(transferPaused) << PAUSE_TRANSFER_OFFSET) | (_flag(withdrawPaused) << PAUSE_WITHDRAW_OFFSET)
            | (_flag(absorbPaused) << PAUSE_ABSORB_OFFSET) | (_flag(buyPaused) << PAUSE_BUY_OFFSET);
        emit PauseAction(supplyPaused, transferPaused, withdrawPaused, absorbPaused, buyPaused);
    }

    /// @notice Whether supply (of the base asset or the collateral) is paused.
    function isSupplyPaused() public view returns (bool) {
        return _paused(PAUSE_SUPPLY_OFFSET);
    }

    /// @notice Whether transfers are paused.
    function isTransferPaused() public view returns (bool) {
        return _paused(PAUSE_TRANSFER_OFFSET);
    }

    /// @notice Whether withdrawals (of the base asset or the collateral) are paused.
    function isWithdrawPaused() public view returns (bool) {
        return _paused(PAUSE_WITHDRAW_OFFSET);
    }

    /// @notice Whether absorbs (liquidations) are paused.
    function isAbsorbPaused() public view returns (bool) {
        return _paused(PAUSE_ABSORB_OFFSET);
    }

    /// @notice Whether buying collateral is paused.
    function isBuyPaused() public view returns (bool) {
        return _paused(PAUSE_BUY_OFFSET);
    }

    function _flag(bool on) internal pure returns (uint8) {
        return on ? 1 : 0;
    }

    function _paused(uint8 offset) internal view returns (bool) {
        return pauseFlags & (uint8(1) << offset) != 0;
    }

    /* RATES */

    /// @notice The per-second supply rate (scale 1e18) at `utilization` (scale 1e18).
    function getSupplyRate(uint256 utilization) public view returns (uint64) {
        if (utilization <= supplyKink) {
            return uint64(supplyPerSecondInterestRateBase + _mulFactor(supplyPerSecondInterestRateSlopeLow, utilization));
        }
        return uint64(
            supplyPerSecondInterestRateBase + _mulFactor(supplyPerSecondInterestRateSlopeLow, supplyKink)
                + _mulFactor(supplyPerSecondInterestRateSlopeHigh, utilization - supplyKink)
        );
    }

    /// @notice The per-second borrow rate (scale 1e18) at `utilization` (scale 1e18).
    function getBorrowRate(uint256 utilization) public view returns (uint64) {
        if (utilization <= borrowKink) {
            return uint64(borrowPerSecondInterestRateBase + _mulFactor(borrowPerSecondInterestRateSlopeLow, utilization));
        }
        return uint64(
            borrowPerSecondInterestRateBase + _mulFactor(borrowPerSecondInterestRateSlopeLow, borrowKink)
                + _mulFactor(borrowPerSecondInterestRateSlopeHigh, utilization - borrowKink)
        );
    }

    /// @notice totalBorrow / totalSupply (present values at the stored indexes), scale 1e18.
    function getUtilization() public view returns (uint256) {
        uint256 supplied = _presentValueSupply(baseSupplyIndex, totalSupplyBase);
        if (supplied == 0) return 0;
        return _presentValueBorrow(baseBorrowIndex, totalBorrowBase) * FACTOR_SCALE / supplied;
    }

    /* ACCRUAL */

    /// @notice Accrues interest, then settles `account`'s reward tracking.
    function accrueAccount(address account) external {
        _accrue();
        UserBasic memory basic = userBasic[account];
        _updateBasePrincipal(account, basic, basic.principal);
    }

    /// @notice The supply and borrow indexes as they would be after accrual now.
    function _accruedIndices() internal view returns (uint64 supplyIndex, uint64 borrowIndex, uint64 trackingIndex) {
        supplyIndex = baseSupplyIndex;
        borrowIndex = baseBorrowIndex;
        trackingIndex = trackingSupplyIndex;
        uint256 elapsed = block.timestamp - lastAccrualTime;
        if (elapsed > 0) {
            uint256 utilization = getUtilization();
            supplyIndex += uint64(_mulFactor(supplyIndex, getSupplyRate(utilization) * elapsed));
            borrowIndex += uint64(_mulFactor(borrowIndex, getBorrowRate(utilization) * elapsed));
            if (totalSupplyBase > 0) {
                trackingIndex += uint64(baseTrackingSupplySpeed * elapsed * baseScale / totalSupplyBase);
            }
        }
    }

    function _accrue() internal {
        if (block.timestamp == lastAccrualTime) return;
        (baseSupplyIndex, baseBorrowIndex, trackingSupplyIndex) = _accruedIndices();
        lastAccrualTime = uint40(block.timestamp);
    }

    /* BALANCES */

    /// @notice The base asset `account` has supplied, with interest to now.
    function balanceOf(address account) external view returns (uint256) {
        (uint64 supplyIndex,,) = _accruedIndices();
        int104 principal = userBasic[account].principal;
        return principal > 0 ? _presentValueSupply(supplyIndex, uint104(principal)) : 0;
    }

    /// @notice The base asset `account` owes, with interest to now.
    function borrowBalanceOf(address account) public view returns (uint256) {
        (, uint64 borrowIndex,) = _accruedIndices();
        int104 principal = userBasic[account].principal;
        return principal < 0 ? _presentValueBorrow(borrowIndex, uint104(-principal)) : 0;
    }

    /// @notice Everything supplied, with interest to now.
    function totalSupply() external view returns (uint256) {
        (uint64 supplyIndex,,) = _accruedIndices();
        return _presentValueSupply(supplyIndex, totalSupplyBase);
    }

    /// @notice Everything borrowed, with interest to now.
    function totalBorrow() external view returns (uint256) {
        (, uint64 borrowIndex,) = _accruedIndices();
        return _presentValueBorrow(borrowIndex, totalBorrowBase);
    }

    /// @notice Reward units (scale 1e6) `account` has accrued up to its last settlement.
    function baseTrackingAccrued(address account) external view returns (uint64) {
        return userBasic[account].baseTrackingAccrued;
    }

    /// @notice The base asset held by the pool beyond what suppliers are owed, net of debts.
    function getReserves() external view returns (int256) {
        (uint64 supplyIndex, uint64 borrowIndex,) = _accruedIndices();
        uint256 balance = IERC20Like(baseToken).balanceOf(address(this));
        return int256(balance) - int256(_presentValueSupply(supplyIndex, totalSupplyBase))
            + int256(_presentValueBorrow(borrowIndex, totalBorrowBase));
    }

    /* SUPPLY AND WITHDRAW */

    /// @notice Supplies `amount` of `asset` (the base asset or the collateral) for the caller.
    /// The base asset repays the caller's debt first; `type(uint256).max` repays all of it.
    function supply(address asset, uint256 amount) external {
        _supply(msg.sender, msg.sender, asset, amount);
    }

    /// @notice Supplies the caller's `amount` of `asset` for `dst`, as Comet lets anyone do:
    /// collateral supplied to another account lets that account borrow against it.
    function supplyTo(address dst, address asset, uint256 amount) external {
        _supply(msg.sender, dst, asset, amount);
    }

    function _supply(address from, address dst, address asset, uint256 amount) internal {
        if (isSupplyPaused()) revert Paused();
        if (asset == collateralAsset) {
            _pullIn(asset, from, amount);
            collateralBalanceOf[dst] += uint128(amount);
            emit SupplyCollateral(from, dst, asset, amount);
            return;
        }
        if (asset != baseToken) revert BadAsset();
        _accrue();
        if (amount == type(uint256).max) amount = borrowBalanceOf(dst);
        _pullIn(asset, from, amount);
        UserBasic memory basic = userBasic[dst];
        int256 balance = _presentValue(basic.principal) + int256(amount);
        _updateBasePrincipal(dst, basic, _principalValue(balance));
        emit Supply(from, dst, amount);
    }

    /// @notice Withdraws `amount` of `asset` to the caller; beyond the caller's base balance it
    /// borrows (against the collateral). `type(uint256).max` withdraws the whole base balance.
    function withdraw(address asset, uint256 amount) external {
        if (isWithdrawPaused()) revert Paused();
        if (asset == collateralAsset) {
            collateralBalanceOf[msg.sender] -= uint128(amount);
            _accrue();
            if (!_isCollateralized(msg.sender)) revert NotCollateralized();
            require(IERC20Like(asset).transfer(msg.sender, amount), "transfer failed");
            emit WithdrawCollateral(msg.sender, msg.sender, asset, amount);
            return;
        }
        if (asset != baseToken) revert BadAsset();
        _accrue();
        UserBasic memory basic = userBasic[msg.sender];
        if (amount == type(uint256).max) {
            amount = basic.principal > 0 ? _presentValueSupply(baseSupplyIndex, uint104(basic.principal)) : 0;
        }
        int256 balance = _presentValue(basic.principal) - int256(amount);
        _updateBasePrincipal(msg.sender, basic, _principalValue(balance));
        if (balance < 0 && !_isCollateralized(msg.sender)) revert NotCollateralized();
        require(IERC20Like(asset).transfer(msg.sender, amount), "transfer failed");
        emit Withdraw(msg.sender, msg.sender, amount);
    }

    /* INTERNALS */

    function _pullIn(address asset, address from, uint256 amount) internal {
        require(IERC20Like(asset).transferFrom(from, address(this), amount), "transferFrom failed");
    }

    function _isCollateralized(address account) internal view returns (bool) {
        int104 principal = userBasic[account].principal;
        if (principal >= 0) return true;
        uint256 debt = _presentValueBorrow(baseBorrowIndex, uint104(-principal));
        uint256 collateralUsd = uint256(collateralBalanceOf[account]) * collateralPrice / collateralScale;
        uint256 borrowableUsd = collateralUsd * borrowCollateralFactor / FACTOR_SCALE;
        return debt * PRICE_SCALE / baseScale <= borrowableUsd;
    }

    /// @dev Comet's updateBasePrincipal: settles reward tracking, then moves the totals.
    function _updateBasePrincipal(address account, UserBasic memory basic, int104 principalNew) internal {
        int104 principal = basic.principal;
        basic.principal = principalNew;
        if (principal >= 0) {
            uint256 indexDelta = uint256(trackingSupplyIndex - basic.baseTrackingIndex);
            basic.baseTrackingAccrued += uint64(uint104(principal) * indexDelta / TRACKING_INDEX_SCALE / accrualDescaleFactor);
        }
        basic.baseTrackingIndex = trackingSupplyIndex;
        (uint104 repay, uint104 supplied) = _repayAndSupply(principal, principalNew);
        (uint104 withdrawn, uint104 borrowed) = _withdrawAndBorrow(principal, principalNew);
        totalSupplyBase = totalSupplyBase + supplied - withdrawn;
        totalBorrowBase = totalBorrowBase + borrowed - repay;
        userBasic[account] = basic;
    }

    function _repayAndSupply(int104 oldP, int104 newP) internal pure returns (uint104, uint104) {
        if (newP < oldP) return (0, 0);
        if (newP <= 0) return (uint104(newP - oldP), 0);
        if (oldP >= 0) return (0, uint104(newP - oldP));
        return (uint104(-oldP), uint104(newP));
    }

    function _withdrawAndBorrow(int104 oldP, int104 newP) internal pure returns (uint104, uint104) {
        if (newP >= oldP) return (0, 0);
        if (newP >= 0) return (uint104(oldP - newP), 0);
        if (oldP <= 0) return (0, uint104(oldP - newP));
        return (uint104(oldP), uint104(-newP));
    }

    function _presentValue(int104 principal) internal view returns (int256) {
        if (principal >= 0) return int256(_presentValueSupply(baseSupplyIndex, uint104(principal)));
        return -int256(_presentValueBorrow(baseBorrowIndex, uint104(-principal)));
    }

    function _principalValue(int256 presentValue) internal view returns (int104) {
        if (presentValue >= 0) return int104(int256(uint256(presentValue) * BASE_INDEX_SCALE / baseSupplyIndex));
        uint256 owed = uint256(-presentValue);
        return -int104(int256((owed * BASE_INDEX_SCALE + baseBorrowIndex - 1) / baseBorrowIndex));
    }

    function _presentValueSupply(uint64 index, uint104 principal) internal pure returns (uint256) {
        return uint256(principal) * index / BASE_INDEX_SCALE;
    }

    function _presentValueBorrow(uint64 index, uint104 principal) internal pure returns (uint256) {
        return uint256(principal) * index / BASE_INDEX_SCALE;
    }

    function _mulFactor(uint256 n, uint256 factor) internal pure returns (uint256) {
        return n * factor / FACTOR_SCALE;
    }
}
