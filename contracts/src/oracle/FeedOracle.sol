// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

import {AggregatorV3Interface} from "./AggregatorV3Interface.sol";

/// @title FeedOracle (devnet): a Morpho Blue oracle over one Chainlink-style feed.
/// @notice What Morpho's ChainlinkOracleV2 does with a single base feed: the price of one
/// collateral unit in loan units, scaled 1e36, from the feed's latest answer. Moving the feed
/// moves the market's liquidations and what the service's depeg guard reads alike.
contract FeedOracle {
    AggregatorV3Interface public immutable feed;
    uint256 public immutable scale;

    constructor(AggregatorV3Interface feed_, uint8 collateralDecimals, uint8 loanDecimals) {
        feed = feed_;
        scale = 10 ** (36 + uint256(loanDecimals) - collateralDecimals - feed_.decimals());
    }

    function price() external view returns (uint256) {
        (, int256 answer,,,) = feed.latestRoundData();
        return answer > 0 ? uint256(answer) * scale : 0;
    }
}
