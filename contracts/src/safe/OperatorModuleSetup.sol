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
/// `SafeModuleSetup.enableModules` does) and asks the module to register the Safe
/// (msg.sender = the Safe), fixing the account's token and fee collector. Stateless: one
/// deployment serves every chain at one address.
///
/// The Safe is created whatever the module answers. An account's address is known, and may
/// receive funds, before it is deployed, and only this initializer can ever deploy it: were a
/// refusal to undo the set-up, a module that refuses (a mistaken admin's change, a chain where
/// the module is missing or not sealed) would lock those funds at an address no one can
/// deploy. Refused, the Safe is its owner's alone: the module, enabled but not registered,
/// cannot act for it.
contract OperatorModuleSetup {
    /// @notice The least gas left before registering: over twice what `register` takes, so
    /// that a refusal is the module's, never a caller's who gave too little gas on purpose to
    /// deploy the account unregistered.
    uint256 public constant REGISTER_GAS = 200_000;

    address private immutable _self;

    /// @notice Emitted by the new Safe when the module did not register it (`reason`: the
    /// module's revert data, empty where the module has no code).
    event RegistrationRefused(address indexed module, bytes reason);

    error OnlyDelegateCall();
    error TooLittleGas(uint256 left);

    constructor() {
        _self = address(this);
    }

    function setUp(address module, address token, address collector) external {
        // Called directly it would act as itself, never as a Safe.
        if (address(this) == _self) revert OnlyDelegateCall();
        ISafeModules(address(this)).enableModule(module);
        if (gasleft() < REGISTER_GAS) revert TooLittleGas(gasleft());
        bool registered;
        bytes memory reason;
        if (module.code.length != 0) {
            (registered, reason) =
                module.call(abi.encodeCall(IOperatorModuleRegistry.register, (token, collector)));
        }
        if (!registered) emit RegistrationRefused(module, reason);
    }
}
