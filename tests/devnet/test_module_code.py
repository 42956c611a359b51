"""The code the wheel ships and trusts (``chain/web3/module_code.json``) is what the sources
build, and what Safe 1.4.1 runs at its canonical addresses."""

from __future__ import annotations

import pytest
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak

from support.devnet import Devnet
from yieldagent.chain.web3.module_code import FILE, shipped_code
from yieldagent.devnet.module_code import TARGET, module_code_json
from yieldagent.devnet.safe import SAFE_CONTRACTS

pytestmark = pytest.mark.evm


def test_the_shipped_code_is_what_the_sources_build() -> None:
    assert TARGET.name == FILE
    assert TARGET.read_text() == module_code_json(), (
        "contracts/src/safe changed: run python -m yieldagent.devnet.module_code"
    )


def test_the_shipped_hashes_are_the_code_at_safes_canonical_addresses(net: Devnet) -> None:
    for name, (_, address) in SAFE_CONTRACTS.items():
        assert (
            keccak(bytes(net.w3.eth.get_code(to_checksum_address(address))))
            == shipped_code().safe[name]
        ), name


def test_the_devnet_module_is_the_shipped_code_once_its_immutables_are_masked(
    net: Devnet,
) -> None:
    assert net.manifest.safe is not None
    module = shipped_code().module
    found = bytes(net.w3.eth.get_code(to_checksum_address(net.manifest.safe.module)))
    assert found != module.runtime  # its constructor filled in the delay and the bounds
    assert module.masked_hash(found) == module.expected_hash
    setup = shipped_code().setup
    found = bytes(net.w3.eth.get_code(to_checksum_address(net.manifest.safe.module_setup)))
    assert setup.masked_hash(found) == setup.expected_hash
