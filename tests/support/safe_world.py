"""Safe accounts with the operator module on the devnet, driven as the service and as a thief.

The operator signs its transactions itself with its private key (anvil's dev account
``DEFAULT_OPERATOR_ACCOUNT``) and sends them raw, as the service does; the owner, a fresh EOA,
makes its Safe transactions itself (the pre-validated signature of ``msg.sender``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from eth_account import Account
from eth_account.signers.local import LocalAccount
from eth_utils.address import to_checksum_address
from hexbytes import HexBytes
from web3 import Web3
from web3.contract import Contract
from web3.contract.contract import ContractFunction
from web3.exceptions import ContractCustomError, ContractLogicError
from web3.types import TxParams, TxReceipt

from support.anvil import dev_key
from support.devnet import Devnet
from yieldagent.devnet.deploy import DEFAULT_OPERATOR_ACCOUNT
from yieldagent.devnet.deployer import decode_custom_error
from yieldagent.devnet.safe import module_at, safe_artifact
from yieldagent.devnet.toolchain import aave_artifact, compile_project
from yieldagent.domain.partners.safe_accounts import (
    SafeAccountConstants,
    create_proxy_calldata,
    safe_account_address,
)

USDC = 10**6
COMP = 10**18
SENTINEL = "0x0000000000000000000000000000000000000001"
FAILED_TX_GAS = 3_000_000
PROXY_CREATION = HexBytes(
    Web3.keccak(text="ProxyCreation(address,address)")
)  # a transaction expected to revert is sent with gas of its own


def operator_key() -> bytes:
    """The operator's private key on the test devnet."""
    return dev_key(DEFAULT_OPERATOR_ACCOUNT)


class Signer:
    """An EOA that signs its own transactions and sends them raw."""

    def __init__(self, w3: Web3, key: bytes) -> None:
        self.w3 = w3
        self.account: LocalAccount = Account.from_key(key)
        self.address = to_checksum_address(self.account.address)
        self.last_raw: HexBytes | None = None

    def sign(
        self, to: str, data: bytes | str, *, value: int = 0, gas: int | None = None
    ) -> HexBytes:
        """A signed transaction from this EOA (gas estimated unless given)."""
        tx: dict[str, Any] = {
            "from": self.address,
            "to": to_checksum_address(to),
            "data": data if isinstance(data, str) else Web3.to_hex(data),
            "value": value,
            "nonce": self.w3.eth.get_transaction_count(self.address, "pending"),
            "chainId": self.w3.eth.chain_id,
            "maxFeePerGas": 2 * self.w3.eth.gas_price + 10**9,
            "maxPriorityFeePerGas": 10**9,
        }
        if gas is None:
            gas = self.w3.eth.estimate_gas(cast(TxParams, tx)) * 3 // 2 + 100_000
        tx["gas"] = gas
        return HexBytes(self.account.sign_transaction(tx).raw_transaction)

    def send_raw(self, raw: HexBytes) -> TxReceipt:
        """Sends ``raw`` and waits for its receipt."""
        tx_hash = self.w3.eth.send_raw_transaction(raw)
        return self.w3.eth.wait_for_transaction_receipt(tx_hash, timeout=60, poll_latency=0.01)

    def send(self, to: str, data: bytes | str, *, value: int = 0) -> TxReceipt:
        """Signs, sends and waits; fails the test if the transaction reverted."""
        self.last_raw = self.sign(to, data, value=value)
        receipt = self.send_raw(self.last_raw)
        assert receipt["status"] == 1, f"transaction to {to} reverted"
        return receipt

    def transact(self, fn: ContractFunction, *, value: int = 0) -> TxReceipt:
        """Sends ``fn`` (a bound contract function)."""
        return self.send(str(fn.address), fn._encode_transaction_data(), value=value)

    def refused(
        self, fn: ContractFunction, abi: Sequence[dict[str, Any]], *, value: int = 0
    ) -> str:
        """What ``fn`` reverts with when this EOA calls it; also mines it and checks the chain
        refused it (status 0). Fails the test if it would succeed."""
        data = fn._encode_transaction_data()
        reason = revert_reason(self.w3, self.address, str(fn.address), data, abi, value=value)
        receipt = self.send_raw(self.sign(str(fn.address), data, value=value, gas=FAILED_TX_GAS))
        assert receipt["status"] == 0, "the chain accepted a call that should revert"
        return reason


def revert_reason(
    w3: Web3, sender: str, to: str, data: str, abi: Sequence[dict[str, Any]], *, value: int = 0
) -> str:
    """The revert of a call: a custom error of ``abi`` by name, or the reason string."""
    try:
        w3.eth.call(
            {"from": sender, "to": to_checksum_address(to), "data": data, "value": value}  # type: ignore[typeddict-item]
        )
    except ContractCustomError as error:
        raw = error.data if isinstance(error.data, str) else str(error.message)
        return decode_custom_error(raw, list(abi)) or f"custom error {raw}"
    except ContractLogicError as error:
        return str(error.message or error)
    raise AssertionError(f"the call to {to} did not revert")


@dataclass
class SafeWorld:
    """The devnet's Safe contracts, the module, and the parties of an account."""

    net: Devnet
    operator: Signer
    module: Contract
    safe_abi: list[dict[str, Any]]
    collector: str

    @property
    def w3(self) -> Web3:
        return self.operator.w3

    @property
    def module_abi(self) -> list[dict[str, Any]]:
        return cast(list[dict[str, Any]], list(self.module.abi))

    def constants(self, collector: str | None = None) -> SafeAccountConstants:
        """The devnet's account constants (``collector`` instead of the world's if given)."""
        safe = self.net.manifest.safe
        assert safe is not None
        return SafeAccountConstants(
            chain_id=self.net.manifest.chain_id,
            factory=safe.factory,
            singleton=safe.singleton,
            fallback_handler=safe.fallback_handler,
            module_setup=safe.module_setup,
            module=safe.module,
            token=self.net.usdc,
            fee_collector=collector or self.collector,
        )

    def safe(self, address: str) -> Contract:
        return self.w3.eth.contract(address=to_checksum_address(address), abi=self.safe_abi)

    def deploy_account(self, owner: str, agent_id: str = "yield-agent") -> tuple[str, TxReceipt]:
        """Deploys ``owner``'s account through the factory, from the operator; returns its
        address (checked against the formula) and the receipt."""
        constants = self.constants()
        receipt = self.operator.send(
            constants.factory, create_proxy_calldata(owner, agent_id, constants)
        )
        address = safe_account_address(owner, agent_id, constants)
        # the factory's ProxyCreation(proxy indexed, singleton) names the formula's address
        created = [
            to_checksum_address(log["topics"][1][-20:])
            for log in receipt["logs"]
            if log["address"] == constants.factory and log["topics"][0] == PROXY_CREATION
        ]
        assert created == [address]
        assert len(self.w3.eth.get_code(to_checksum_address(address))) > 0
        return address, receipt

    def execute(self, account: str, calls: Sequence[tuple[str, str | bytes]]) -> ContractFunction:
        """``module.execute(account, calls)``, ready to send, call or refuse."""
        rows = [(to_checksum_address(t), HexBytes(d)) for t, d in calls]
        return self.module.functions.execute(to_checksum_address(account), rows)

    def owner_safe_tx(self, owner: Signer, account: str, to: str, data: str | bytes) -> TxReceipt:
        """A Safe transaction of ``owner`` (threshold 1), sent by the owner itself."""
        signature = bytes(12) + bytes.fromhex(owner.address[2:]) + bytes(32) + b"\x01"
        zero = "0x" + "00" * 20
        fn = self.safe(account).functions.execTransaction(
            to_checksum_address(to), 0, HexBytes(data), 0, 0, 0, 0, zero, zero, signature
        )
        return owner.transact(fn)


def safe_world(net: Devnet, collector: str) -> SafeWorld:
    """The world of the devnet ``net`` (its manifest must have Safe deployed)."""
    safe = net.manifest.safe
    assert safe is not None
    w3 = net.w3
    return SafeWorld(
        net=net,
        operator=Signer(w3, operator_key()),
        module=module_at(net.d, safe.module),
        safe_abi=safe_artifact("SafeL2").abi,
        collector=to_checksum_address(collector),
    )


def contract(net: Devnet, name: str, address: str) -> Contract:
    """A project contract (``compile_project``) at ``address``."""
    return net.d.at(compile_project()[name], address)


def a_token(net: Devnet) -> Contract:
    """Aave's aToken of the devnet USDC."""
    return net.d.at(aave_artifact("AToken"), net.manifest.protocol("aave").contracts["a_token"])
