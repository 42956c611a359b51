// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

import {AggregatorV3Interface} from "./AggregatorV3Interface.sol";

/// @title DevPriceFeed (devnet only)
/// @notice A Chainlink-style feed whose answer its deployer sets: the devnet's USDC/USD and
/// COMP/USD. `setAnswer` stamps the current time; `setRound` sets any time, so tests can make
/// a feed stale or answer from the future.
contract DevPriceFeed is AggregatorV3Interface {
    uint8 public immutable decimals;
    address public immutable setter;
    string public description;
    uint80 internal _round;
    int256 internal _answer;
    uint256 internal _updatedAt;

    event AnswerUpdated(int256 indexed current, uint256 indexed roundId, uint256 updatedAt);

    error NotSetter(address caller);
    error NoRound(uint80 roundId);

    constructor(uint8 decimals_, string memory description_, int256 answer_) {
        decimals = decimals_;
        description = description_;
        setter = msg.sender;
        _set(answer_, block.timestamp);
    }

    function version() external pure returns (uint256) {
        return 4;
    }

    /// @notice A new round answering `answer_`, updated now.
    function setAnswer(int256 answer_) external {
        if (msg.sender != setter) revert NotSetter(msg.sender);
        _set(answer_, block.timestamp);
    }

    /// @notice A new round answering `answer_`, stamped `updatedAt_` (stale or future on purpose).
    function setRound(int256 answer_, uint256 updatedAt_) external {
        if (msg.sender != setter) revert NotSetter(msg.sender);
        _set(answer_, updatedAt_);
    }

    function latestRoundData() external view returns (uint80, int256, uint256, uint256, uint80) {
        return (_round, _answer, _updatedAt, _updatedAt, _round);
    }

    function getRoundData(uint80 roundId_) external view returns (uint80, int256, uint256, uint256, uint80) {
        // Only the latest round is kept: enough for the module, which reads latestRoundData.
        if (roundId_ != _round) revert NoRound(roundId_);
        return (_round, _answer, _updatedAt, _updatedAt, _round);
    }

    function _set(int256 answer_, uint256 updatedAt_) internal {
        _round += 1;
        _answer = answer_;
        _updatedAt = updatedAt_;
        emit AnswerUpdated(answer_, _round, updatedAt_);
    }
}
