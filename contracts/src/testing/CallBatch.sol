// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

/// @notice A measuring tool for the benchmarks, never deployed on a real chain: placed as
/// code at the operator's address on a devnet (anvil_setCode), it makes several of the
/// operator's calls to one contract in a single transaction, as a batched `execute` of the
/// module would. Any call that fails reverts the whole transaction with its reason.
contract CallBatch {
    function run(address target, bytes[] calldata calls) external {
        for (uint256 i = 0; i < calls.length; i++) {
            (bool ok, bytes memory returned) = target.call(calls[i]);
            if (!ok) {
                assembly {
                    revert(add(returned, 32), mload(returned))
                }
            }
        }
    }
}
