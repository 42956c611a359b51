"""STAND-IN (devnet-contracts branch): deploys and calls contracts from anvil's accounts.

devnet-core owns this module; this minimal version follows the shared interface.
"""

from __future__ import annotations

from typing import Any

from web3 import Web3
from web3.contract import Contract
from web3.contract.contract import ContractFunction
from web3.exceptions import ContractCustomError, ContractLogicError
from web3.types import RPCEndpoint, TxReceipt

from yieldagent.devnet.toolchain import Artifact


class DeployError(RuntimeError):
    """A deployment or transaction failed; the message carries the revert reason."""


class Deployer:
    """Deploys artifacts and sends transactions over a sync Web3, from unlocked accounts."""

    def __init__(self, w3: Web3) -> None:
        self.w3 = w3
        self.accounts: list[str] = [Web3.to_checksum_address(a) for a in w3.eth.accounts]
        self.admin = self.accounts[0]

    def deploy(
        self, artifact: Artifact, *args: Any, libraries: dict[str, str] | None = None
    ) -> Contract:
        """Deploys ``artifact`` from ``admin`` with constructor ``args``."""
        bytecode = artifact.bytecode
        for refs in artifact.link_references.values():
            for name, spots in refs.items():
                address = (libraries or {})[name][2:].lower()
                for spot in spots:
                    start = 2 + 2 * spot["start"]
                    bytecode = bytecode[:start] + address + bytecode[start + 40 :]
        factory = self.w3.eth.contract(abi=artifact.abi, bytecode=bytecode)
        tx_hash = factory.constructor(*args).transact({"from": self.admin})
        receipt = self.w3.eth.wait_for_transaction_receipt(tx_hash)
        if receipt["status"] != 1 or receipt["contractAddress"] is None:
            raise DeployError(f"deploying {artifact.name} failed")
        return self.at(artifact, receipt["contractAddress"])

    def at(self, artifact: Artifact, address: str) -> Contract:
        """The contract ``artifact`` at ``address``."""
        return self.w3.eth.contract(address=Web3.to_checksum_address(address), abi=artifact.abi)

    def transact(self, fn: ContractFunction, sender: str | None = None) -> TxReceipt:
        """Sends ``fn`` from ``sender`` (default ``admin``) and waits for its receipt."""
        try:
            tx_hash = fn.transact({"from": sender or self.admin})
        except (ContractLogicError, ContractCustomError) as exc:
            raise DeployError(str(exc)) from exc
        receipt = self.w3.eth.wait_for_transaction_receipt(tx_hash)
        if receipt["status"] != 1:
            raise DeployError(f"{fn.fn_name} reverted")
        return receipt

    def fund(self, address: str, wei: int) -> None:
        """Sets the ether balance of ``address``."""
        self.w3.provider.make_request(RPCEndpoint("anvil_setBalance"), [address, hex(wei)])
