// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

import {IERC20Like} from "../common/IERC20Like.sol";

interface IModuleCalls {
    struct Call {
        address target;
        bytes data;
    }

    function execute(address account, Call[] calldata calls) external;
    function pay(address account, uint256 toOwner, uint256 fee) external;
}

interface ISafeCalls {
    function execTransactionFromModule(address to, uint256 value, bytes calldata data, uint8 operation)
        external
        returns (bool);
    function addOwnerWithThreshold(address owner, uint256 threshold) external;
}

/// @title HostileTarget (tests only, never deployed by the devnet)
/// @notice A "pool" written by the thief who holds the operator key, which a mistaken admin has
/// listed. Called by an account through the operator module, it first tries the attack it was
/// armed with, from inside the call, and reverts with whatever stopped it; if nothing did, it
/// goes on as a pool would. Unarmed, `deposit` keeps what it is given and `redeem` gives it back.
contract HostileTarget {
    enum Attack {
        None,
        ReenterExecute, // the module's execute, for the calling account
        ReenterPay, // the module's pay, for the calling account
        AsModule, // the account's execTransactionFromModule, as if this were a module
        AddOwner, // the account's owner management
        TakeMore, // more of the account's token than the call supplies
        TakeOther // another token of the account (its reward token)
    }

    address public immutable module;
    address public immutable thief;
    Attack public attack;
    address public other;

    constructor(address module_, address thief_) {
        module = module_;
        thief = thief_;
    }

    function arm(Attack attack_, address other_) external {
        attack = attack_;
        other = other_;
    }

    /// @notice Listed as a supply: takes `amount` of `token` from the caller.
    function deposit(address token, uint256 amount) external {
        _attack(token, amount);
        require(IERC20Like(token).transferFrom(msg.sender, address(this), amount), "transferFrom failed");
    }

    /// @notice Listed as a withdrawal: gives `amount` of `token` back to the caller.
    function redeem(address token, uint256 amount) external {
        _attack(token, amount);
        require(IERC20Like(token).transfer(msg.sender, amount), "transfer failed");
    }

    function _attack(address token, uint256 amount) internal {
        address account = msg.sender;
        bytes memory steal = abi.encodeCall(IERC20Like.transfer, (thief, amount));
        address to;
        bytes memory data;
        if (attack == Attack.None) {
            return;
        } else if (attack == Attack.ReenterExecute) {
            IModuleCalls.Call[] memory calls = new IModuleCalls.Call[](1);
            calls[0] = IModuleCalls.Call(token, steal);
            (to, data) = (module, abi.encodeCall(IModuleCalls.execute, (account, calls)));
        } else if (attack == Attack.ReenterPay) {
            (to, data) = (module, abi.encodeCall(IModuleCalls.pay, (account, amount, 0)));
        } else if (attack == Attack.AsModule) {
            (to, data) = (account, abi.encodeCall(ISafeCalls.execTransactionFromModule, (token, 0, steal, 0)));
        } else if (attack == Attack.AddOwner) {
            (to, data) = (account, abi.encodeCall(ISafeCalls.addOwnerWithThreshold, (thief, 1)));
        } else if (attack == Attack.TakeMore) {
            (to, data) = (token, abi.encodeCall(IERC20Like.transferFrom, (account, thief, amount + 1)));
        } else {
            (to, data) = (other, abi.encodeCall(IERC20Like.transferFrom, (account, thief, 1)));
        }
        (bool ok, bytes memory answer) = to.call(data);
        if (!ok) {
            assembly {
                revert(add(answer, 32), mload(answer))
            }
        }
    }
}
