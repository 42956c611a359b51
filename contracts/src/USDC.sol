// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

import {MinimalERC20} from "./common/MinimalERC20.sol";

/// @title USDC (devnet)
/// @notice A 6-decimal USDC-like ERC-20 for the local devnet only: anyone may mint.
/// @dev Standard ERC-20 (EIP-20) semantics and events; mint emits Transfer from address(0).
contract USDC is MinimalERC20("USD Coin", "USDC", 6) {
    /// @notice Creates `amount` tokens for `to`. Open to anyone: this is a devnet token.
    function mint(address to, uint256 amount) external {
        require(to != address(0), "USDC: mint to the zero address");
        _mint(to, amount);
    }
}
