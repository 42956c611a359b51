"""Writes ``chain/web3/module_code.json``, the code the wheel ships and trusts, from the
project's sources and the pinned Safe package: ``python -m yieldagent.devnet.module_code``
after a change of ``contracts/src/safe``. ``tests/devnet/test_module_code.py`` fails while
the file is stale."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eth_utils.crypto import keccak

from yieldagent.chain.web3 import module_code
from yieldagent.devnet.safe import SAFE_CONTRACTS, safe_artifact
from yieldagent.devnet.toolchain import Artifact, compile_project

TARGET = Path(module_code.__file__).with_name(module_code.FILE)


def _entry(artifact: Artifact) -> dict[str, Any]:
    ranges = sorted(
        (int(place["start"]), int(place["length"]))
        for places in artifact.immutable_references.values()
        for place in places
    )
    return {
        "bytecode": artifact.bytecode,
        "runtime": artifact.deployed_bytecode,
        "immutables": [list(r) for r in ranges],
    }


def module_code_json() -> str:
    """What ``module_code.json`` must hold, as its text."""
    artifacts = compile_project()
    data = {
        "OperatorModule": _entry(artifacts["OperatorModule"]),
        "OperatorModuleSetup": _entry(artifacts["OperatorModuleSetup"]),
        "safe": {
            name: "0x" + keccak(hexstr=safe_artifact(name).deployed_bytecode).hex()
            for name in SAFE_CONTRACTS
        },
    }
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main() -> None:
    """Writes the file."""
    TARGET.write_text(module_code_json())
    print(TARGET)


if __name__ == "__main__":
    main()
