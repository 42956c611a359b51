"""The code the project deploys and trusts on a chain, as the wheel ships it.

``module_code.json`` holds what ``contracts/src/safe`` compiles to (solc 0.8.19, the
devnet's settings): the creation and runtime code of ``OperatorModule`` and
``OperatorModuleSetup``, and where the module's runtime code carries its immutables
(``delay``, ``maxFeeBps``, ``maxSlippageBps``, which its constructor writes there); and
the keccak of Safe 1.4.1's runtime code for the contracts an account's address commits to
(``SafeL2``, ``SafeProxyFactory``, ``CompatibilityFallbackHandler``) and
``MultiSendCallOnly``. The devnet's ``python -m yieldagent.devnet.module_code`` writes it
from the sources and the pinned Safe package; ``tests/devnet/test_module_code.py`` fails
when the file no longer matches them.

The service compares a chain's code with these at start-up (``deployment_check``) and
``yieldagent operator deploy-module`` deploys this code, so neither needs a compiler.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from eth_utils.crypto import keccak

FILE = "module_code.json"


@dataclass(frozen=True)
class ContractCode:
    """A compiled contract: creation code, runtime code, and the byte ranges of its
    runtime code that hold immutables (``(start, length)``, zeros here)."""

    bytecode: bytes
    runtime: bytes
    immutables: tuple[tuple[int, int], ...] = ()

    def masked_hash(self, code: bytes) -> bytes:
        """keccak of ``code`` with this contract's immutable ranges zeroed: equal to
        ``expected_hash`` exactly when ``code`` is this contract, whatever its immutables."""
        if len(code) != len(self.runtime):
            return keccak(code)
        masked = bytearray(code)
        for start, length in self.immutables:
            masked[start : start + length] = bytes(length)
        return keccak(bytes(masked))

    @property
    def expected_hash(self) -> bytes:
        """keccak of the runtime code with zeroed immutables."""
        return keccak(self.runtime)


@dataclass(frozen=True)
class ShippedCode:
    """Everything ``module_code.json`` holds."""

    module: ContractCode
    setup: ContractCode
    safe: dict[str, bytes]
    """keccak of each Safe 1.4.1 contract's runtime code, by contract name."""


def _hex(text: str) -> bytes:
    return bytes.fromhex(text.removeprefix("0x"))


def _contract(data: dict[str, Any]) -> ContractCode:
    ranges = tuple((int(start), int(length)) for start, length in data.get("immutables", ()))
    return ContractCode(_hex(data["bytecode"]), _hex(data["runtime"]), ranges)


@cache
def shipped_code() -> ShippedCode:
    """The code ``module_code.json`` ships."""
    data = json.loads(resources.files("yieldagent.chain.web3").joinpath(FILE).read_text())
    return ShippedCode(
        module=_contract(data["OperatorModule"]),
        setup=_contract(data["OperatorModuleSetup"]),
        safe={name: _hex(digest) for name, digest in data["safe"].items()},
    )
