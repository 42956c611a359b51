// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

import {AggregatorV3Interface} from "../oracle/AggregatorV3Interface.sol";

/// @notice What the module uses of a Safe 1.4.1 (`ModuleManager`, `OwnerManager`).
interface ISafeAccount {
    function execTransactionFromModuleReturnData(address to, uint256 value, bytes memory data, uint8 operation)
        external
        returns (bool success, bytes memory returnData);
    function isModuleEnabled(address module) external view returns (bool);
    function getOwners() external view returns (address[] memory);
    function isOwner(address owner) external view returns (bool);
    function getThreshold() external view returns (uint256);
}

interface IERC20View {
    function balanceOf(address holder) external view returns (uint256);
    function allowance(address holder, address spender) external view returns (uint256);
    function decimals() external view returns (uint8);
}

/// @title OperatorModule
/// @notice A Safe module through which one operator key moves an account's stablecoin between
/// listed lending protocols, and can take nothing.
///
/// The operator (an EOA) may, for a registered account whose Safe has this module enabled:
/// - `execute` calls to listed (target, selector) pairs, each checked against its rule: exact
///   argument length, the words that must be the account (beneficiary, recipient, owner), the
///   words that must be the account's token;
///   - Supply: the module approves exactly the call's amount word, makes the call, approves 0;
///   - Withdraw, Claim: the account's token balance must not fall; a withdrawal whose rule names
///     a debt view (Comet's `borrowBalanceOf`: its `withdraw` lends what the balance lacks,
///     against collateral anyone may supply for the account) must leave the account owing 0;
///   - Swap: only a listed reward token into the account's token, approving exactly amountIn;
///     the account must receive at least the feeds' value of amountIn less `maxSlippageBps`;
/// - `pay` the registered owner in the account's token, plus at most `maxFeeBps` of the
///   payment (owner's part + fee) to the collector fixed at registration, while that owner
///   alone can still move the Safe's funds (still an owner, threshold 1).
/// Every call is a plain call (operation 0) with no ether. The account itself, this module and
/// listed tokens are never targets; approve/transfer selectors are never listed.
///
/// Listing changes (rules, tokens and their feeds, the operator) wait `delay` (>= 48 h) after
/// they are proposed; the admin can cancel them; an account can refuse a pending change's
/// subject for itself (`optOut`). The admin hands over in two steps and can pause at once.
/// Before `seal` the admin sets the initial listing directly; no account can register until
/// then, so every change an account ever sees went through the timelock.
contract OperatorModule {
    enum Kind {
        None,
        Supply,
        Withdraw,
        Claim,
        Swap
    }

    /// @notice How a listed (target, selector) call is checked. Word i is the call's i-th
    /// 32-byte argument word (after the selector).
    struct Rule {
        Kind kind;
        uint8 words; // exact number of argument words (static arguments only)
        uint8 amountWord; // Supply: the amount approved; Swap: amountIn
        uint8 tokenInWord; // Swap: the reward token sold
        uint16 accountWords; // bit i: word i must be the account
        uint16 tokenWords; // bit i: word i must be the account's token
        bytes4 debtOf; // Withdraw: a view of the target, debtOf(account), that must answer 0 after
    }

    /// @notice A priced token: an account's base token, or a reward token it may sell.
    struct TokenListing {
        address feed; // Chainlink AggregatorV3 (token / USD); zero unlists the token
        uint32 maxAge; // seconds after which the feed's answer is stale
        bool reward; // a reward token (may be sold); otherwise a base token (may be an account's)
    }

    struct Priced {
        address feed;
        uint32 maxAge;
        bool reward;
        uint8 tokenDecimals;
        uint8 feedDecimals;
    }

    enum ChangeKind {
        Rule,
        Token,
        Operator
    }

    /// @notice One change of the listing. `subject` is the target (Rule), the token (Token) or
    /// the new operator (Operator): what an account refuses when it opts out.
    struct Change {
        ChangeKind kind;
        address subject;
        bytes4 selector;
        Rule rule;
        TokenListing listing;
    }

    struct Pending {
        uint64 eta;
        address subject;
    }

    struct Account {
        address owner;
        address token;
        address collector;
    }

    struct Call {
        address target;
        bytes data;
    }

    uint256 public constant MIN_DELAY = 48 hours;
    uint256 public constant BPS = 10_000;
    uint256 internal constant MAX_WORDS = 16;
    uint8 internal constant CALL = 0; // Safe's Enum.Operation.Call; DelegateCall (1) is never used

    /// @notice How long a proposed change waits before it can be applied.
    uint256 public immutable delay;
    /// @notice The most of a payment (owner's part + fee) the fee may be, in basis points.
    uint256 public immutable maxFeeBps;
    /// @notice The most a reward swap may fall short of the feeds' value, in basis points.
    uint256 public immutable maxSlippageBps;

    address public admin;
    address public pendingAdmin;
    address public operator;
    bool public isSealed;
    bool public paused;

    mapping(address => mapping(bytes4 => Rule)) internal _rules;
    mapping(address => Priced) internal _tokens;
    mapping(bytes32 => Pending) public pending;
    mapping(address => Account) internal _accounts;
    /// @notice account => subject => refused: the operator never uses that target, token or
    /// operator key for that account.
    mapping(address => mapping(address => bool)) public refused;

    event Registered(address indexed account, address indexed owner, address token, address collector);
    event ChangeProposed(bytes32 indexed id, Change change, uint256 eta);
    event ChangeApplied(bytes32 indexed id, Change change);
    event ChangeCancelled(bytes32 indexed id);
    event Sealed();
    event OptedOut(address indexed account, bytes32 indexed id, address indexed subject);
    event OptedIn(address indexed account, address indexed subject);
    event AdminProposed(address indexed admin, address indexed pendingAdmin);
    event AdminAccepted(address indexed previousAdmin, address indexed admin);
    event PausedSet(bool paused);
    event Executed(address indexed account, address indexed target, bytes4 selector, Kind kind);
    event Swapped(address indexed account, address indexed tokenIn, uint256 amountIn, uint256 received, uint256 floor);
    event Paid(address indexed account, address indexed owner, uint256 toOwner, address collector, uint256 fee);

    error NotAdmin(address caller);
    error NotPendingAdmin(address caller);
    error NotOperator(address caller);
    error NotRegistered(address account);
    error AlreadyRegistered(address account);
    error NotSealed();
    error AlreadySealed();
    error Paused();
    error BadConfig();
    error BadRule(address target, bytes4 selector);
    error BadToken(address token);
    error BadOperator(address operator);
    error AdminIsOperator(address account);
    error BadCollector(address collector);
    error NotSingleOwner(address account);
    error BadOwner(address owner);
    error OwnerChanged(address account, address owner);
    error ModuleNotEnabled(address account);
    error UnknownChange(bytes32 id);
    error AlreadyPending(bytes32 id);
    error TooEarly(bytes32 id, uint256 eta);
    error NotListed(address target, bytes4 selector);
    error Refused(address account, address subject);
    error BadCalldata(address target, bytes4 selector);
    error NotAccount(address target, uint256 word, uint256 value);
    error NotAccountToken(address target, uint256 word, uint256 value);
    error CallFailed(address target, bytes reason);
    error AllowanceLeft(address token, address spender, uint256 allowance);
    error BalanceFell(address token, uint256 before, uint256 afterwards);
    error Borrowed(address target, uint256 debt);
    error NotRewardToken(address token);
    error StalePrice(address feed, uint256 updatedAt);
    error BadPrice(address feed, int256 answer);
    error SwapBelowFeed(uint256 received, uint256 floor);
    error NoOwnerPayment();
    error FeeAboveBound(uint256 toOwner, uint256 fee);

    constructor(address admin_, uint256 delay_, uint256 maxFeeBps_, uint256 maxSlippageBps_) {
        // The fee bound admits 10% of yield (a fee within a payment of yield and principal is at
        // most that); 20% and 5% are ceilings no deployment should need.
        if (admin_ == address(0) || delay_ < MIN_DELAY || maxFeeBps_ > 2_000 || maxSlippageBps_ > 500) {
            revert BadConfig();
        }
        admin = admin_;
        delay = delay_;
        maxFeeBps = maxFeeBps_;
        maxSlippageBps = maxSlippageBps_;
    }

    /* ---------------------------------------------------------------- operator */

    /// @notice Makes `calls` from `account`, each checked against its rule; all or nothing.
    function execute(address account, Call[] calldata calls) external {
        Account memory a = _authorize(account);
        for (uint256 i = 0; i < calls.length; ++i) {
            _run(account, a, calls[i].target, calls[i].data);
        }
    }

    /// @notice Pays `toOwner` of the account's token to its owner and `fee` to its collector,
    /// with `fee * BPS <= maxFeeBps * (toOwner + fee)`; a fee never goes without a payment.
    function pay(address account, uint256 toOwner, uint256 fee) external {
        Account memory a = _authorize(account);
        if (toOwner == 0) revert NoOwnerPayment();
        if (fee * BPS > maxFeeBps * (toOwner + fee)) revert FeeAboveBound(toOwner, fee);
        // Only to an owner who could take it all alone: once the owner rotated its key away, or
        // requires a co-signer, the registered address is not the account's to pay any more.
        if (!ISafeAccount(account).isOwner(a.owner) || ISafeAccount(account).getThreshold() != 1) {
            revert OwnerChanged(account, a.owner);
        }
        _token(account, a.token, abi.encodeWithSelector(0xa9059cbb, a.owner, toOwner));
        if (fee != 0) {
            // An operator change to a collector's address must not let it pay itself.
            if (a.collector == msg.sender) revert BadCollector(a.collector);
            _token(account, a.token, abi.encodeWithSelector(0xa9059cbb, a.collector, fee));
        }
        emit Paid(account, a.owner, toOwner, a.collector, fee);
    }

    /* ---------------------------------------------------------------- accounts */

    /// @notice Registers the calling Safe (from its set-up, `OperatorModuleSetup`): its single
    /// owner becomes the only payee, `token` its token, `collector` its fee collector, for good.
    function register(address token_, address collector) external {
        if (!isSealed) revert NotSealed();
        address account_ = msg.sender;
        if (_accounts[account_].owner != address(0)) revert AlreadyRegistered(account_);
        if (collector == address(0) || collector == operator) revert BadCollector(collector);
        // Not today's listing: an account's address is handed out before it is deployed, and a
        // listing changed meanwhile must not change what it becomes. The listing prices the
        // token for swaps; here it need only be a contract (a call to no code "succeeds").
        if (token_.code.length == 0) revert BadToken(token_);
        if (!ISafeAccount(account_).isModuleEnabled(address(this))) revert ModuleNotEnabled(account_);
        address[] memory owners = ISafeAccount(account_).getOwners();
        if (owners.length != 1 || ISafeAccount(account_).getThreshold() != 1) revert NotSingleOwner(account_);
        // The operator key owning an account would hold it outside every rule here.
        if (owners[0] == operator) revert BadOwner(owners[0]);
        _accounts[account_] = Account(owners[0], token_, collector);
        emit Registered(account_, owners[0], token_, collector);
    }

    /// @notice The calling account refuses the subject of the pending change `id` (a target, a
    /// token or an operator key): the module never uses it for this account, listed or not.
    function optOut(bytes32 id) external {
        _registered(msg.sender);
        address subject = pending[id].subject;
        if (pending[id].eta == 0) revert UnknownChange(id);
        refused[msg.sender][subject] = true;
        emit OptedOut(msg.sender, id, subject);
    }

    /// @notice The calling account takes back its refusal of `subject`.
    function optIn(address subject) external {
        _registered(msg.sender);
        refused[msg.sender][subject] = false;
        emit OptedIn(msg.sender, subject);
    }

    /* ---------------------------------------------------------------- admin */

    /// @notice Proposes `change`; it can be applied `delay` from now. Returns its id.
    function proposeChange(Change calldata change) external returns (bytes32 id) {
        _onlyAdmin();
        if (!isSealed) revert NotSealed();
        _validate(change);
        id = keccak256(abi.encode(change));
        if (pending[id].eta != 0) revert AlreadyPending(id);
        uint256 eta = block.timestamp + delay;
        pending[id] = Pending(uint64(eta), change.subject);
        emit ChangeProposed(id, change, eta);
    }

    /// @notice Applies `change`: at once before `seal` (the initial listing), else once its
    /// proposal has waited `delay`.
    function applyChange(Change calldata change) external {
        _onlyAdmin();
        bytes32 id = keccak256(abi.encode(change));
        if (isSealed) {
            uint256 eta = pending[id].eta;
            if (eta == 0) revert UnknownChange(id);
            if (block.timestamp < eta) revert TooEarly(id, eta);
            delete pending[id];
        }
        _validate(change);
        if (change.kind == ChangeKind.Rule) {
            _rules[change.subject][change.selector] = change.rule;
        } else if (change.kind == ChangeKind.Token) {
            TokenListing calldata t = change.listing;
            if (t.feed == address(0)) {
                delete _tokens[change.subject];
            } else {
                uint8 tokenDecimals = IERC20View(change.subject).decimals();
                uint8 feedDecimals = AggregatorV3Interface(t.feed).decimals();
                _tokens[change.subject] = Priced(t.feed, t.maxAge, t.reward, tokenDecimals, feedDecimals);
            }
        } else {
            operator = change.subject;
        }
        emit ChangeApplied(id, change);
    }

    function cancelChange(bytes32 id) external {
        _onlyAdmin();
        if (pending[id].eta == 0) revert UnknownChange(id);
        delete pending[id];
        emit ChangeCancelled(id);
    }

    /// @notice Ends the initial listing: from now on every change waits `delay`.
    function seal() external {
        _onlyAdmin();
        if (isSealed) revert AlreadySealed();
        if (operator == address(0)) revert BadOperator(address(0));
        isSealed = true;
        emit Sealed();
    }

    /// @notice Pauses or resumes every operator call (not the accounts' own calls) at once.
    function setPaused(bool paused_) external {
        _onlyAdmin();
        paused = paused_;
        emit PausedSet(paused_);
    }

    /// @notice Proposes `newAdmin`, who takes over with `acceptAdmin`. Never the operator: the
    /// operator changes only to an address that is neither the admin nor the pending admin, so
    /// the two keys stay apart whichever step comes first.
    function transferAdmin(address newAdmin) external {
        _onlyAdmin();
        if (newAdmin == operator) revert AdminIsOperator(newAdmin);
        pendingAdmin = newAdmin;
        emit AdminProposed(admin, newAdmin);
    }

    function acceptAdmin() external {
        if (msg.sender != pendingAdmin || msg.sender == address(0)) revert NotPendingAdmin(msg.sender);
        emit AdminAccepted(admin, msg.sender);
        admin = msg.sender;
        pendingAdmin = address(0);
    }

    /* ---------------------------------------------------------------- views */

    function rules(address target, bytes4 selector) external view returns (Rule memory) {
        return _rules[target][selector];
    }

    function tokens(address token) external view returns (Priced memory) {
        return _tokens[token];
    }

    function accounts(address account) external view returns (Account memory) {
        return _accounts[account];
    }

    /// @notice Whether the operator can act for `account_` now: registered, the module still
    /// enabled on its Safe (the source of truth), the operator not refused, not paused.
    function isActive(address account_) external view returns (bool) {
        return _accounts[account_].owner != address(0) && !paused && !refused[account_][operator]
            && ISafeAccount(account_).isModuleEnabled(address(this));
    }

    /// @notice The least a swap of `amountIn` of `tokenIn` into `tokenOut` must yield: the
    /// feeds' value less `maxSlippageBps`. Reverts on a stale or non-positive answer.
    function swapFloor(address tokenIn, address tokenOut, uint256 amountIn) public view returns (uint256) {
        Priced memory pin = _tokens[tokenIn];
        Priced memory pout = _tokens[tokenOut];
        if (pin.feed == address(0) || !pin.reward) revert NotRewardToken(tokenIn);
        if (pout.feed == address(0) || pout.reward) revert BadToken(tokenOut);
        uint256 priceIn = _price(pin);
        uint256 priceOut = _price(pout);
        // amountIn * priceIn / 10^(dIn + fIn) USD, in tokenOut units: * 10^(dOut + fOut) / priceOut
        uint256 scaleUp = 10 ** (uint256(pout.tokenDecimals) + pout.feedDecimals);
        uint256 scaleDown = 10 ** (uint256(pin.tokenDecimals) + pin.feedDecimals);
        return amountIn * priceIn * scaleUp * (BPS - maxSlippageBps) / (priceOut * scaleDown * BPS);
    }

    /* ---------------------------------------------------------------- internals */

    function _onlyAdmin() internal view {
        if (msg.sender != admin) revert NotAdmin(msg.sender);
    }

    function _registered(address account_) internal view returns (Account memory a) {
        a = _accounts[account_];
        if (a.owner == address(0)) revert NotRegistered(account_);
    }

    function _authorize(address account_) internal view returns (Account memory a) {
        if (msg.sender != operator) revert NotOperator(msg.sender);
        if (paused) revert Paused();
        a = _registered(account_);
        if (refused[account_][msg.sender]) revert Refused(account_, msg.sender);
    }

    function _validate(Change calldata c) internal view {
        if (c.subject == address(0) || c.subject == address(this)) revert BadConfig();
        if (c.kind == ChangeKind.Rule) {
            Rule calldata r = c.rule;
            bytes4 s = c.selector;
            // The ERC-20 moves: an allowance or a transfer is the module's to make, never a rule.
            bool tokenMove = s == 0x095ea7b3 || s == 0xa9059cbb || s == 0x23b872dd || s == 0x39509351;
            uint256 inWords = (uint256(1) << r.words) - 1;
            bool bad = tokenMove || _tokens[c.subject].feed != address(0) || r.words > MAX_WORDS
                || r.accountWords & ~inWords != 0 || r.tokenWords & ~inWords != 0;
            if (r.kind == Kind.Supply || r.kind == Kind.Swap) {
                bad = bad || r.amountWord >= r.words || (uint256(r.accountWords | r.tokenWords) >> r.amountWord) & 1 == 1;
            }
            if (r.kind == Kind.Swap) {
                // The reward sold is a word of its own; the proceeds must go to the account.
                bad = bad || r.tokenInWord >= r.words || r.tokenInWord == r.amountWord || r.accountWords == 0
                    || r.tokenWords == 0 || (uint256(r.accountWords | r.tokenWords) >> r.tokenInWord) & 1 == 1;
            }
            if (r.kind == Kind.None) bad = bad || r.words != 0 || r.accountWords != 0 || r.tokenWords != 0;
            if (r.kind != Kind.Withdraw) bad = bad || r.debtOf != 0;
            if (bad) revert BadRule(c.subject, s);
        } else if (c.kind == ChangeKind.Token) {
            if (c.listing.feed != address(0) && c.listing.maxAge == 0) revert BadToken(c.subject);
        } else if (c.subject == admin || c.subject == pendingAdmin) {
            revert AdminIsOperator(c.subject);
        }
    }

    function _run(address account_, Account memory a, address target, bytes calldata data) internal {
        bytes4 selector = data.length >= 4 ? bytes4(data[:4]) : bytes4(0);
        Rule memory r = _rules[target][selector];
        // A listing cannot name a token, but a token listed after its rule is refused here too.
        if (
            r.kind == Kind.None || target == account_ || target == address(this) || target == a.token
                || _tokens[target].feed != address(0)
        ) {
            revert NotListed(target, selector);
        }
        if (refused[account_][target]) revert Refused(account_, target);
        if (data.length != 4 + 32 * uint256(r.words)) revert BadCalldata(target, selector);
        for (uint256 i = 0; i < r.words; ++i) {
            uint256 word = _word(data, i);
            if ((r.accountWords >> i) & 1 == 1 && word != uint256(uint160(account_))) {
                revert NotAccount(target, i, word);
            }
            if ((r.tokenWords >> i) & 1 == 1 && word != uint256(uint160(a.token))) {
                revert NotAccountToken(target, i, word);
            }
        }
        if (r.kind == Kind.Supply) {
            _approved(account_, a.token, target, _word(data, r.amountWord), data);
        } else if (r.kind == Kind.Swap) {
            _swap(account_, a, target, r, data);
        } else {
            uint256 before = IERC20View(a.token).balanceOf(account_);
            _call(account_, target, data);
            uint256 afterwards = IERC20View(a.token).balanceOf(account_);
            if (afterwards < before) revert BalanceFell(a.token, before, afterwards);
            if (r.debtOf != 0) _owesNothing(account_, target, r.debtOf);
        }
        emit Executed(account_, target, selector, r.kind);
    }

    function _swap(address account_, Account memory a, address target, Rule memory r, bytes calldata data) internal {
        uint256 word = _word(data, r.tokenInWord);
        if (word > type(uint160).max) revert NotRewardToken(address(0));
        address tokenIn = address(uint160(word));
        if (tokenIn == a.token) revert NotRewardToken(tokenIn);
        if (refused[account_][tokenIn]) revert Refused(account_, tokenIn);
        if (refused[account_][a.token]) revert Refused(account_, a.token);
        uint256 amountIn = _word(data, r.amountWord);
        uint256 floor = swapFloor(tokenIn, a.token, amountIn);
        // Measured, not taken from the router: what the account holds more of afterwards.
        uint256 before = IERC20View(a.token).balanceOf(account_);
        _approved(account_, tokenIn, target, amountIn, data);
        uint256 afterwards = IERC20View(a.token).balanceOf(account_);
        if (afterwards < before) revert BalanceFell(a.token, before, afterwards);
        if (afterwards - before < floor) revert SwapBelowFeed(afterwards - before, floor);
        emit Swapped(account_, tokenIn, amountIn, afterwards - before, floor);
    }

    /// @dev A withdrawal the target lent instead of paying from the account's balance raised
    /// the balance too, but left a debt the account never chose.
    function _owesNothing(address account_, address target, bytes4 debtOf) internal view {
        (bool ok, bytes memory answer) = target.staticcall(abi.encodeWithSelector(debtOf, account_));
        if (!ok || answer.length != 32) revert CallFailed(target, answer);
        uint256 debt = abi.decode(answer, (uint256));
        if (debt != 0) revert Borrowed(target, debt);
    }

    /// @dev approve(amount) -> the call -> approve(0): no allowance outlives the call.
    function _approved(address account_, address token_, address spender, uint256 amount, bytes calldata data)
        internal
    {
        _token(account_, token_, abi.encodeWithSelector(0x095ea7b3, spender, amount));
        _call(account_, spender, data);
        _token(account_, token_, abi.encodeWithSelector(0x095ea7b3, spender, 0));
        uint256 left = IERC20View(token_).allowance(account_, spender);
        if (left != 0) revert AllowanceLeft(token_, spender, left);
    }

    /// @dev An ERC-20 call from the account; a token answering nothing (USDT) or true succeeds.
    function _token(address account_, address token_, bytes memory data) internal {
        bytes memory answer = _call(account_, token_, data);
        if (answer.length != 0 && (answer.length != 32 || abi.decode(answer, (uint256)) != 1)) {
            revert CallFailed(token_, answer);
        }
    }

    function _call(address account_, address to, bytes memory data) internal returns (bytes memory) {
        (bool ok, bytes memory answer) = ISafeAccount(account_).execTransactionFromModuleReturnData(to, 0, data, CALL);
        if (!ok) revert CallFailed(to, answer);
        return answer;
    }

    function _price(Priced memory p) internal view returns (uint256) {
        (, int256 answer,, uint256 updatedAt,) = AggregatorV3Interface(p.feed).latestRoundData();
        if (answer <= 0) revert BadPrice(p.feed, answer);
        if (updatedAt > block.timestamp || block.timestamp - updatedAt > p.maxAge) {
            revert StalePrice(p.feed, updatedAt);
        }
        return uint256(answer);
    }

    function _word(bytes calldata data, uint256 i) internal pure returns (uint256) {
        return uint256(bytes32(data[4 + 32 * i:36 + 32 * i]));
    }
}
