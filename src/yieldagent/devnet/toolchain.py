"""STAND-IN (devnet-contracts branch): the solc-js compile of ``contracts/src``, cached.

devnet-core owns this module; this minimal version follows the shared interface so the
devnet-contracts work can be tested before that branch lands. On merge, keep devnet-core's.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
CONTRACTS = ROOT / "contracts"
NODE_MODULES = CONTRACTS / "node_modules"
BUILD = ROOT / "build" / "contracts"
_IMPORT = re.compile(r'^\s*import\s+(?:[^"\']*from\s+)?["\']([^"\']+)["\']', re.MULTILINE)


@dataclass(frozen=True)
class Artifact:
    """A compiled contract: its ABI and bytecode (0x hex), with unlinked library references."""

    name: str
    abi: list[dict[str, Any]]
    bytecode: str
    deployed_bytecode: str
    link_references: dict[str, Any]


def anvil_binary() -> Path:
    """The anvil binary the npm package ``@foundry-rs/anvil`` ships."""
    return NODE_MODULES / "@foundry-rs" / "anvil-linux-amd64" / "bin" / "anvil"


def _resolve(unit: str, target: str) -> str:
    if target.startswith("."):
        return str((Path(unit).parent / target).as_posix()).replace("/./", "/")
    return target


def _normalize(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)


def _read(unit: str) -> str:
    if unit.startswith("@"):
        return (NODE_MODULES / unit).read_text()
    return (CONTRACTS / unit).read_text()


def _sources() -> dict[str, str]:
    pending = [p.relative_to(CONTRACTS).as_posix() for p in sorted(CONTRACTS.glob("src/**/*.sol"))]
    sources: dict[str, str] = {}
    while pending:
        unit = pending.pop()
        if unit in sources:
            continue
        text = _read(unit)
        sources[unit] = text
        for target in _IMPORT.findall(text):
            pending.append(_normalize(_resolve(unit, target)))
    return dict(sorted(sources.items()))


def compile_project() -> dict[str, Artifact]:
    """Every contract of ``contracts/src`` (and what it imports), by contract name; cached."""
    sources = _sources()
    standard = {
        "language": "Solidity",
        "sources": {unit: {"content": text} for unit, text in sources.items()},
        "settings": {
            "optimizer": {"enabled": True, "runs": 200},
            "evmVersion": "paris",
            "outputSelection": {
                "*": {
                    "*": [
                        "abi",
                        "evm.bytecode.object",
                        "evm.bytecode.linkReferences",
                        "evm.deployedBytecode.object",
                    ]
                }
            },
        },
    }
    payload = json.dumps(standard, sort_keys=True)
    digest = hashlib.sha256(payload.encode()).hexdigest()[:16]
    cache = BUILD / f"standin-{digest}.json"
    if cache.exists():
        output = json.loads(cache.read_text())
    else:
        BUILD.mkdir(parents=True, exist_ok=True)
        scratch = BUILD / f"standin-{digest}.input.json"
        scratch.write_text(payload)
        script = (
            "const fs = require('fs'); const solc = require(process.argv[1]);"
            "const input = fs.readFileSync(process.argv[2], 'utf8');"
            "fs.writeFileSync(process.argv[3], solc.compile(input));"
        )
        output_path = BUILD / f"standin-{digest}.output.json"
        subprocess.run(
            ["node", "-e", script, str(NODE_MODULES / "solc"), str(scratch), str(output_path)],
            check=True,
        )
        output = json.loads(output_path.read_text())
        scratch.unlink()
        output_path.unlink()
        errors = [e for e in output.get("errors", []) if e["severity"] == "error"]
        if errors:
            raise RuntimeError("\n".join(e["formattedMessage"] for e in errors))
        cache.write_text(json.dumps(output))
    artifacts: dict[str, Artifact] = {}
    for unit in sorted(output["contracts"]):
        for name, data in output["contracts"][unit].items():
            artifacts[name] = Artifact(
                name=name,
                abi=data["abi"],
                bytecode="0x" + data["evm"]["bytecode"]["object"],
                deployed_bytecode="0x" + data["evm"]["deployedBytecode"]["object"],
                link_references=data["evm"]["bytecode"].get("linkReferences", {}),
            )
    return artifacts
