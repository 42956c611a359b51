"""Deploys and drives contracts on an anvil devnet through its unlocked accounts.

A synchronous ``web3.Web3`` over HTTP: transactions go out with ``eth_sendTransaction``
from one of anvil's unlocked accounts (``admin`` is account 0), or from a named *actor*, an
address of its own that anvil impersonates (borrowers, liquidity suppliers), so that the
devnet's bookkeeping never takes nonces or balances from the accounts tests use. Every
failure is a ``DeployError`` that carries the revert reason (a custom error is decoded by
name when the contract's ABI declares it).
"""

from __future__ import annotations

from typing import Any

from eth_abi.abi import decode
from eth_typing import ChecksumAddress
from eth_utils.abi import function_signature_to_4byte_selector
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from web3 import HTTPProvider, Web3
from web3.contract import Contract
from web3.contract.contract import ContractConstructor, ContractFunction
from web3.exceptions import ContractCustomError, ContractLogicError, Web3RPCError
from web3.types import TxParams, TxReceipt, Wei

from yieldagent.devnet.toolchain import Artifact

ACTOR_BALANCE = 10**24  # wei (1,000,000 ether): an actor never runs out of gas money


GAS_HEADROOM = 300_000  # a few markets' accrual and IRM updates


class DeployError(RuntimeError):
    """A deployment or a transaction failed; the message carries the revert reason."""


def _abi_type(item: dict[str, Any]) -> str:
    if item["type"].startswith("tuple"):
        inner = ",".join(_abi_type(component) for component in item["components"])
        return f"({inner}){item['type'][len('tuple') :]}"
    return str(item["type"])


def decode_custom_error(data: str, abi: list[dict[str, Any]]) -> str | None:
    """``Name(arg, ...)`` for revert data that matches a custom error of ``abi``."""
    raw = bytes.fromhex(data.removeprefix("0x"))
    for item in abi:
        if item.get("type") != "error":
            continue
        types = [_abi_type(i) for i in item.get("inputs", [])]
        selector = function_signature_to_4byte_selector(f"{item['name']}({','.join(types)})")
        if raw[:4] == selector:
            try:
                values = decode(types, raw[4:])
            except Exception:  # malformed data: the caller falls back to the raw bytes
                return None
            return f"{item['name']}({', '.join(str(v) for v in values)})"
    return None


def _reason(error: Exception, abi: list[dict[str, Any]]) -> str:
    if isinstance(error, ContractCustomError):
        data = error.data if isinstance(error.data, str) else str(error.message)
        return decode_custom_error(data, abi) or f"custom error {data}"
    if isinstance(error, ContractLogicError):
        return str(error.message or error)
    return str(error)


class Deployer:
    """Deploys contracts and sends transactions on an anvil node at ``url`` (or over ``w3``)."""

    def __init__(self, url: str | Web3, *, timeout: float = 60.0) -> None:
        if isinstance(url, Web3):
            self.w3 = url
        else:
            self.w3 = Web3(HTTPProvider(url, request_kwargs={"timeout": timeout}))
        self.accounts: list[str] = [to_checksum_address(a) for a in self.w3.eth.accounts]
        if not self.accounts:
            raise DeployError(f"{url} has no unlocked accounts (is it anvil?)")
        self.admin: str = self.accounts[0]
        self._impersonated: set[str] = set(self.accounts)

    def anvil(self, method: str, *params: Any) -> Any:
        """One of anvil's own RPC methods (``anvil_setBalance``, ``evm_mine``, ...)."""
        response = self.w3.provider.make_request(method, list(params))  # type: ignore[arg-type]
        if response.get("error"):
            raise DeployError(f"{method}: {response['error']}")
        return response.get("result")

    def actor(self, label: str) -> ChecksumAddress:
        """The devnet actor named ``label``: a fixed address, impersonated and funded."""
        address = to_checksum_address(keccak(text=f"yieldagent.devnet:{label}")[12:])
        self._sender(address)
        if self.w3.eth.get_balance(address) < ACTOR_BALANCE // 2:
            self.fund(address, ACTOR_BALANCE)
        return address

    def fund(self, address: str, wei: int) -> None:
        """Sets the ether balance of ``address`` to ``wei`` (``anvil_setBalance``)."""
        self.anvil("anvil_setBalance", to_checksum_address(address), hex(wei))

    def at(self, artifact: Artifact, address: str) -> Contract:
        """The contract ``artifact`` at ``address``."""
        return self.w3.eth.contract(address=to_checksum_address(address), abi=artifact.abi)

    def deploy(
        self,
        artifact: Artifact,
        *args: Any,
        libraries: dict[str, str] | None = None,
        sender: str | None = None,
    ) -> Contract:
        """Deploys ``artifact`` with constructor ``args``, its libraries linked by name."""
        bytecode = artifact.linked_bytecode(libraries)
        if bytecode == "0x":
            raise DeployError(f"{artifact.name} has no creation code (an interface?)")
        factory = self.w3.eth.contract(abi=artifact.abi, bytecode=bytecode)
        receipt = self.transact(factory.constructor(*args), sender, abi=artifact.abi)
        address = receipt.get("contractAddress")
        if not address:
            raise DeployError(f"deploying {artifact.name} created no contract")
        return self.at(artifact, address)

    def transact(
        self,
        fn: ContractFunction | ContractConstructor,
        sender: str | None = None,
        *,
        value: int = 0,
        abi: list[dict[str, Any]] | None = None,
    ) -> TxReceipt:
        """Sends ``fn`` from ``sender`` (default ``admin``) and returns its mined receipt.

        Raises ``DeployError`` with the revert reason if it would revert or did.
        """
        origin = self._sender(sender or self.admin)
        params: TxParams = {"from": origin, "value": Wei(value)}
        label = getattr(fn, "fn_name", None) or "constructor"
        errors_abi = abi or list(getattr(fn, "contract_abi", None) or [])
        try:
            # Gas depends on time: a Morpho market (or a Comet, an mToken) last touched in the
            # estimate's second skips its interest accrual and IRM update there, but not in a
            # later block (nor after evm_increaseTime, which only the pending block sees). So
            # estimate against the pending block, with room for that work.
            estimate = fn.estimate_gas(params, block_identifier="pending")
            params["gas"] = estimate * 3 // 2 + GAS_HEADROOM
            tx_hash = fn.transact(params)
        except ContractLogicError as error:
            raise DeployError(f"{label} reverted: {_reason(error, errors_abi)}") from error
        except Web3RPCError as error:
            raise DeployError(f"{label} was refused: {error}") from error
        receipt = self.w3.eth.wait_for_transaction_receipt(tx_hash, timeout=60, poll_latency=0.01)
        if receipt["status"] != 1:
            block = receipt["blockNumber"]
            raise DeployError(f"{label} failed in block {block}: {tx_hash.to_0x_hex()}")
        return receipt

    def _sender(self, address: str) -> ChecksumAddress:
        checksummed = to_checksum_address(address)
        if checksummed not in self._impersonated:
            self.anvil("anvil_impersonateAccount", checksummed)
            self._impersonated.add(checksummed)
        return checksummed
