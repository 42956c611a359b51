// SPDX-License-Identifier: MIT
pragma solidity ^0.8.19;

/// @title USDC (devnet)
/// @notice A 6-decimal USDC-like ERC-20 for the local devnet only: anyone may mint.
/// @dev Standard ERC-20 (EIP-20) semantics and events; mint emits Transfer from address(0).
contract USDC {
    string public constant name = "USD Coin";
    string public constant symbol = "USDC";
    uint8 public constant decimals = 6;

    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    /// @notice Creates `amount` tokens for `to`. Open to anyone: this is a devnet token.
    function mint(address to, uint256 amount) external {
        require(to != address(0), "USDC: mint to the zero address");
        totalSupply += amount;
        unchecked {
            balanceOf[to] += amount; // cannot overflow: totalSupply did not
        }
        emit Transfer(address(0), to, amount);
    }

    function approve(address spender, uint256 amount) external returns (bool) {
        allowance[msg.sender][spender] = amount;
        emit Approval(msg.sender, spender, amount);
        return true;
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        _transfer(msg.sender, to, amount);
        return true;
    }

    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        if (allowed != type(uint256).max) {
            require(allowed >= amount, "USDC: insufficient allowance");
            unchecked {
                allowance[from][msg.sender] = allowed - amount;
            }
        }
        _transfer(from, to, amount);
        return true;
    }

    function _transfer(address from, address to, uint256 amount) private {
        require(to != address(0), "USDC: transfer to the zero address");
        uint256 balance = balanceOf[from];
        require(balance >= amount, "USDC: transfer amount exceeds balance");
        unchecked {
            balanceOf[from] = balance - amount;
            balanceOf[to] += amount; // cannot overflow: the sum of balances is totalSupply
        }
        emit Transfer(from, to, amount);
    }
}
