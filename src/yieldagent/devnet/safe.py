"""Safe 1.4.1 accounts on the devnet: the deterministic deployers, Safe's contracts at their
canonical addresses, and the project's operator module with its initial listing.

As on a production chain:

1. The two deterministic deployers production chains have, the deployment proxy
   ``0x4e59…956C`` and Safe's singleton factory ``0x914d…43d7`` (the same runtime code), are
   installed once with ``anvil_setCode``; nothing after that is written with anvil's methods.
2. ``SafeL2``, ``SafeProxyFactory``, ``CompatibilityFallbackHandler`` and ``MultiSendCallOnly``
   from ``@safe-global/safe-contracts`` 1.4.1's artifacts go through the singleton factory
   with salt 0 and land at their canonical addresses.
3. ``OperatorModuleSetup`` and ``OperatorModule`` (``contracts/src/safe``) go through
   ``0x4e59…`` with fixed salts: the setup contract has no constructor arguments, so it has
   one address on every chain; the module's address follows from its constructor arguments
   (admin, delay, fee and slippage bounds), the same on every chain given the same admin.
4. Two ``DevPriceFeed`` contracts (USDC/USD, COMP/USD) and the initial listing: each
   protocol's supply, withdraw and claim functions, the swap router, the two tokens with
   their feeds, and the operator; then ``seal``, after which every change waits 48 hours.

Every step is skipped when its contract is already there, as the deployers and Safe are on
Base.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from functools import cache
from typing import Any

from eth_typing import ChecksumAddress
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from web3 import Web3
from web3.contract import Contract
from web3.types import TxParams

from yieldagent.composition.deployments import ProtocolDeployment, SafeDeployment
from yieldagent.devnet.deployer import Deployer, DeployError
from yieldagent.devnet.toolchain import NODE_MODULES, Artifact, ToolchainError, compile_project

DETERMINISTIC_DEPLOYER = "0x4e59b44847b379578588920cA78FbF26c0B4956C"
SINGLETON_FACTORY = "0x914d7Fec6aaC8cd542e72Bca78B30650d45643d7"
# The runtime code of both deployers: CREATE2(value, calldata[32:], salt = calldata[:32]).
DEPLOYER_RUNTIME = (
    "0x7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffe03601600081602082378035"
    "828234f58015156039578182fd5b8082525050506014600cf3"
)

# Safe 1.4.1's canonical addresses (CREATE2 through the singleton factory, salt 0).
SAFE_L2 = "0x29fcB43b46531BcA003ddC8FCB67FFE91900C762"
SAFE_PROXY_FACTORY = "0x4e1DCf7AD4e460CfD30791CCC4F9c8a4f820ec67"
COMPATIBILITY_FALLBACK_HANDLER = "0xfd0732Dc9E303f09fCEf3a7388Ad10A83459Ec99"
MULTI_SEND_CALL_ONLY = "0x9641d764fc13c8B624c04430C7356C1C7C8102e2"
SAFE_CONTRACTS = {
    "SafeL2": ("SafeL2.sol/SafeL2", SAFE_L2),
    "SafeProxyFactory": ("proxies/SafeProxyFactory.sol/SafeProxyFactory", SAFE_PROXY_FACTORY),
    "CompatibilityFallbackHandler": (
        "handler/CompatibilityFallbackHandler.sol/CompatibilityFallbackHandler",
        COMPATIBILITY_FALLBACK_HANDLER,
    ),
    "MultiSendCallOnly": (
        "libraries/MultiSendCallOnly.sol/MultiSendCallOnly",
        MULTI_SEND_CALL_ONLY,
    ),
}
SAFE_ARTIFACTS = NODE_MODULES / "@safe-global" / "safe-contracts" / "build" / "artifacts"

MODULE_SALT = keccak(text="yieldagent.operator-module.v1")
SETUP_SALT = keccak(text="yieldagent.operator-module-setup.v1")
TIMELOCK_DELAY = 48 * 3600  # seconds: the module's floor (MIN_DELAY) and the devnet's delay
MAX_FEE_BPS = 1_000  # a fee is at most 10% of a payment (owner's part + fee)
MAX_SLIPPAGE_BPS = 100  # a reward swap yields at least 99% of the feeds' value
# Chainlink's USDC/USD and COMP/USD on Base refresh at least daily (heartbeat 86,400 s); the
# devnet's feeds are set once and its clock is moved by days in tests, so they stay fresh for
# a year here. A production listing uses the feed's heartbeat plus a margin.
DEVNET_FEED_MAX_AGE = 365 * 86_400
FEED_DECIMALS = 8
USDC_PRICE = 10**FEED_DECIMALS  # 1.00 USD
COMP_PRICE = 50 * 10**FEED_DECIMALS  # 50 USD: the devnet router's pool (5M USDC / 100k COMP)


class Kind(IntEnum):
    """``OperatorModule.Kind``."""

    NONE = 0
    SUPPLY = 1
    WITHDRAW = 2
    CLAIM = 3
    SWAP = 4


class ChangeKind(IntEnum):
    """``OperatorModule.ChangeKind``."""

    RULE = 0
    TOKEN = 1
    OPERATOR = 2


@dataclass(frozen=True)
class Rule:
    """``OperatorModule.Rule`` for one (target, function): which argument words must be the
    account, which the account's token, which is the amount (supply, swap) and which the
    reward token sold (swap); for a withdrawal, the target's view of what the account owes it
    (``debt_of``, a signature), which must answer 0 afterwards."""

    kind: Kind
    words: int
    amount_word: int = 0
    token_in_word: int = 0
    account_words: tuple[int, ...] = ()
    token_words: tuple[int, ...] = ()
    debt_of: str = ""

    def as_tuple(self) -> tuple[int, int, int, int, int, int, bytes]:
        """The ABI tuple ``(kind, words, amountWord, tokenInWord, accountWords, tokenWords,
        debtOf)``."""
        return (
            int(self.kind),
            self.words,
            self.amount_word,
            self.token_in_word,
            sum(1 << i for i in self.account_words),
            sum(1 << i for i in self.token_words),
            selector(self.debt_of) if self.debt_of else bytes(4),
        )


NO_LISTING = ("0x" + "00" * 20, 0, False)
NO_RULE = Rule(Kind.NONE, 0)

# What each protocol model's contracts may be asked, as function signature -> rule.
RULES_BY_MODEL: dict[str, dict[str, Rule]] = {
    "aave_v3": {  # the Pool: onBehalfOf and to are the account, asset its token
        "supply(address,uint256,address,uint16)": Rule(Kind.SUPPLY, 4, 1, 0, (2,), (0,)),
        "withdraw(address,uint256,address)": Rule(Kind.WITHDRAW, 3, 0, 0, (2,), (0,)),
    },
    "compound_v3": {  # the Comet credits and pays msg.sender; asset is the base token
        "supply(address,uint256)": Rule(Kind.SUPPLY, 2, 1, 0, (), (0,)),
        # beyond the balance, withdraw borrows (against collateral anyone may supply for us)
        "withdraw(address,uint256)": Rule(
            Kind.WITHDRAW, 2, 0, 0, (), (0,), "borrowBalanceOf(address)"
        ),
    },
    "moonwell": {  # the mToken credits and pays msg.sender
        "mint(uint256)": Rule(Kind.SUPPLY, 1, 0),
        "redeem(uint256)": Rule(Kind.WITHDRAW, 1),
        "redeemUnderlying(uint256)": Rule(Kind.WITHDRAW, 1),
    },
    "morpho_blue": {  # the ERC-4626 vault: receiver and owner are the account
        "deposit(uint256,address)": Rule(Kind.SUPPLY, 2, 0, 0, (1,)),
        "withdraw(uint256,address,address)": Rule(Kind.WITHDRAW, 3, 0, 0, (1, 2)),
        "redeem(uint256,address,address)": Rule(Kind.WITHDRAW, 3, 0, 0, (1, 2)),
    },
}
# CometRewards.claim(comet, src, shouldAccrue) pays src.
CLAIM_RULES = {"claim(address,address,bool)": Rule(Kind.CLAIM, 3, 0, 0, (1,))}
# SwapRouter.swap(tokenIn, tokenOut, amountIn, minOut, to): a reward into the account's token.
SWAP_RULES = {"swap(address,address,uint256,uint256,address)": Rule(Kind.SWAP, 5, 2, 0, (4,), (1,))}


def selector(signature: str) -> bytes:
    """The 4-byte selector of a function signature."""
    return keccak(text=signature)[:4]


@cache
def safe_artifact(name: str) -> Artifact:
    """A contract of ``@safe-global/safe-contracts`` 1.4.1 from the artifacts it ships."""
    try:
        relative, _ = SAFE_CONTRACTS[name]
    except KeyError:
        relative = {"SafeProxy": "proxies/SafeProxy.sol/SafeProxy", "Safe": "Safe.sol/Safe"}[name]
    path = SAFE_ARTIFACTS / "contracts" / f"{relative}.json"
    if not path.is_file():
        raise ToolchainError(f"{path} is missing: run `npm install --prefix contracts`")
    raw = json.loads(path.read_text())
    return Artifact(
        name=raw["contractName"],
        abi=raw["abi"],
        bytecode=raw["bytecode"],
        deployed_bytecode=raw["deployedBytecode"],
        link_references=raw["linkReferences"],
    )


def create2_address(deployer: str, salt: bytes, initcode: bytes) -> ChecksumAddress:
    """Where ``deployer`` puts ``initcode`` with ``salt`` (EIP-1014)."""
    raw = keccak(b"\xff" + bytes.fromhex(deployer[2:]) + salt + keccak(initcode))[12:]
    return to_checksum_address(raw)


def install_deployers(d: Deployer) -> None:
    """Writes the two deterministic deployers' runtime code where production chains have it
    (once: a chain that has them is left alone)."""
    for address in (DETERMINISTIC_DEPLOYER, SINGLETON_FACTORY):
        if len(d.w3.eth.get_code(to_checksum_address(address))) == 0:
            d.anvil("anvil_setCode", address, DEPLOYER_RUNTIME)


def deploy_deterministic(d: Deployer, factory: str, salt: bytes, initcode: bytes) -> str:
    """CREATE2s ``initcode`` through ``factory`` (a deterministic deployer) with ``salt`` in
    an ordinary transaction from ``d.admin``; returns the address (left alone if deployed)."""
    address = to_checksum_address(create2_address(factory, salt, initcode))
    if len(d.w3.eth.get_code(address)) > 0:
        return address
    tx: TxParams = {
        "from": d.admin,
        "to": to_checksum_address(factory),
        "data": Web3.to_hex(salt + initcode),
    }
    tx["gas"] = d.w3.eth.estimate_gas(tx) * 6 // 5
    receipt = d.w3.eth.wait_for_transaction_receipt(d.w3.eth.send_transaction(tx), timeout=60)
    if receipt["status"] != 1 or len(d.w3.eth.get_code(address)) == 0:
        raise DeployError(f"CREATE2 through {factory} left no code at {address}")
    return address


def deploy_safe_contracts(d: Deployer) -> dict[str, str]:
    """Safe 1.4.1 at its canonical addresses, by contract name."""
    addresses: dict[str, str] = {}
    for name, (_, canonical) in SAFE_CONTRACTS.items():
        initcode = bytes.fromhex(safe_artifact(name).bytecode.removeprefix("0x"))
        address = deploy_deterministic(d, SINGLETON_FACTORY, bytes(32), initcode)
        if address != canonical:
            raise DeployError(f"{name} landed at {address}, not at Safe's {canonical}")
        addresses[name] = address
    return addresses


def module_initcode(admin: str) -> bytes:
    """The operator module's creation code with its constructor arguments."""
    artifact = compile_project()["OperatorModule"]
    factory = Web3().eth.contract(abi=artifact.abi, bytecode=artifact.bytecode)
    data = factory.constructor(
        to_checksum_address(admin), TIMELOCK_DELAY, MAX_FEE_BPS, MAX_SLIPPAGE_BPS
    ).data_in_transaction
    return bytes.fromhex(str(data).removeprefix("0x"))


def module_at(d: Deployer, address: str) -> Contract:
    """The ``OperatorModule`` at ``address``."""
    return d.at(compile_project()["OperatorModule"], address)


def rule_change(target: str, signature: str, rule: Rule) -> tuple[Any, ...]:
    """``OperatorModule.Change`` listing ``target.signature`` under ``rule`` (``NO_RULE``
    unlists it)."""
    return (
        int(ChangeKind.RULE),
        to_checksum_address(target),
        selector(signature),
        rule.as_tuple(),
        NO_LISTING,
    )


def token_change(token: str, feed: str, max_age: int, *, reward: bool) -> tuple[Any, ...]:
    """``OperatorModule.Change`` pricing ``token`` with ``feed`` (zero address: unlists)."""
    return (
        int(ChangeKind.TOKEN),
        to_checksum_address(token),
        bytes(4),
        NO_RULE.as_tuple(),
        (to_checksum_address(feed), max_age, reward),
    )


def operator_change(operator: str) -> tuple[Any, ...]:
    """``OperatorModule.Change`` making ``operator`` the operator key."""
    return (
        int(ChangeKind.OPERATOR),
        to_checksum_address(operator),
        bytes(4),
        NO_RULE.as_tuple(),
        NO_LISTING,
    )


def protocol_rules(
    protocols: Iterable[ProtocolDeployment], swap_router: str | None
) -> list[tuple[str, str, Rule]]:
    """The devnet's listing: (target, function signature, rule) for every protocol's entry
    contract, its rewards contract and the swap router."""
    listed: list[tuple[str, str, Rule]] = []
    for protocol in protocols:
        for signature, rule in RULES_BY_MODEL[protocol.kind].items():
            listed.append((protocol.address, signature, rule))
        if "rewards" in protocol.contracts:
            for signature, rule in CLAIM_RULES.items():
                listed.append((protocol.contracts["rewards"], signature, rule))
    if swap_router is not None:
        for signature, rule in SWAP_RULES.items():
            listed.append((swap_router, signature, rule))
    return listed


def deploy_feed(d: Deployer, description: str, answer: int) -> str:
    """A ``DevPriceFeed`` (8 decimals) answering ``answer``, settable by ``d.admin``."""
    feed = d.deploy(compile_project()["DevPriceFeed"], FEED_DECIMALS, description, answer)
    return str(feed.address)


def deploy_safe(
    d: Deployer,
    usdc: str,
    protocols: Sequence[ProtocolDeployment],
    operator: str,
    *,
    reward_token: str | None = None,
    swap_router: str | None = None,
) -> SafeDeployment:
    """Everything a ``safe`` account needs on the devnet (see the module docstring).

    The module's admin is ``d.admin`` (anvil's account 0), or account 1 when ``operator`` is
    account 0: the module refuses an operator that is its admin.
    """
    operator = to_checksum_address(operator)
    admin = to_checksum_address(d.admin if operator != d.admin else d.accounts[1])
    install_deployers(d)
    safe = deploy_safe_contracts(d)
    artifacts = compile_project()
    setup_code = bytes.fromhex(artifacts["OperatorModuleSetup"].bytecode.removeprefix("0x"))
    setup = deploy_deterministic(d, DETERMINISTIC_DEPLOYER, SETUP_SALT, setup_code)
    module_address = deploy_deterministic(
        d, DETERMINISTIC_DEPLOYER, MODULE_SALT, module_initcode(admin)
    )
    module = module_at(d, module_address)
    base = to_checksum_address(usdc)
    feeds: dict[str, str] = {base: deploy_feed(d, "USDC / USD", USDC_PRICE)}
    if reward_token is not None:
        feeds[to_checksum_address(reward_token)] = deploy_feed(d, "COMP / USD", COMP_PRICE)
    if not module.functions.isSealed().call():
        changes = [rule_change(t, s, r) for t, s, r in protocol_rules(protocols, swap_router)]
        changes += [
            token_change(token, feed, DEVNET_FEED_MAX_AGE, reward=token != base)
            for token, feed in feeds.items()
        ]
        changes.append(operator_change(operator))
        for change in changes:
            d.transact(module.functions.applyChange(change), sender=admin)
        d.transact(module.functions.seal(), sender=admin)
    return SafeDeployment(
        factory=safe["SafeProxyFactory"],
        singleton=safe["SafeL2"],
        fallback_handler=safe["CompatibilityFallbackHandler"],
        multi_send_call_only=safe["MultiSendCallOnly"],
        module_setup=setup,
        module=module_address,
        admin=admin,
        operator=operator,
        price_feeds=feeds,
    )
