"""Deploys the operator module and its set-up contract on a chain, lists the chain's
protocols, and seals it: what ``yieldagent operator deploy-module`` does, so that no one
writes a manifest's module by hand.

Both contracts go through the deterministic deployment proxy (``0x4e59…956C``, on every
production chain) with the project's fixed salts, as on the devnet: the set-up contract has
one address everywhere; the module's follows from its constructor arguments (admin, delay,
fee and swap bounds). The deploying key is the module's first admin: only the admin lists
before ``seal``. Once sealed, the tool hands the admin over (``transferAdmin``) to the
admin named (a Safe multisig), which takes over with ``acceptAdmin``; the service refuses to
start until it has. Each step is skipped when the chain already shows it done, so a run
that stopped half-way is finished by running it again.

The transactions are signed here with the deploying key (never the operator's: the module
refuses an operator that is its admin) and sent one at a time, each waited for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eth_abi.abi import encode
from eth_account import Account
from eth_utils.address import to_checksum_address
from web3 import Web3

from yieldagent.chain.web3.abis import Fn
from yieldagent.chain.web3.module_code import shipped_code
from yieldagent.chain.web3.module_listing import (
    APPLY_CHANGE,
    DETERMINISTIC_DEPLOYER,
    MAX_FEE_BPS,
    MAX_SLIPPAGE_BPS,
    MIN_DELAY,
    MODULE_SALT,
    SEAL,
    SETUP_SALT,
    TRANSFER_ADMIN,
    ListedProtocol,
    create2_address,
    initial_listing,
)
from yieldagent.domain.errors import ConfigurationError

_IS_SEALED = Fn("isSealed()", "bool")
_ADMIN = Fn("admin()", "address")
_PENDING_ADMIN = Fn("pendingAdmin()", "address")
RECEIPT_TIMEOUT_SECONDS = 180


@dataclass(frozen=True)
class ModulePlan:
    """What to deploy on one chain.

    ``feeds``: the price feed (Chainlink AggregatorV3, token / USD) of the base token and of
    each reward token the swap router may sell, by token; ``feed_max_age`` the seconds after
    which a feed's answer is stale (its heartbeat plus a margin).
    """

    chain_id: int
    admin: str
    operator: str
    token: str
    protocols: Sequence[ListedProtocol]
    swap_router: str | None
    feeds: Mapping[str, str]
    feed_max_age: int
    delay: int = MIN_DELAY
    max_fee_bps: int = MAX_FEE_BPS
    max_slippage_bps: int = MAX_SLIPPAGE_BPS


@dataclass(frozen=True)
class DeployedModule:
    """Where the module and its set-up contract are, and who holds them now."""

    module: str
    module_setup: str
    admin: str
    """The module's admin on chain now (the deploying key until ``acceptAdmin``)."""
    pending_admin: str | None
    """The admin named, when it has yet to accept."""
    operator: str
    transactions: list[str] = field(default_factory=list)
    """The hashes of the transactions this run sent, in order."""


def module_initcode(admin: str, delay: int, max_fee_bps: int, max_slippage_bps: int) -> bytes:
    """The module's creation code with its constructor arguments."""
    arguments = encode(
        ["address", "uint256", "uint256", "uint256"],
        [to_checksum_address(admin), delay, max_fee_bps, max_slippage_bps],
    )
    return shipped_code().module.bytecode + arguments


def plan_problems(plan: ModulePlan, deployer: str) -> list[str]:
    """Why ``plan`` must not be deployed by ``deployer`` (empty: it may)."""
    problems = []
    if plan.delay < MIN_DELAY:
        problems.append(f"the delay {plan.delay} s is below {MIN_DELAY} s (48 hours)")
    if plan.max_fee_bps > MAX_FEE_BPS:
        problems.append(f"the fee bound {plan.max_fee_bps} bps is above {MAX_FEE_BPS}")
    if plan.max_slippage_bps > MAX_SLIPPAGE_BPS:
        problems.append(f"the swap bound {plan.max_slippage_bps} bps is above {MAX_SLIPPAGE_BPS}")
    operator = to_checksum_address(plan.operator)
    if operator in (to_checksum_address(plan.admin), to_checksum_address(deployer)):
        problems.append("the operator key must be neither the admin nor the deploying key")
    if to_checksum_address(plan.token) not in {to_checksum_address(t) for t in plan.feeds}:
        problems.append(f"no price feed for the base token {plan.token} (--feed TOKEN=FEED)")
    if plan.feed_max_age <= 0:
        problems.append("the feeds' maximum age must be positive")
    return problems


class _Sender:
    """Signs and sends the deploying key's transactions, one at a time."""

    def __init__(self, w3: Web3, private_key: bytes, chain_id: int) -> None:
        self.w3 = w3
        self.account = Account.from_key(private_key)
        self.chain_id = chain_id
        self.sent: list[str] = []

    def call(self, to: str, fn: Fn, *args: Any) -> Any:
        data = self.w3.eth.call({"to": to_checksum_address(to), "data": fn.encode(*args)})
        [value] = fn.decode(bytes(data))
        return value

    def send(self, to: str, data: bytes, what: str) -> None:
        address = self.account.address
        tx: dict[str, Any] = {
            "from": address,
            "to": to_checksum_address(to),
            "data": "0x" + data.hex(),
            "value": 0,
            "chainId": self.chain_id,
            "nonce": self.w3.eth.get_transaction_count(address, "pending"),
        }
        tx["gas"] = self.w3.eth.estimate_gas(tx) * 6 // 5  # type: ignore[arg-type]
        base = int(self.w3.eth.get_block("latest").get("baseFeePerGas", 0))
        tip = int(self.w3.eth.max_priority_fee)
        tx.update(type=2, maxPriorityFeePerGas=tip, maxFeePerGas=2 * base + tip)
        del tx["from"]
        signed = self.account.sign_transaction(tx)
        tx_hash = self.w3.eth.send_raw_transaction(signed.raw_transaction)
        self.sent.append("0x" + bytes(tx_hash).hex())
        receipt = self.w3.eth.wait_for_transaction_receipt(tx_hash, timeout=RECEIPT_TIMEOUT_SECONDS)
        if receipt["status"] != 1:
            raise ConfigurationError(f"{what} reverted (transaction {self.sent[-1]})")


def _deploy_deterministic(sender: _Sender, salt: bytes, initcode: bytes, what: str) -> str:
    address = create2_address(DETERMINISTIC_DEPLOYER, salt, initcode)
    if len(sender.w3.eth.get_code(address)) == 0:
        sender.send(DETERMINISTIC_DEPLOYER, salt + initcode, f"deploying {what}")
        if len(sender.w3.eth.get_code(address)) == 0:
            raise ConfigurationError(f"deploying {what} left no code at {address}")
    return address


def deploy_module(w3: Web3, private_key: bytes, plan: ModulePlan) -> DeployedModule:
    """Deploys, lists and seals the module of ``plan`` with the deploying key
    ``private_key``, then names ``plan.admin`` its next admin; raises
    ``ConfigurationError`` naming what stops it."""
    sender = _Sender(w3, private_key, plan.chain_id)
    deployer = sender.account.address
    problems = plan_problems(plan, deployer)
    if w3.eth.chain_id != plan.chain_id:
        problems.append(f"the node serves chain {w3.eth.chain_id}, not {plan.chain_id}")
    if len(w3.eth.get_code(to_checksum_address(DETERMINISTIC_DEPLOYER))) == 0:
        problems.append(f"the chain has no deterministic deployer at {DETERMINISTIC_DEPLOYER}")
    if problems:
        raise ConfigurationError("the module cannot be deployed:\n" + "\n".join(problems))
    code = shipped_code()
    setup = _deploy_deterministic(sender, SETUP_SALT, code.setup.bytecode, "OperatorModuleSetup")
    initcode = module_initcode(deployer, plan.delay, plan.max_fee_bps, plan.max_slippage_bps)
    module = _deploy_deterministic(sender, MODULE_SALT, initcode, "OperatorModule")
    if not sender.call(module, _IS_SEALED):
        changes = initial_listing(
            plan.protocols,
            plan.swap_router,
            plan.feeds,
            plan.token,
            plan.feed_max_age,
            plan.operator,
        )
        for change in changes:
            sender.send(module, APPLY_CHANGE.encode(change), f"listing {change[1]}")
        sender.send(module, SEAL.encode(), "sealing the module")
    admin = to_checksum_address(plan.admin)
    on_chain = sender.call(module, _ADMIN)
    if on_chain != admin and sender.call(module, _PENDING_ADMIN) != admin:
        if on_chain != deployer:
            raise ConfigurationError(
                f"the module at {module} is administered by {on_chain}, not the deploying key"
            )
        sender.send(module, TRANSFER_ADMIN.encode(admin), "naming the next admin")
    on_chain = sender.call(module, _ADMIN)
    return DeployedModule(
        module=module,
        module_setup=setup,
        admin=on_chain,
        pending_admin=None if on_chain == admin else admin,
        operator=to_checksum_address(plan.operator),
        transactions=sender.sent,
    )
