// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

// Chainlink's price feed interface, written here from the npm package @chainlink/contracts
// (src/v0.8/shared/interfaces/AggregatorV3Interface.sol, MIT). The package itself is not a
// dependency: its npm releases depend on a git repository (zksync's contracts, from GitHub),
// which npm cannot fetch from the registry, and on a dozen packages the devnet does not need.
// The interface is these five functions, the same in every release since 0.6.
interface AggregatorV3Interface {
    function decimals() external view returns (uint8);

    function description() external view returns (string memory);

    function version() external view returns (uint256);

    function getRoundData(uint80 roundId_)
        external
        view
        returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound);

    function latestRoundData()
        external
        view
        returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound);
}
