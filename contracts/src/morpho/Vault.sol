// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

import {IMorpho, Id, MarketParams, Market, Position} from "@morpho-org/morpho-blue/src/interfaces/IMorpho.sol";
import {MarketParamsLib} from "@morpho-org/morpho-blue/src/libraries/MarketParamsLib.sol";
import {MathLib} from "@morpho-org/morpho-blue/src/libraries/MathLib.sol";
import {SharesMathLib} from "@morpho-org/morpho-blue/src/libraries/SharesMathLib.sol";
import {MorphoBalancesLib} from "@morpho-org/morpho-blue/src/libraries/periphery/MorphoBalancesLib.sol";
import {MinimalERC20} from "../common/MinimalERC20.sol";
import {IERC20Like} from "../common/IERC20Like.sol";

/// @title Vault (devnet): an ERC-4626 vault over Morpho Blue markets, MetaMorpho-like.
/// @notice Its assets are its supply in each of its markets (`marketIds()`, in withdraw-queue
/// order), valued with Morpho's own accrual view math (`expectedSupplyAssets`); it keeps no idle
/// assets and charges no fee (`fee()` is 0). Shares have 18 decimals (a 10^12 virtual offset
/// over the 6-decimal asset, as MetaMorpho).
///
/// ALLOCATION RULE (an adapter's rate quote depends on it):
/// - A deposit of x is split over the markets in proportion to the vault's current supply
///   assets in each: market i gets floor(x * s_i / S), S = sum of s_i, and the rounding
///   remainder goes to the first market. If the vault holds nothing, all of x goes to the first
///   market.
/// - A withdrawal of x first accrues every market, then takes from each market i
///   min(floor(x * s_i / S), s_i, liquidity_i), liquidity_i = totalSupplyAssets_i -
///   totalBorrowAssets_i; then it takes what is still missing from the markets in order, each
///   up to min(s_i, liquidity_i) in all. If the markets cannot pay x, it reverts.
/// The owner may `reallocate` the supply between markets (used to seed the devnet).
contract Vault is MinimalERC20 {
    using MathLib for uint256;
    using SharesMathLib for uint256;
    using MarketParamsLib for MarketParams;
    using MorphoBalancesLib for IMorpho;

    uint256 internal constant DECIMALS_OFFSET = 12;
    uint256 internal constant VIRTUAL_SHARES = 10 ** DECIMALS_OFFSET;

    IMorpho public immutable MORPHO;
    address public immutable asset;
    address public owner;
    MarketParams[] internal _markets;

    event Deposit(address indexed sender, address indexed owner, uint256 assets, uint256 shares);
    event Withdraw(
        address indexed sender, address indexed receiver, address indexed owner, uint256 assets, uint256 shares
    );
    event MarketAdded(Id indexed id);
    event Reallocated(uint256[] supplyAssets);

    error NotOwner(address caller);
    error WrongMarket(Id id);
    error NotEnoughLiquidity(uint256 missing);
    error ZeroAmount();
    error BadAllocation();

    constructor(IMorpho morpho, address asset_, string memory name_, string memory symbol_)
        MinimalERC20(name_, symbol_, 18)
    {
        MORPHO = morpho;
        asset = asset_;
        owner = msg.sender;
        IERC20Like(asset_).approve(address(morpho), type(uint256).max);
    }

    /* MARKETS */

    /// @notice Adds a created Morpho market lending the vault's asset, at the end of the queues.
    function addMarket(MarketParams memory marketParams) external {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        Id id = marketParams.id();
        if (marketParams.loanToken != asset || MORPHO.market(id).lastUpdate == 0) revert WrongMarket(id);
        _markets.push(marketParams);
        emit MarketAdded(id);
    }

    /// @notice The ids of the vault's markets, in withdraw-queue order.
    function marketIds() external view returns (bytes32[] memory ids) {
        ids = new bytes32[](_markets.length);
        for (uint256 i = 0; i < _markets.length; ++i) {
            ids[i] = Id.unwrap(_markets[i].id());
        }
    }

    /// @notice The market at `index` of the withdraw queue (MetaMorpho's getter).
    function withdrawQueue(uint256 index) external view returns (Id) {
        return _markets[index].id();
    }

    /// @notice The number of markets (MetaMorpho's getter).
    function withdrawQueueLength() external view returns (uint256) {
        return _markets.length;
    }

    /// @notice The market at `index` of the supply queue: the same order as the withdraw queue.
    function supplyQueue(uint256 index) external view returns (Id) {
        return _markets[index].id();
    }

    /// @notice The number of markets in the supply queue.
    function supplyQueueLength() external view returns (uint256) {
        return _markets.length;
    }

    /// @notice The vault's performance fee (scaled 1e18): none on the devnet.
    function fee() external pure returns (uint96) {
        return 0;
    }

    /* ERC-4626 VIEWS */

    /// @notice The vault's supply assets in all its markets, interest included.
    function totalAssets() public view returns (uint256 assets) {
        for (uint256 i = 0; i < _markets.length; ++i) {
            assets += MORPHO.expectedSupplyAssets(_markets[i], address(this));
        }
    }

    function convertToShares(uint256 assets) public view returns (uint256) {
        return assets.mulDivDown(totalSupply + VIRTUAL_SHARES, totalAssets() + 1);
    }

    function convertToAssets(uint256 shares) public view returns (uint256) {
        return shares.mulDivDown(totalAssets() + 1, totalSupply + VIRTUAL_SHARES);
    }

    function previewDeposit(uint256 assets) public view returns (uint256) {
        return convertToShares(assets);
    }

    function previewMint(uint256 shares) public view returns (uint256) {
        return shares.mulDivUp(totalAssets() + 1, totalSupply + VIRTUAL_SHARES);
    }

    function previewWithdraw(uint256 assets) public view returns (uint256) {
        return assets.mulDivUp(totalSupply + VIRTUAL_SHARES, totalAssets() + 1);
    }

    function previewRedeem(uint256 shares) public view returns (uint256) {
        return convertToAssets(shares);
    }

    function maxDeposit(address) external pure returns (uint256) {
        return type(uint256).max;
    }

    function maxMint(address) external pure returns (uint256) {
        return type(uint256).max;
    }

    /// @notice What `holder` can withdraw now: its assets, capped by the markets' liquidity.
    function maxWithdraw(address holder) public view returns (uint256) {
        uint256 assets = convertToAssets(balanceOf[holder]);
        uint256 liquid = _withdrawable();
        return assets < liquid ? assets : liquid;
    }

    /// @notice The shares `holder` can redeem now.
    function maxRedeem(address holder) external view returns (uint256) {
        uint256 shares = balanceOf[holder];
        uint256 liquid = _withdrawable().mulDivDown(totalSupply + VIRTUAL_SHARES, totalAssets() + 1);
        return shares < liquid ? shares : liquid;
    }

    /* ERC-4626 ACTIONS */

    function deposit(uint256 assets, address receiver) external returns (uint256 shares) {
        shares = previewDeposit(assets);
        _enter(assets, shares, receiver);
    }

    function mint(uint256 shares, address receiver) external returns (uint256 assets) {
        assets = previewMint(shares);
        _enter(assets, shares, receiver);
    }

    function withdraw(uint256 assets, address receiver, address holder) external returns (uint256 shares) {
        shares = previewWithdraw(assets);
        _exit(assets, shares, receiver, holder);
    }

    function redeem(uint256 shares, address receiver, address holder) external returns (uint256 assets) {
        assets = previewRedeem(shares);
        _exit(assets, shares, receiver, holder);
    }

    /// @notice Moves the vault's supply so that market i holds `targets[i]`; a target of
    /// `type(uint256).max` takes whatever the other moves freed. Owner only.
    function reallocate(uint256[] calldata targets) external {
        if (msg.sender != owner || targets.length != _markets.length) revert BadAllocation();
        uint256 freed;
        uint256[] memory current = new uint256[](_markets.length);
        for (uint256 i = 0; i < _markets.length; ++i) {
            MORPHO.accrueInterest(_markets[i]);
            current[i] = _supplyAssets(i);
            if (targets[i] < current[i]) {
                freed += _withdrawFrom(i, current[i] - targets[i], current[i]);
            }
        }
        for (uint256 i = 0; i < _markets.length; ++i) {
            if (targets[i] <= current[i]) continue;
            uint256 amount = targets[i] == type(uint256).max ? freed : targets[i] - current[i];
            if (amount > freed) revert BadAllocation();
            freed -= amount;
            if (amount > 0) MORPHO.supply(_markets[i], amount, 0, address(this), "");
        }
        if (freed != 0) revert BadAllocation();
        emit Reallocated(targets);
    }

    /* INTERNALS */

    function _enter(uint256 assets, uint256 shares, address receiver) internal {
        if (assets == 0 || shares == 0) revert ZeroAmount();
        uint256[] memory parts = _depositSplit(assets);
        require(IERC20Like(asset).transferFrom(msg.sender, address(this), assets), "transferFrom failed");
        _mint(receiver, shares);
        for (uint256 i = 0; i < parts.length; ++i) {
            if (parts[i] > 0) MORPHO.supply(_markets[i], parts[i], 0, address(this), "");
        }
        emit Deposit(msg.sender, receiver, assets, shares);
    }

    function _exit(uint256 assets, uint256 shares, address receiver, address holder) internal {
        if (assets == 0 || shares == 0) revert ZeroAmount();
        if (msg.sender != holder) _spendAllowance(holder, msg.sender, shares);
        _burn(holder, shares);
        _divest(assets);
        require(IERC20Like(asset).transfer(receiver, assets), "transfer failed");
        emit Withdraw(msg.sender, receiver, holder, assets, shares);
    }

    /// @dev The deposit split of the allocation rule.
    function _depositSplit(uint256 assets) internal view returns (uint256[] memory parts) {
        uint256 n = _markets.length;
        parts = new uint256[](n);
        uint256[] memory held = new uint256[](n);
        uint256 total;
        for (uint256 i = 0; i < n; ++i) {
            held[i] = MORPHO.expectedSupplyAssets(_markets[i], address(this));
            total += held[i];
        }
        if (total == 0) {
            parts[0] = assets;
            return parts;
        }
        uint256 given;
        for (uint256 i = 0; i < n; ++i) {
            parts[i] = assets.mulDivDown(held[i], total);
            given += parts[i];
        }
        parts[0] += assets - given;
    }

    /// @dev The withdrawal of the allocation rule.
    function _divest(uint256 assets) internal {
        uint256 n = _markets.length;
        uint256[] memory held = new uint256[](n);
        uint256[] memory available = new uint256[](n);
        uint256[] memory take = new uint256[](n);
        uint256 total;
        for (uint256 i = 0; i < n; ++i) {
            MORPHO.accrueInterest(_markets[i]);
            held[i] = _supplyAssets(i);
            Market memory m = MORPHO.market(_markets[i].id());
            uint256 liquidity = m.totalSupplyAssets - m.totalBorrowAssets;
            available[i] = held[i] < liquidity ? held[i] : liquidity;
            total += held[i];
        }
        uint256 missing = assets;
        for (uint256 i = 0; i < n && total > 0; ++i) {
            uint256 share = assets.mulDivDown(held[i], total);
            take[i] = share < available[i] ? share : available[i];
            missing -= take[i];
        }
        for (uint256 i = 0; i < n && missing > 0; ++i) {
            uint256 extra = available[i] - take[i];
            if (extra > missing) extra = missing;
            take[i] += extra;
            missing -= extra;
        }
        if (missing > 0) revert NotEnoughLiquidity(missing);
        for (uint256 i = 0; i < n; ++i) {
            if (take[i] > 0) _withdrawFrom(i, take[i], held[i]);
        }
    }

    /// @dev Withdraws `amount` from market `i` (all the vault's shares when `amount` is all it holds).
    function _withdrawFrom(uint256 i, uint256 amount, uint256 held) internal returns (uint256 withdrawn) {
        if (amount >= held) {
            uint256 shares = MORPHO.position(_markets[i].id(), address(this)).supplyShares;
            (withdrawn,) = MORPHO.withdraw(_markets[i], 0, shares, address(this), address(this));
        } else {
            (withdrawn,) = MORPHO.withdraw(_markets[i], amount, 0, address(this), address(this));
        }
    }

    /// @dev The vault's supply assets in market `i` at the market's stored state.
    function _supplyAssets(uint256 i) internal view returns (uint256) {
        Id id = _markets[i].id();
        Market memory m = MORPHO.market(id);
        return uint256(MORPHO.position(id, address(this)).supplyShares).toAssetsDown(
            m.totalSupplyAssets, m.totalSupplyShares
        );
    }

    function _withdrawable() internal view returns (uint256 liquid) {
        for (uint256 i = 0; i < _markets.length; ++i) {
            (uint256 supplied,, uint256 borrowed,) = MORPHO.expectedMarketBalances(_markets[i]);
            uint256 held = MORPHO.expectedSupplyAssets(_markets[i], address(this));
            uint256 liquidity = supplied - borrowed;
            liquid += held < liquidity ? held : liquidity;
        }
    }
}
