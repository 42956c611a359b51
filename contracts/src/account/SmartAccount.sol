// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

import {SessionPolicy} from "./SessionPolicy.sol";

/// @title SmartAccount
/// @notice The devnet's smart account: ERC-7579 `execute` for its owner (the user's EOA, who may
/// call anything) and for a session key (the backend operator), whose every call is checked by
/// a SessionPolicy. Anyone else is refused.
/// @dev No constructor: the devnet installs the runtime code with `anvil_setCode` at the Kernel
/// v3.1 address and writes the storage with `anvil_setStorageAt`. Storage layout (fixed):
/// slot 0 owner, slot 1 sessionKey, slot 2 policy, slot 3 feesPaid, slot 4 paidToOwner.
/// The session key may pay the fee collector (in the policy's fee token) only while
/// (feesPaid + x) * (10000 - maxFeeBps) <= maxFeeBps * paidToOwner, where feesPaid and
/// paidToOwner count the fee-token transfers made by the session key to the collector and to the
/// owner. Execution modes: call type single (0x00, abi.encodePacked(target, value, callData)) or
/// batch (0x01, abi.encode(Execution[])), exec type default (0x00: revert on failure, bubbling
/// the revert data).
contract SmartAccount {
    /// @notice One call of a batch (ERC-7579).
    struct Execution {
        address target;
        uint256 value;
        bytes callData;
    }

    address public owner; // slot 0
    address public sessionKey; // slot 1
    address public policy; // slot 2
    uint256 public feesPaid; // slot 3
    uint256 public paidToOwner; // slot 4

    /// @notice The caller is neither the owner nor the session key.
    error Unauthorized(address caller);
    /// @notice The execution mode is not single or batch with the default exec type.
    error UnsupportedExecutionMode(bytes32 mode);
    /// @notice This fee would take the session key's fees past the policy's cap.
    error FeeCapExceeded(uint256 feesPaid, uint256 fee, uint256 paidToOwner, uint256 maxFeeBps);

    receive() external payable {}

    /// @notice ERC-7579: runs one call or a batch of calls from this account.
    function execute(bytes32 mode, bytes calldata executionCalldata) external payable {
        bool byOwner = msg.sender == owner;
        if (!byOwner && (msg.sender != sessionKey || msg.sender == address(0))) {
            revert Unauthorized(msg.sender);
        }
        if (mode[1] != 0x00) revert UnsupportedExecutionMode(mode);
        if (mode[0] == 0x00) {
            address target = address(bytes20(executionCalldata[:20]));
            uint256 value = uint256(bytes32(executionCalldata[20:52]));
            _run(byOwner, target, value, executionCalldata[52:]);
        } else if (mode[0] == 0x01) {
            Execution[] memory executions = abi.decode(executionCalldata, (Execution[]));
            for (uint256 i = 0; i < executions.length; ++i) {
                _run(byOwner, executions[i].target, executions[i].value, executions[i].callData);
            }
        } else {
            revert UnsupportedExecutionMode(mode);
        }
    }

    /// @notice ERC-7579: whether `execute` accepts `mode`.
    function supportsExecutionMode(bytes32 mode) external pure returns (bool) {
        return (mode[0] == 0x00 || mode[0] == 0x01) && mode[1] == 0x00;
    }

    /// @notice ERC-7579: this account implementation's id.
    function accountId() external pure returns (string memory) {
        return "yieldagent.devnet-session-account.1.0.0";
    }

    function _run(bool byOwner, address target, uint256 value, bytes memory data) private {
        if (!byOwner) _authorize(target, value, data);
        (bool ok, bytes memory returned) = target.call{value: value}(data);
        if (!ok) {
            assembly {
                revert(add(returned, 32), mload(returned))
            }
        }
    }

    function _authorize(address target, uint256 value, bytes memory data) private {
        SessionPolicy rules = SessionPolicy(policy);
        (SessionPolicy.Effect effect, uint256 amount) = rules.check(address(this), owner, target, value, data);
        if (effect == SessionPolicy.Effect.ToOwner) {
            paidToOwner += amount;
        } else if (effect == SessionPolicy.Effect.Fee) {
            uint256 bps = rules.maxFeeBps();
            if ((feesPaid + amount) * (10_000 - bps) > bps * paidToOwner) {
                revert FeeCapExceeded(feesPaid, amount, paidToOwner, bps);
            }
            feesPaid += amount;
        }
    }
}
