"""The production ABI fragments the web3 adapter calls: each function by its signature.

Only what the adapter reads or sends is here, spelled as the production contracts spell it
(Aave v3 Pool and DefaultReserveInterestRateStrategy, Compound v3 Comet and CometRewards,
Moonwell's MToken and JumpRateModel, Morpho Blue, its AdaptiveCurveIrm and an ERC-4626
vault, ERC-20, Safe's ``isModuleEnabled`` and the operator module). A ``Fn`` encodes
calldata and decodes return data with ``eth_abi``; nothing here talks to a node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eth_abi.abi import decode, encode
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak


def _split_types(types: str) -> tuple[str, ...]:
    """Top-level comma-separated ABI types of ``types`` (without its outer parentheses)."""
    parts: list[str] = []
    depth = 0
    current = ""
    for char in types:
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        current += char
    if current:
        parts.append(current)
    return tuple(parts)


def _checksummed(abi_type: str, value: Any) -> Any:
    """``value`` of ``abi_type`` with every address in it checksummed."""
    if abi_type.endswith("]"):
        inner = abi_type[: abi_type.rindex("[")]
        return [_checksummed(inner, v) for v in value]
    if abi_type.startswith("("):
        types = _split_types(abi_type[1:-1])
        return tuple(_checksummed(t, v) for t, v in zip(types, value, strict=True))
    return to_checksum_address(value) if abi_type == "address" else value


@dataclass(frozen=True, slots=True)
class Fn:
    """One contract function: ``Fn("balanceOf(address)", "uint256")``."""

    signature: str
    """Canonical signature, as hashed for the selector: ``name(type,...)``."""
    returns: str = ""
    """Comma-separated return types (tuples in parentheses); empty for none."""
    selector: bytes = field(init=False)
    inputs: tuple[str, ...] = field(init=False)
    outputs: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        name, _, rest = self.signature.partition("(")
        if not name or not rest.endswith(")"):
            raise ValueError(f"not a function signature: {self.signature!r}")
        object.__setattr__(self, "selector", keccak(text=self.signature)[:4])
        object.__setattr__(self, "inputs", _split_types(rest[:-1]))
        object.__setattr__(self, "outputs", _split_types(self.returns))

    @property
    def name(self) -> str:
        """The function's name."""
        return self.signature.partition("(")[0]

    def encode(self, *args: Any) -> bytes:
        """Calldata: the selector and the ABI-encoded ``args``."""
        return self.selector + encode(list(self.inputs), list(args))

    def decode(self, data: bytes) -> tuple[Any, ...]:
        """The decoded return values; addresses in their EIP-55 form."""
        values = decode(list(self.outputs), data)
        return tuple(_checksummed(t, v) for t, v in zip(self.outputs, values, strict=True))


TRANSFER_TOPIC = keccak(text="Transfer(address,address,uint256)")
"""topic0 of an ERC-20 ``Transfer(address indexed from, address indexed to, uint256)``."""

# -- ERC-20 --------------------------------------------------------------------
BALANCE_OF = Fn("balanceOf(address)", "uint256")
TOTAL_SUPPLY = Fn("totalSupply()", "uint256")
TRANSFER = Fn("transfer(address,uint256)", "bool")
APPROVE = Fn("approve(address,uint256)", "bool")
DECIMALS = Fn("decimals()", "uint8")
SYMBOL = Fn("symbol()", "string")
FEED_LATEST_ROUND_DATA = Fn("latestRoundData()", "uint80,int256,uint256,uint256,uint80")
"""Chainlink's AggregatorV3: (roundId, answer, startedAt, updatedAt, answeredInRound)."""

# -- Aave v3 Pool and its rate strategy -----------------------------------------
AAVE_RESERVE_DATA = Fn(
    "getReserveData(address)",
    "((uint256),uint128,uint128,uint128,uint128,uint128,uint40,uint16,"
    "address,address,address,address,uint128,uint128,uint128)",
)
"""The ReserveData struct: configuration, indexes, rates, token and strategy addresses."""
AAVE_CONFIGURATION = Fn("getConfiguration(address)", "(uint256)")
AAVE_SUPPLY = Fn("supply(address,uint256,address,uint16)")
AAVE_WITHDRAW = Fn("withdraw(address,uint256,address)", "uint256")
AAVE_OPTIMAL_USAGE_RATIO = Fn("OPTIMAL_USAGE_RATIO()", "uint256")
AAVE_BASE_VARIABLE_BORROW_RATE = Fn("getBaseVariableBorrowRate()", "uint256")
AAVE_VARIABLE_RATE_SLOPE1 = Fn("getVariableRateSlope1()", "uint256")
AAVE_VARIABLE_RATE_SLOPE2 = Fn("getVariableRateSlope2()", "uint256")

# -- Compound v3 (Comet) and CometRewards ----------------------------------------
COMET_SUPPLY = Fn("supply(address,uint256)")
COMET_WITHDRAW = Fn("withdraw(address,uint256)")
COMET_TOTAL_BORROW = Fn("totalBorrow()", "uint256")
COMET_UTILIZATION = Fn("getUtilization()", "uint256")
COMET_SUPPLY_RATE = Fn("getSupplyRate(uint256)", "uint64")
COMET_BASE_TOKEN = Fn("baseToken()", "address")
COMET_SUPPLY_PAUSED = Fn("isSupplyPaused()", "bool")
COMET_WITHDRAW_PAUSED = Fn("isWithdrawPaused()", "bool")
COMET_SUPPLY_KINK = Fn("supplyKink()", "uint256")
COMET_SUPPLY_BASE = Fn("supplyPerSecondInterestRateBase()", "uint256")
COMET_SUPPLY_SLOPE_LOW = Fn("supplyPerSecondInterestRateSlopeLow()", "uint256")
COMET_SUPPLY_SLOPE_HIGH = Fn("supplyPerSecondInterestRateSlopeHigh()", "uint256")
COMET_BORROW_KINK = Fn("borrowKink()", "uint256")
COMET_BORROW_BASE = Fn("borrowPerSecondInterestRateBase()", "uint256")
COMET_BORROW_SLOPE_LOW = Fn("borrowPerSecondInterestRateSlopeLow()", "uint256")
COMET_BORROW_SLOPE_HIGH = Fn("borrowPerSecondInterestRateSlopeHigh()", "uint256")
REWARDS_OWED = Fn("getRewardOwed(address,address)", "(address,uint256)")
"""CometRewards: (reward token, amount owed); accrues, so it is read with eth_call."""
REWARDS_CLAIM = Fn("claim(address,address,bool)")

# -- Moonwell MToken and JumpRateModel --------------------------------------------
MTOKEN_MINT = Fn("mint(uint256)", "uint256")
MTOKEN_REDEEM_UNDERLYING = Fn("redeemUnderlying(uint256)", "uint256")
MTOKEN_REDEEM = Fn("redeem(uint256)", "uint256")
MTOKEN_BALANCE_OF_UNDERLYING = Fn("balanceOfUnderlying(address)", "uint256")
"""Accrues interest first, so it is read with eth_call (never sent)."""
MTOKEN_CASH = Fn("getCash()", "uint256")
MTOKEN_TOTAL_BORROWS = Fn("totalBorrows()", "uint256")
MTOKEN_TOTAL_RESERVES = Fn("totalReserves()", "uint256")
MTOKEN_RESERVE_FACTOR = Fn("reserveFactorMantissa()", "uint256")
MTOKEN_RATE_MODEL = Fn("interestRateModel()", "address")
MTOKEN_ACCRUAL_TIMESTAMP = Fn("accrualBlockTimestamp()", "uint256")
MTOKEN_BORROW_RATE = Fn("borrowRatePerTimestamp()", "uint256")
MTOKEN_SUPPLY_RATE = Fn("supplyRatePerTimestamp()", "uint256")
MTOKEN_EXCHANGE_RATE = Fn("exchangeRateStored()", "uint256")
MTOKEN_COMPTROLLER = Fn("comptroller()", "address")
COMPTROLLER_MINT_PAUSED = Fn("mintGuardianPaused(address)", "bool")
"""The pause guardian's switch on supplying to a market (Compound v2 pauses no redeeming)."""
JUMP_BASE_RATE = Fn("baseRatePerTimestamp()", "uint256")
JUMP_MULTIPLIER = Fn("multiplierPerTimestamp()", "uint256")
JUMP_JUMP_MULTIPLIER = Fn("jumpMultiplierPerTimestamp()", "uint256")
JUMP_KINK = Fn("kink()", "uint256")

# -- Morpho Blue, its adaptive curve IRM, and an ERC-4626 vault ---------------------
MORPHO_MARKET = Fn("market(bytes32)", "uint128,uint128,uint128,uint128,uint128,uint128")
"""(totalSupplyAssets, totalSupplyShares, totalBorrowAssets, totalBorrowShares, lastUpdate,
fee): stored, without the interest accrued since lastUpdate."""
MORPHO_POSITION = Fn("position(bytes32,address)", "uint256,uint128,uint128")
MORPHO_MARKET_PARAMS = Fn("idToMarketParams(bytes32)", "address,address,address,address,uint256")
IRM_RATE_AT_TARGET = Fn("rateAtTarget(bytes32)", "int256")
IRM_BORROW_RATE_VIEW = Fn(
    "borrowRateView((address,address,address,address,uint256),"
    "(uint128,uint128,uint128,uint128,uint128,uint128))",
    "uint256",
)
VAULT_DEPOSIT = Fn("deposit(uint256,address)", "uint256")
VAULT_WITHDRAW = Fn("withdraw(uint256,address,address)", "uint256")
VAULT_REDEEM = Fn("redeem(uint256,address,address)", "uint256")
VAULT_CONVERT_TO_ASSETS = Fn("convertToAssets(uint256)", "uint256")
VAULT_TOTAL_ASSETS = Fn("totalAssets()", "uint256")
VAULT_FEE = Fn("fee()", "uint96")
"""MetaMorpho's performance fee on interest (WAD)."""

# -- swap router (the devnet's constant-product pool) ---------------------------------
ROUTER_AMOUNT_OUT = Fn("getAmountOut(address,address,uint256)", "uint256")
ROUTER_SWAP = Fn("swap(address,address,uint256,uint256,address)", "uint256")

# -- Safe 1.4.1 and the operator module (contracts/src/safe) -------------------------
SAFE_IS_MODULE_ENABLED = Fn("isModuleEnabled(address)", "bool")
MODULE_EXECUTE = Fn("execute(address,(address,bytes)[])")
MODULE_PAY = Fn("pay(address,uint256,uint256)")
MODULE_ACCOUNTS = Fn("accounts(address)", "(address,address,address)")
"""The account's registered owner, token and fee collector."""
SAFE_CREATE_PROXY = Fn("createProxyWithNonce(address,bytes,uint256)", "address")
"""Safe's factory deploying an account (``domain.partners.safe_accounts`` encodes it)."""

# -- custom errors the adapter can name -------------------------------------------------
CUSTOM_ERRORS = {
    e.selector: e
    for e in (
        Fn("NotOperator(address)"),
        Fn("NotRegistered(address)"),
        Fn("Paused()"),
        Fn("NotListed(address,bytes4)"),
        Fn("Refused(address,address)"),
        Fn("BadCalldata(address,bytes4)"),
        Fn("NotAccount(address,uint256,uint256)"),
        Fn("NotAccountToken(address,uint256,uint256)"),
        Fn("CallFailed(address,bytes)"),
        Fn("AllowanceLeft(address,address,uint256)"),
        Fn("BalanceFell(address,uint256,uint256)"),
        Fn("NotRewardToken(address)"),
        Fn("StalePrice(address,uint256)"),
        Fn("SwapBelowFeed(uint256,uint256)"),
        Fn("NoOwnerPayment()"),
        Fn("FeeAboveBound(uint256,uint256)"),
        Fn("BadCollector(address)"),
        Fn("OwnerChanged(address,address)"),
        Fn("Borrowed(address,uint256)"),
        Fn("NotEnoughLiquidity(uint256)"),
        Fn("InsufficientCash()"),
        Fn("ZeroAmount()"),
        Fn("NoPool(address,address)"),
    )
}
"""The operator module's and the pools' custom errors, by selector."""


def custom_error(data: bytes | None) -> str | None:
    """``Name(arg, ...)`` of a known custom error's revert data; None for others."""
    if not data or data[:4] not in CUSTOM_ERRORS:
        return None
    error = CUSTOM_ERRORS[data[:4]]
    try:
        args = decode(list(error.inputs), data[4:])
    except Exception:
        return f"{error.name}(…)"
    values = (_checksummed(t, a) for t, a in zip(error.inputs, args, strict=True))
    shown = (f"0x{a.hex()}" if isinstance(a, bytes) else str(a) for a in values)
    return f"{error.name}({', '.join(shown)})"


def custom_error_named(reason: str) -> str | None:
    """The name of the known custom error a reason ``custom error 0x…`` gives by selector."""
    prefix = "custom error 0x"
    if not reason.startswith(prefix):
        return None
    try:
        selector = bytes.fromhex(reason[len(prefix) : len(prefix) + 8])
    except ValueError:
        return None
    error = CUSTOM_ERRORS.get(selector)
    return None if error is None else f"{error.name} (0x{selector.hex()})"
