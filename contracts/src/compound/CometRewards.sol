// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

import {IMintable} from "../common/IERC20Like.sol";

interface ICometTracking {
    function accrueAccount(address account) external;
    function baseTrackingAccrued(address account) external view returns (uint64);
}

/// @title CometRewards (devnet)
/// @notice Compound v3's rewards contract, devnet-simple: a Comet's suppliers earn the reward
/// token pro rata to their supply per second (tracked by the Comet); `claim` pays what is owed
/// by minting the (devnet-only, mintable) reward token to the account itself.
contract CometRewards {
    struct RewardConfig {
        address token;
        uint64 rescaleFactor;
        bool shouldUpscale;
    }

    struct RewardOwed {
        address token;
        uint256 owed;
    }

    address public governor;
    mapping(address => RewardConfig) public rewardConfig;
    mapping(address => mapping(address => uint256)) public rewardsClaimed;

    event RewardClaimed(address indexed src, address indexed recipient, address indexed token, uint256 amount);

    error NotPermitted(address caller);
    error NotSupported(address comet);

    constructor(address governor_) {
        governor = governor_;
    }

    /// @notice Pays rewards of `comet` in `token` (18 decimals: accrual scale 1e6 upscaled 1e12).
    function setRewardConfig(address comet, address token) external {
        if (msg.sender != governor) revert NotPermitted(msg.sender);
        rewardConfig[comet] = RewardConfig({token: token, rescaleFactor: 1e12, shouldUpscale: true});
    }

    /// @notice What `account` may claim now (accrues first, like the production contract).
    function getRewardOwed(address comet, address account) external returns (RewardOwed memory) {
        RewardConfig memory config = rewardConfig[comet];
        if (config.token == address(0)) revert NotSupported(comet);
        ICometTracking(comet).accrueAccount(account);
        uint256 claimed = rewardsClaimed[comet][account];
        uint256 accrued = _accrued(config, comet, account);
        return RewardOwed(config.token, accrued > claimed ? accrued - claimed : 0);
    }

    /// @notice Pays `src` what it is owed.
    function claim(address comet, address src, bool shouldAccrue) external {
        RewardConfig memory config = rewardConfig[comet];
        if (config.token == address(0)) revert NotSupported(comet);
        if (shouldAccrue) ICometTracking(comet).accrueAccount(src);
        uint256 claimed = rewardsClaimed[comet][src];
        uint256 accrued = _accrued(config, comet, src);
        if (accrued > claimed) {
            uint256 owed = accrued - claimed;
            rewardsClaimed[comet][src] = accrued;
            IMintable(config.token).mint(src, owed);
            emit RewardClaimed(src, src, config.token, owed);
        }
    }

    function _accrued(RewardConfig memory config, address comet, address account) internal view returns (uint256) {
        uint256 accrued = ICometTracking(comet).baseTrackingAccrued(account);
        return config.shouldUpscale ? accrued * config.rescaleFactor : accrued / config.rescaleFactor;
    }
}
