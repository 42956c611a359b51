// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

import {IERC20Like} from "../common/IERC20Like.sol";

/// @title SwapRouter (devnet)
/// @notice Constant-product pools (x * y = k, 0.3% fee, as Uniswap v2) keyed by token pair, with
/// their reserves held here. Used on the devnet to swap reward tokens (COMP) for USDC.
contract SwapRouter {
    struct Pool {
        uint256 reserveA; // reserve of the lower-addressed token
        uint256 reserveB;
    }

    mapping(bytes32 => Pool) internal _pools;

    event LiquidityAdded(address indexed provider, address tokenA, address tokenB, uint256 amountA, uint256 amountB);
    event Swap(address indexed sender, address indexed tokenIn, address indexed tokenOut, uint256 amountIn, uint256 amountOut, address to);

    error NoPool(address tokenIn, address tokenOut);

    /// @notice Adds `amountX` of `tokenX` and `amountY` of `tokenY` to their pool (no LP tokens:
    /// devnet seeding only).
    function addLiquidity(address tokenX, address tokenY, uint256 amountX, uint256 amountY) external {
        require(tokenX != tokenY, "same token");
        require(IERC20Like(tokenX).transferFrom(msg.sender, address(this), amountX), "transferFrom failed");
        require(IERC20Like(tokenY).transferFrom(msg.sender, address(this), amountY), "transferFrom failed");
        (bytes32 key, bool ordered) = _key(tokenX, tokenY);
        Pool storage pool = _pools[key];
        if (ordered) {
            pool.reserveA += amountX;
            pool.reserveB += amountY;
        } else {
            pool.reserveA += amountY;
            pool.reserveB += amountX;
        }
        emit LiquidityAdded(msg.sender, tokenX, tokenY, amountX, amountY);
    }

    /// @notice The reserves of `tokenIn` and `tokenOut` in their pool.
    function getReserves(address tokenIn, address tokenOut) public view returns (uint256 reserveIn, uint256 reserveOut) {
        (bytes32 key, bool ordered) = _key(tokenIn, tokenOut);
        Pool memory pool = _pools[key];
        (reserveIn, reserveOut) = ordered ? (pool.reserveA, pool.reserveB) : (pool.reserveB, pool.reserveA);
    }

    /// @notice What `amountIn` of `tokenIn` buys of `tokenOut` now.
    function getAmountOut(address tokenIn, address tokenOut, uint256 amountIn) public view returns (uint256) {
        (uint256 reserveIn, uint256 reserveOut) = getReserves(tokenIn, tokenOut);
        if (reserveIn == 0 || reserveOut == 0) revert NoPool(tokenIn, tokenOut);
        uint256 withFee = amountIn * 997;
        return withFee * reserveOut / (reserveIn * 1000 + withFee);
    }

    /// @notice Swaps `amountIn` of `tokenIn` (pulled from the caller) for at least `minOut` of
    /// `tokenOut`, paid to `to`; reverts "slippage" below `minOut`.
    function swap(address tokenIn, address tokenOut, uint256 amountIn, uint256 minOut, address to)
        external
        returns (uint256 amountOut)
    {
        amountOut = getAmountOut(tokenIn, tokenOut, amountIn);
        require(amountOut >= minOut, "slippage");
        require(IERC20Like(tokenIn).transferFrom(msg.sender, address(this), amountIn), "transferFrom failed");
        (bytes32 key, bool ordered) = _key(tokenIn, tokenOut);
        Pool storage pool = _pools[key];
        if (ordered) {
            pool.reserveA += amountIn;
            pool.reserveB -= amountOut;
        } else {
            pool.reserveB += amountIn;
            pool.reserveA -= amountOut;
        }
        require(IERC20Like(tokenOut).transfer(to, amountOut), "transfer failed");
        emit Swap(msg.sender, tokenIn, tokenOut, amountIn, amountOut, to);
    }

    function _key(address x, address y) internal pure returns (bytes32, bool ordered) {
        ordered = x < y;
        (address a, address b) = ordered ? (x, y) : (y, x);
        return (keccak256(abi.encode(a, b)), ordered);
    }
}
