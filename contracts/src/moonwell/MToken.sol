// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

import {MinimalERC20} from "../common/MinimalERC20.sol";
import {IERC20Like} from "../common/IERC20Like.sol";
import {JumpRateModel} from "./JumpRateModel.sol";
import {Comptroller} from "./Comptroller.sol";

/// @title MToken (devnet)
/// @notice A Moonwell (Compound v2) market with the production mToken ABI and Compound v2's
/// accrual and exchange-rate math, per second. Functions return 0 on success, like the real ones,
/// and revert on failure; `mint` asks the Comptroller first (`mintAllowed`), so the pause
/// guardian can stop supplying as on Moonwell. Borrowing is devnet-simple: deposit the one collateral asset (fixed
/// price), then `borrow` up to its value times the collateral factor; `repayBorrow` repays.
contract MToken is MinimalERC20 {
    struct BorrowSnapshot {
        uint256 principal;
        uint256 interestIndex;
    }

    uint256 internal constant BORROW_RATE_MAX_MANTISSA = 0.0005e16; // per second, as Moonwell
    uint256 internal constant PRICE_SCALE = 1e8;

    address public immutable underlying;
    address public immutable admin;
    /// @notice Where the pause guardian's switch on supplying lives (`mintGuardianPaused`).
    Comptroller public immutable comptroller;
    uint256 internal immutable initialExchangeRateMantissa;
    address public immutable collateralAsset;
    uint256 internal immutable collateralScale;
    uint256 internal immutable underlyingScale;
    /// @notice Collateral price in USD scaled 1e8 (the underlying is worth 1 USD).
    uint256 public immutable collateralPrice;
    /// @notice Share of the collateral's value that may be borrowed, scaled 1e18.
    uint256 public immutable collateralFactorMantissa;

    JumpRateModel public interestRateModel;
    uint256 public reserveFactorMantissa;
    uint256 public accrualBlockTimestamp;
    uint256 public borrowIndex;
    uint256 public totalBorrows;
    uint256 public totalReserves;

    mapping(address => BorrowSnapshot) internal accountBorrows;
    mapping(address => uint256) public collateralBalanceOf;

    event AccrueInterest(uint256 cashPrior, uint256 interestAccumulated, uint256 borrowIndex, uint256 totalBorrows);
    event Mint(address minter, uint256 mintAmount, uint256 mintTokens);
    event Redeem(address redeemer, uint256 redeemAmount, uint256 redeemTokens);
    event Borrow(address borrower, uint256 borrowAmount, uint256 accountBorrows, uint256 totalBorrows);
    event RepayBorrow(address payer, address borrower, uint256 repayAmount, uint256 accountBorrows, uint256 totalBorrows);

    error NotAdmin();
    error BorrowRateTooHigh(uint256 rate);
    error InsufficientCash();
    error NotCollateralized();

    constructor(
        address underlying_,
        Comptroller comptroller_,
        JumpRateModel interestRateModel_,
        uint256 initialExchangeRateMantissa_,
        uint256 reserveFactorMantissa_,
        address collateralAsset_,
        uint256 collateralPrice_,
        uint256 collateralFactorMantissa_,
        string memory name_,
        string memory symbol_
    ) MinimalERC20(name_, symbol_, 8) {
        underlying = underlying_;
        admin = msg.sender;
        comptroller = comptroller_;
        interestRateModel = interestRateModel_;
        initialExchangeRateMantissa = initialExchangeRateMantissa_;
        reserveFactorMantissa = reserveFactorMantissa_;
        collateralAsset = collateralAsset_;
        collateralScale = 10 ** IERC20Like(collateralAsset_).decimals();
        underlyingScale = 10 ** IERC20Like(underlying_).decimals();
        collateralPrice = collateralPrice_;
        collateralFactorMantissa = collateralFactorMantissa_;
        accrualBlockTimestamp = block.timestamp;
        borrowIndex = 1e18;
    }

    /* VIEWS */

    /// @notice The underlying the market holds.
    function getCash() public view returns (uint256) {
        return IERC20Like(underlying).balanceOf(address(this));
    }

    /// @notice (cash + borrows - reserves) / totalSupply at the last accrual, scaled 1e18.
    function exchangeRateStored() public view returns (uint256) {
        if (totalSupply == 0) return initialExchangeRateMantissa;
        return (getCash() + totalBorrows - totalReserves) * 1e18 / totalSupply;
    }

    /// @notice The per-second borrow rate now, scaled 1e18.
    function borrowRatePerTimestamp() external view returns (uint256) {
        return interestRateModel.getBorrowRate(getCash(), totalBorrows, totalReserves);
    }

    /// @notice The per-second supply rate now, scaled 1e18.
    function supplyRatePerTimestamp() external view returns (uint256) {
        return interestRateModel.getSupplyRate(getCash(), totalBorrows, totalReserves, reserveFactorMantissa);
    }

    /// @notice What `account` owes at the last accrual.
    function borrowBalanceStored(address account) public view returns (uint256) {
        BorrowSnapshot memory snapshot = accountBorrows[account];
        if (snapshot.principal == 0) return 0;
        return snapshot.principal * borrowIndex / snapshot.interestIndex;
    }

    /// @notice (error, mToken balance, borrow balance, exchange rate), as Compound v2.
    function getAccountSnapshot(address account) external view returns (uint256, uint256, uint256, uint256) {
        return (0, balanceOf[account], borrowBalanceStored(account), exchangeRateStored());
    }

    /* ACCRUING */

    /// @notice Accrues interest to now; returns 0.
    function accrueInterest() public returns (uint256) {
        uint256 currentTimestamp = block.timestamp;
        if (accrualBlockTimestamp == currentTimestamp) return 0;
        uint256 cashPrior = getCash();
        uint256 borrowsPrior = totalBorrows;
        uint256 reservesPrior = totalReserves;
        uint256 borrowIndexPrior = borrowIndex;
        uint256 borrowRate = interestRateModel.getBorrowRate(cashPrior, borrowsPrior, reservesPrior);
        if (borrowRate > BORROW_RATE_MAX_MANTISSA) revert BorrowRateTooHigh(borrowRate);
        uint256 simpleInterestFactor = borrowRate * (currentTimestamp - accrualBlockTimestamp);
        uint256 interestAccumulated = simpleInterestFactor * borrowsPrior / 1e18;
        totalBorrows = interestAccumulated + borrowsPrior;
        totalReserves = reserveFactorMantissa * interestAccumulated / 1e18 + reservesPrior;
        borrowIndex = simpleInterestFactor * borrowIndexPrior / 1e18 + borrowIndexPrior;
        accrualBlockTimestamp = currentTimestamp;
        emit AccrueInterest(cashPrior, interestAccumulated, borrowIndex, totalBorrows);
        return 0;
    }

    /// @notice Accrues, then returns the exchange rate.
    function exchangeRateCurrent() external returns (uint256) {
        accrueInterest();
        return exchangeRateStored();
    }

    /// @notice Accrues, then returns `owner`'s underlying balance.
    function balanceOfUnderlying(address owner) external returns (uint256) {
        accrueInterest();
        return balanceOf[owner] * exchangeRateStored() / 1e18;
    }

    /// @notice Accrues, then returns the total borrows.
    function totalBorrowsCurrent() external returns (uint256) {
        accrueInterest();
        return totalBorrows;
    }

    /// @notice Accrues, then returns what `account` owes.
    function borrowBalanceCurrent(address account) external returns (uint256) {
        accrueInterest();
        return borrowBalanceStored(account);
    }

    /* SUPPLYING */

    /// @notice Supplies `mintAmount` of the underlying for mTokens; returns 0.
    function mint(uint256 mintAmount) external returns (uint256) {
        require(comptroller.mintAllowed(address(this), msg.sender, mintAmount) == 0, "mint not allowed");
        accrueInterest();
        uint256 exchangeRate = exchangeRateStored();
        require(IERC20Like(underlying).transferFrom(msg.sender, address(this), mintAmount), "transferFrom failed");
        uint256 mintTokens = mintAmount * 1e18 / exchangeRate;
        _mint(msg.sender, mintTokens);
        emit Mint(msg.sender, mintAmount, mintTokens);
        return 0;
    }

    /// @notice Redeems mTokens for exactly `redeemAmount` of the underlying; returns 0.
    /// @dev The mTokens burnt are rounded up.
    function redeemUnderlying(uint256 redeemAmount) external returns (uint256) {
        accrueInterest();
        uint256 exchangeRate = exchangeRateStored();
        uint256 redeemTokens = (redeemAmount * 1e18 + exchangeRate - 1) / exchangeRate;
        _redeem(redeemTokens, redeemAmount);
        return 0;
    }

    /// @notice Redeems `redeemTokens` mTokens for the underlying; returns 0.
    function redeem(uint256 redeemTokens) external returns (uint256) {
        accrueInterest();
        _redeem(redeemTokens, redeemTokens * exchangeRateStored() / 1e18);
        return 0;
    }

    function _redeem(uint256 redeemTokens, uint256 redeemAmount) internal {
        if (getCash() < redeemAmount) revert InsufficientCash();
        _burn(msg.sender, redeemTokens);
        require(IERC20Like(underlying).transfer(msg.sender, redeemAmount), "transfer failed");
        emit Redeem(msg.sender, redeemAmount, redeemTokens);
    }

    /* BORROWING (devnet-simple) */

    /// @notice Deposits `amount` of the collateral asset for the caller.
    function depositCollateral(uint256 amount) external {
        require(IERC20Like(collateralAsset).transferFrom(msg.sender, address(this), amount), "transferFrom failed");
        collateralBalanceOf[msg.sender] += amount;
    }

    /// @notice Withdraws `amount` of the caller's collateral if what it owes stays covered.
    function withdrawCollateral(uint256 amount) external {
        accrueInterest();
        collateralBalanceOf[msg.sender] -= amount;
        if (!_isCollateralized(msg.sender)) revert NotCollateralized();
        require(IERC20Like(collateralAsset).transfer(msg.sender, amount), "transfer failed");
    }

    /// @notice Borrows `borrowAmount` of the underlying against the caller's collateral; returns 0.
    function borrow(uint256 borrowAmount) external returns (uint256) {
        accrueInterest();
        if (getCash() < borrowAmount) revert InsufficientCash();
        uint256 owed = borrowBalanceStored(msg.sender) + borrowAmount;
        accountBorrows[msg.sender] = BorrowSnapshot(owed, borrowIndex);
        totalBorrows += borrowAmount;
        if (!_isCollateralized(msg.sender)) revert NotCollateralized();
        require(IERC20Like(underlying).transfer(msg.sender, borrowAmount), "transfer failed");
        emit Borrow(msg.sender, borrowAmount, owed, totalBorrows);
        return 0;
    }

    /// @notice Repays `repayAmount` of the caller's debt (`type(uint256).max`: all); returns 0.
    function repayBorrow(uint256 repayAmount) external returns (uint256) {
        accrueInterest();
        uint256 owed = borrowBalanceStored(msg.sender);
        if (repayAmount == type(uint256).max || repayAmount > owed) repayAmount = owed;
        require(IERC20Like(underlying).transferFrom(msg.sender, address(this), repayAmount), "transferFrom failed");
        accountBorrows[msg.sender] = BorrowSnapshot(owed - repayAmount, borrowIndex);
        totalBorrows = totalBorrows > repayAmount ? totalBorrows - repayAmount : 0;
        emit RepayBorrow(msg.sender, msg.sender, repayAmount, owed - repayAmount, totalBorrows);
        return 0;
    }

    /* ADMIN */

    /// @notice Sets the reserve factor (accrues first).
    function _setReserveFactor(uint256 newReserveFactorMantissa) external returns (uint256) {
        if (msg.sender != admin) revert NotAdmin();
        accrueInterest();
        reserveFactorMantissa = newReserveFactorMantissa;
        return 0;
    }

    function _isCollateralized(address account) internal view returns (bool) {
        uint256 owedUsd = borrowBalanceStored(account) * PRICE_SCALE / underlyingScale;
        uint256 collateralUsd = collateralBalanceOf[account] * collateralPrice / collateralScale;
        return owedUsd <= collateralUsd * collateralFactorMantissa / 1e18;
    }
}
