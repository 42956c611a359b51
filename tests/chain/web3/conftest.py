"""A plain anvil for the transaction tests (one per test session) and the test contract;
and, for the adapter's tests, ``env``: a Web3Chain on the session devnet
(``support.web3_chain``).

Each transaction test sends from a dev account of its own (``support.anvil.dev_key``), so
that the nonces one test sees are its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from eth_account import Account
from web3 import HTTPProvider, Web3

from support.anvil import CHAIN_ID, Anvil, Deployed, compile_contract, dev_key, running_anvil
from support.web3_chain import env

__all__ = ["anvil", "env", "reverter"]

DEPLOYER = 0  # the dev account that deploys the test contract


@pytest.fixture(scope="session")
def anvil() -> Iterator[Anvil]:
    """anvil on a free port, mining each transaction as it arrives."""
    with running_anvil(CHAIN_ID) as node:
        yield node


@pytest.fixture(scope="session")
def reverter(anvil: Anvil) -> Deployed:
    """``Reverter.sol``, compiled with solc-js and deployed."""
    abi, bytecode = compile_contract(Path(__file__).with_name("Reverter.sol"), "Reverter")
    w3 = Web3(HTTPProvider(anvil.url))
    deployer = Account.from_key(dev_key(DEPLOYER))
    signed = deployer.sign_transaction(
        {
            "type": 2,
            "chainId": CHAIN_ID,
            "nonce": w3.eth.get_transaction_count(deployer.address),
            "data": bytecode,
            "gas": 1_000_000,
            "maxFeePerGas": 10 * 10**9,
            "maxPriorityFeePerGas": 10**6,
        }
    )
    receipt = w3.eth.wait_for_transaction_receipt(
        w3.eth.send_raw_transaction(signed.raw_transaction)
    )
    assert receipt["status"] == 1
    return Deployed(str(receipt["contractAddress"]), abi)
