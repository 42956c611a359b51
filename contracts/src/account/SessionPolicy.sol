// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

/// @dev The calls a session key may make, declared only for their selectors.
interface IPolicedCalls {
    function approve(address spender, uint256 amount) external returns (bool);
    function transfer(address to, uint256 amount) external returns (bool);
    // Aave v3 Pool
    function supply(address asset, uint256 amount, address onBehalfOf, uint16 referralCode) external;
    function withdraw(address asset, uint256 amount, address to) external returns (uint256);
    // Compound v3 Comet
    function supply(address asset, uint256 amount) external;
    function withdraw(address asset, uint256 amount) external;
    // Moonwell mToken
    function mint(uint256 mintAmount) external returns (uint256);
    function redeemUnderlying(uint256 redeemAmount) external returns (uint256);
    function redeem(uint256 redeemTokens) external returns (uint256);
    // ERC-4626 vault
    function deposit(uint256 assets, address receiver) external returns (uint256);
    function withdraw(uint256 assets, address receiver, address owner) external returns (uint256);
    function redeem(uint256 shares, address receiver, address owner) external returns (uint256);
    // CometRewards
    function claim(address comet, address src, bool shouldAccrue) external;
    // the devnet swap router
    function swap(address tokenIn, address tokenOut, uint256 amountIn, uint256 minOut, address to)
        external
        returns (uint256);
}

/// @title SessionPolicy
/// @notice What a smart account's session key (the backend operator) may do, checked on chain.
/// @dev One policy serves every account. Its admin lists the protocol contracts by kind, the
/// tokens, the fee collector and the fee cap. `check` reverts with `SessionKeyForbidden` for any
/// call outside this list (always with value 0):
/// - token `approve(spender, x)` of a listed token to a listed protocol contract or router;
/// - token `transfer(to, x)` of a listed token to the account's owner, or of the fee token to
///   the fee collector (the account enforces the cumulative fee cap);
/// - Aave `supply(asset, x, onBehalfOf == account, 0)`, `withdraw(asset, x, to == account)`;
/// - Comet `supply(asset, x)`, `withdraw(asset, x)` of a listed token;
/// - mToken `mint(x)`, `redeemUnderlying(x)`, `redeem(x)`;
/// - vault `deposit(x, account)`, `withdraw(x, account, account)`, `redeem(x, account, account)`;
/// - rewards `claim(comet, account, shouldAccrue)` for a listed Comet;
/// - router `swap(listed token, listed token, x, minOut, account)`.
contract SessionPolicy {
    /// @notice The kind of a listed contract.
    enum Kind {
        None,
        Aave,
        Comet,
        MToken,
        Vault,
        Rewards,
        Router
    }

    /// @notice What an allowed call does to the account's fee counters.
    enum Effect {
        None,
        ToOwner,
        Fee
    }

    /// @notice The session key may not make this call.
    error SessionKeyForbidden(address target, bytes4 selector);
    /// @notice The session key may not send ether.
    error SessionKeyValueForbidden(address target, uint256 value);
    /// @notice Only the admin may change the policy.
    error NotAdmin(address caller);
    /// @notice A fee cap must lie in [0, 10000) basis points.
    error InvalidMaxFeeBps(uint256 maxFeeBps);

    event TargetSet(address indexed target, Kind kind);
    event TokenSet(address indexed token, bool allowed);
    event FeeSet(address indexed feeCollector, uint256 maxFeeBps);

    address public admin;
    /// @notice The token fees are paid in (USDC); the accounts count its transfers.
    address public immutable feeToken;
    address public feeCollector;
    uint256 public maxFeeBps;
    mapping(address => Kind) public kindOf;
    mapping(address => bool) public isToken;
    mapping(address => bool) private _listed;
    address[] private _targets;
    address[] private _tokens;

    constructor(address feeToken_, address feeCollector_, uint256 maxFeeBps_) {
        admin = msg.sender;
        feeToken = feeToken_;
        _setFee(feeCollector_, maxFeeBps_);
        _setToken(feeToken_, true);
    }

    modifier onlyAdmin() {
        if (msg.sender != admin) revert NotAdmin(msg.sender);
        _;
    }

    /// @notice Lists `target` as a contract of `kind` (Kind.None unlists it).
    function setTarget(address target, Kind kind) external onlyAdmin {
        if (!_listed[target] && kind != Kind.None) {
            _listed[target] = true;
            _targets.push(target);
        }
        kindOf[target] = kind;
        emit TargetSet(target, kind);
    }

    /// @notice Allows or forbids `token` in approvals, transfers to the owner and swaps.
    function setToken(address token, bool allowed) external onlyAdmin {
        _setToken(token, allowed);
    }

    /// @notice Sets the fee collector and the fee cap (basis points of what leaves the account).
    function setFee(address feeCollector_, uint256 maxFeeBps_) external onlyAdmin {
        _setFee(feeCollector_, maxFeeBps_);
    }

    /// @notice Hands the policy to `newAdmin`.
    function transferAdmin(address newAdmin) external onlyAdmin {
        admin = newAdmin;
    }

    /// @notice Every contract ever listed (check `kindOf` for its current kind).
    function targets() external view returns (address[] memory) {
        return _targets;
    }

    /// @notice Every token ever listed (check `isToken` for its current status).
    function tokens() external view returns (address[] memory) {
        return _tokens;
    }

    /// @notice Checks one call of `account`'s session key; reverts if it is forbidden.
    /// @return effect How the call moves the account's fee counters.
    /// @return amount The fee-token amount the effect counts.
    function check(address account, address owner, address target, uint256 value, bytes calldata data)
        external
        view
        returns (Effect effect, uint256 amount)
    {
        if (value != 0) revert SessionKeyValueForbidden(target, value);
        if (data.length < 4) revert SessionKeyForbidden(target, bytes4(0));
        bytes4 selector = bytes4(data[:4]);
        bytes calldata args = data[4:];
        Kind kind = kindOf[target];
        bool allowed;
        if (isToken[target]) {
            (effect, amount, allowed) = _checkToken(owner, target, selector, args);
        } else if (kind == Kind.Aave) {
            allowed = _checkAave(account, selector, args);
        } else if (kind == Kind.Comet) {
            if (selector == bytes4(keccak256("supply(address,uint256)"))
                || selector == bytes4(keccak256("withdraw(address,uint256)"))) {
                (address asset,) = abi.decode(args, (address, uint256));
                allowed = isToken[asset];
            }
        } else if (kind == Kind.MToken) {
            allowed = selector == IPolicedCalls.mint.selector
                || selector == IPolicedCalls.redeemUnderlying.selector
                || selector == bytes4(keccak256("redeem(uint256)"));
        } else if (kind == Kind.Vault) {
            allowed = _checkVault(account, selector, args);
        } else if (kind == Kind.Rewards) {
            if (selector == IPolicedCalls.claim.selector) {
                (address comet, address src,) = abi.decode(args, (address, address, bool));
                allowed = kindOf[comet] == Kind.Comet && src == account;
            }
        } else if (kind == Kind.Router) {
            if (selector == IPolicedCalls.swap.selector) {
                (address tokenIn, address tokenOut,,, address to) =
                    abi.decode(args, (address, address, uint256, uint256, address));
                allowed = isToken[tokenIn] && isToken[tokenOut] && to == account;
            }
        }
        if (!allowed) revert SessionKeyForbidden(target, selector);
    }

    function _checkToken(address owner, address token, bytes4 selector, bytes calldata args)
        private
        view
        returns (Effect effect, uint256 amount, bool allowed)
    {
        if (selector == IPolicedCalls.approve.selector) {
            (address spender,) = abi.decode(args, (address, uint256));
            return (Effect.None, 0, kindOf[spender] != Kind.None);
        }
        if (selector == IPolicedCalls.transfer.selector) {
            address to;
            (to, amount) = abi.decode(args, (address, uint256));
            if (to == owner) return (token == feeToken ? Effect.ToOwner : Effect.None, amount, true);
            if (to == feeCollector && token == feeToken) return (Effect.Fee, amount, true);
        }
        return (Effect.None, 0, false);
    }

    function _checkAave(address account, bytes4 selector, bytes calldata args) private view returns (bool) {
        if (selector == bytes4(keccak256("supply(address,uint256,address,uint16)"))) {
            (address asset,, address onBehalfOf, uint16 referral) =
                abi.decode(args, (address, uint256, address, uint16));
            return isToken[asset] && onBehalfOf == account && referral == 0;
        }
        if (selector == bytes4(keccak256("withdraw(address,uint256,address)"))) {
            (address asset,, address to) = abi.decode(args, (address, uint256, address));
            return isToken[asset] && to == account;
        }
        return false;
    }

    function _checkVault(address account, bytes4 selector, bytes calldata args) private pure returns (bool) {
        if (selector == IPolicedCalls.deposit.selector) {
            (, address receiver) = abi.decode(args, (uint256, address));
            return receiver == account;
        }
        if (selector == bytes4(keccak256("withdraw(uint256,address,address)"))
            || selector == bytes4(keccak256("redeem(uint256,address,address)"))) {
            (, address receiver, address owner) = abi.decode(args, (uint256, address, address));
            return receiver == account && owner == account;
        }
        return false;
    }

    function _setToken(address token, bool allowed) private {
        if (!_listed[token] && allowed) {
            _listed[token] = true;
            _tokens.push(token);
        }
        isToken[token] = allowed;
        emit TokenSet(token, allowed);
    }

    function _setFee(address feeCollector_, uint256 maxFeeBps_) private {
        if (maxFeeBps_ >= 10_000) revert InvalidMaxFeeBps(maxFeeBps_);
        feeCollector = feeCollector_;
        maxFeeBps = maxFeeBps_;
        emit FeeSet(feeCollector_, maxFeeBps_);
    }
}
