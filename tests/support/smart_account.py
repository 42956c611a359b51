"""Helpers for the devnet's contract tests: USDC units, selectors, and the revert data of a
call that must revert."""

from __future__ import annotations

from web3 import Web3
from web3.contract.contract import ContractFunction
from web3.exceptions import ContractCustomError, ContractLogicError

USDC_UNIT = 10**6


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
