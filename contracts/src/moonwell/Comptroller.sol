// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

/// @title Comptroller (devnet)
/// @notice The part of Moonwell's (Compound v2's) Comptroller that the service reads and the
/// devnet exercises: the pause guardian's switch on supplying to a market (`mintGuardianPaused`),
/// which the market checks on every `mint` through `mintAllowed`. As in Compound v2, the guardian
/// or the admin may pause, only the admin may unpause, and nothing pauses redeeming.
contract Comptroller {
    address public immutable admin;
    address public immutable pauseGuardian;
    mapping(address => bool) public mintGuardianPaused;

    event ActionPaused(address mToken, string action, bool pauseState);

    constructor(address pauseGuardian_) {
        admin = msg.sender;
        pauseGuardian = pauseGuardian_;
    }

    /// @notice Pauses, or unpauses, supplying to `mToken`; returns `state`.
    function _setMintPaused(address mToken, bool state) external returns (bool) {
        require(msg.sender == pauseGuardian || msg.sender == admin, "only pause guardian and admin can pause");
        require(msg.sender == admin || state, "only admin can unpause");
        mintGuardianPaused[mToken] = state;
        emit ActionPaused(mToken, "Mint", state);
        return state;
    }

    /// @notice 0 when `minter` may supply `mintAmount` to `mToken`; reverts while it is paused.
    function mintAllowed(address mToken, address minter, uint256 mintAmount) external view returns (uint256) {
        minter;
        mintAmount;
        require(!mintGuardianPaused[mToken], "mint is paused");
        return 0;
    }
}
