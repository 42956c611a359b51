// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

/// @notice The ERC-20 calls the devnet's pools make.
interface IERC20Like {
    function balanceOf(address account) external view returns (uint256);
    function transfer(address to, uint256 amount) external returns (bool);
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
    function approve(address spender, uint256 amount) external returns (bool);
    function decimals() external view returns (uint8);
}

/// @notice A mintable devnet token (DevToken, the devnet USDC).
interface IMintable {
    function mint(address to, uint256 amount) external;
}
