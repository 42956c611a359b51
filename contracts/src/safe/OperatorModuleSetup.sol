// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

interface ISafeModules {
    function enableModule(address module) external;
}

interface IOperatorModuleRegistry {
    function register(address token, address collector) external;
}

/// @title OperatorModuleSetup
/// @notice The set-up step of a yieldagent Safe: `Safe.setup(owners, threshold, to = this,
/// data = setUp(...), ...)` delegatecalls it, so it runs as the new Safe. It enables the
/// operator module (a self-call, which Safe's `authorized` admits, as Safe's own
/// `SafeModuleSetup.enableModules` does) and registers the Safe with it (msg.sender = the
/// Safe), fixing the account's token and fee collector. Stateless: one deployment serves
/// every chain at one address.
contract OperatorModuleSetup {
    address private immutable _self;

    error OnlyDelegateCall();

    constructor() {
        _self = address(this);
    }

    function setUp(address module, address token, address collector) external {
        // Called directly it would act as itself, never as a Safe.
        if (address(this) == _self) revert OnlyDelegateCall();
        ISafeModules(address(this)).enableModule(module);
        IOperatorModuleRegistry(module).register(token, collector);
    }
}
