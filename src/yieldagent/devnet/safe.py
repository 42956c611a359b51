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
from collections.abc import Sequence
from functools import cache

from eth_utils.address import to_checksum_address
from web3 import Web3
from web3.contract import Contract
from web3.types import TxParams

from yieldagent.chain.web3.module_listing import CLAIM_RULES as CLAIM_RULES
from yieldagent.chain.web3.module_listing import DETERMINISTIC_DEPLOYER as DETERMINISTIC_DEPLOYER
from yieldagent.chain.web3.module_listing import MAX_FEE_BPS as MAX_FEE_BPS
from yieldagent.chain.web3.module_listing import MAX_SLIPPAGE_BPS as MAX_SLIPPAGE_BPS
from yieldagent.chain.web3.module_listing import MIN_DELAY, initial_listing
from yieldagent.chain.web3.module_listing import MODULE_SALT as MODULE_SALT
from yieldagent.chain.web3.module_listing import NO_LISTING as NO_LISTING
from yieldagent.chain.web3.module_listing import NO_RULE as NO_RULE
from yieldagent.chain.web3.module_listing import RULES_BY_MODEL as RULES_BY_MODEL
from yieldagent.chain.web3.module_listing import SETUP_SALT as SETUP_SALT
from yieldagent.chain.web3.module_listing import SWAP_RULES as SWAP_RULES
from yieldagent.chain.web3.module_listing import ChangeKind as ChangeKind
from yieldagent.chain.web3.module_listing import Kind as Kind
from yieldagent.chain.web3.module_listing import Rule as Rule
from yieldagent.chain.web3.module_listing import create2_address as create2_address
from yieldagent.chain.web3.module_listing import operator_change as operator_change
from yieldagent.chain.web3.module_listing import protocol_rules as protocol_rules
from yieldagent.chain.web3.module_listing import rule_change as rule_change
from yieldagent.chain.web3.module_listing import selector as selector
from yieldagent.chain.web3.module_listing import token_change as token_change
from yieldagent.composition.deployments import ProtocolDeployment, SafeDeployment
from yieldagent.devnet.deployer import Deployer, DeployError
from yieldagent.devnet.toolchain import NODE_MODULES, Artifact, ToolchainError, compile_project

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

# The devnet's module takes the bounds the README states.
TIMELOCK_DELAY = MIN_DELAY  # seconds: the module's floor and the devnet's delay
# Chainlink's USDC/USD and COMP/USD on Base refresh at least daily (heartbeat 86,400 s); the
# devnet's feeds are set once and its clock is moved by days in tests, so they stay fresh for
# a year here. A production listing uses the feed's heartbeat plus a margin.
DEVNET_FEED_MAX_AGE = 365 * 86_400
FEED_DECIMALS = 8
USDC_PRICE = 10**FEED_DECIMALS  # 1.00 USD
COMP_PRICE = 50 * 10**FEED_DECIMALS  # 50 USD: the devnet router's pool (5M USDC / 100k COMP)


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
        changes = initial_listing(
            protocols, swap_router, feeds, base, DEVNET_FEED_MAX_AGE, operator
        )
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
