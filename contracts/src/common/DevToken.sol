// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

import {MinimalERC20} from "./MinimalERC20.sol";

/// @title DevToken
/// @notice A DEVNET-ONLY token anyone may mint: collateral mocks and the reward token ("COMP").
contract DevToken is MinimalERC20 {
    constructor(string memory name_, string memory symbol_, uint8 decimals_)
        MinimalERC20(name_, symbol_, decimals_)
    {}

    /// @notice Mints `amount` to `to`. Open to anyone: this token exists on the devnet only.
    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }
}
