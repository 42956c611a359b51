"""Helpers for driving the devnet smart account in ``evm`` tests: execution modes, encodings,
reverts, and installing an account with its session-key policy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eth_abi.abi import encode
from web3 import Web3
from web3.contract import Contract
from web3.contract.contract import ContractFunction
from web3.exceptions import ContractCustomError, ContractLogicError

from support.devnet import Devnet
from yieldagent.devnet.accounts import deploy_policy, install_account
from yieldagent.devnet.toolchain import compile_project

SINGLE = bytes(32)  # call type 0x00, exec type 0x00
BATCH = bytes([1]) + bytes(31)  # call type 0x01, exec type 0x00
USDC_UNIT = 10**6


def packed(target: str, value: int, data: str | bytes) -> bytes:
    """ERC-7579 single execution: abi.encodePacked(target, value, callData)."""
    raw = bytes.fromhex(data[2:]) if isinstance(data, str) else data
    return bytes.fromhex(target[2:]) + value.to_bytes(32, "big") + raw


def batched(calls: Sequence[tuple[str, int, str]]) -> bytes:
    """ERC-7579 batch execution: abi.encode(Execution[])."""
    rows = [(target, value, bytes.fromhex(data[2:])) for target, value, data in calls]
    return bytes(encode(["(address,uint256,bytes)[]"], [rows]))


def selector(signature: str) -> str:
    """The 4-byte selector of a function or error signature, 0x hex."""
    return Web3.keccak(text=signature)[:4].to_0x_hex()


def revert_data(fn: ContractFunction, sender: str) -> str:
    """The revert data of ``fn`` called from ``sender``: the raw data of a custom error, or a
    reason string followed by its raw data (fails the test if the call does not revert)."""
    try:
        fn.call({"from": sender})
    except ContractCustomError as exc:
        return str(exc.data)
    except ContractLogicError as exc:  # Error(string): the reason, then the raw data
        return f"{exc.message} {exc.data}"
    raise AssertionError("the call did not revert")


@dataclass(frozen=True)
class Wallet:
    """A smart account installed on the devnet, with its policy and its parties."""

    account: Contract
    policy: Contract
    owner: str
    session_key: str
    fee_collector: str

    @property
    def address(self) -> str:
        return str(self.account.address)

    def execute(self, target: str, data: str, value: int = 0) -> ContractFunction:
        """``execute`` of one call, ready to send or to call."""
        return self.account.functions.execute(SINGLE, packed(target, value, data))

    def execute_batch(self, calls: Sequence[tuple[str, int, str]]) -> ContractFunction:
        """``execute`` of a batch of calls."""
        return self.account.functions.execute(BATCH, batched(calls))


def install_wallet(devnet: Devnet, address: str, fee_collector: str | None = None) -> Wallet:
    """Deploys a policy over all the devnet's protocols (as ``deploy_all`` does, with its own
    fee collector) and installs an account at ``address`` (owner: anvil account 3, session key:
    account 4, fee collector: account 5)."""
    d = devnet.d
    artifacts = compile_project()
    collector = fee_collector or d.accounts[5]
    protocols = list(devnet.manifest.protocols)
    policy = deploy_policy(d, devnet.usdc, protocols, collector, 2000, swap_router=devnet.router)
    owner, session_key = d.accounts[3], d.accounts[4]
    runtime = artifacts["SmartAccount"].deployed_bytecode
    install_account(d.w3, address, owner, session_key, policy, runtime)
    return Wallet(
        account=d.at(artifacts["SmartAccount"], address),
        policy=d.at(artifacts["SessionPolicy"], policy),
        owner=owner,
        session_key=session_key,
        fee_collector=collector,
    )
