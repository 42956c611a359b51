// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

/// A test contract for the transaction sender: it succeeds, or reverts in each way
/// Solidity can (Error(string), Panic(uint256), a custom error).
contract Reverter {
    error Refused(uint256 code);

    event Done(address indexed by, uint256 value);

    uint256 public count;

    function succeed(uint256 value) external {
        count += 1;
        emit Done(msg.sender, value);
    }

    function fail(string calldata reason) external pure {
        revert(reason);
    }

    function divide(uint256 by) external pure returns (uint256) {
        return 1 / by;
    }

    function refuse() external pure {
        revert Refused(7);
    }
}
