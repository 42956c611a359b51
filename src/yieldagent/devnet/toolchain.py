"""The devnet's toolchain: the pinned npm packages under ``contracts/`` and what they build.

- ``anvil_binary()``: the anvil executable of ``@foundry-rs/anvil``.
- ``compile_project()``: every ``contracts/src/**/*.sol`` plus the package sources they import
  (``@morpho-org/morpho-blue/src/...``, resolved from ``contracts/node_modules``), compiled by
  solc-js 0.8.19 through its standard JSON interface (optimizer on, 200 runs, evmVersion
  ``paris``). The output is cached in ``build/contracts/<sha256 of the inputs>.json``, so a
  second call, or a second process, reads it back instead of compiling.
- ``aave_artifact(name)``: a contract of ``@aave/core-v3`` from the Hardhat artifacts it ships.

Artifacts carry hex strings with ``0x``; unlinked library placeholders stay in ``bytecode``
until ``Artifact.linked_bytecode`` fills them in.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from yieldagent.secret_values import child_environment

REPO = Path(__file__).resolve().parents[3]
CONTRACTS = REPO / "contracts"
NODE_MODULES = CONTRACTS / "node_modules"
SOURCES = CONTRACTS / "src"
BUILD = REPO / "build" / "contracts"

SOLC_SETTINGS: dict[str, Any] = {
    "optimizer": {"enabled": True, "runs": 200},
    "evmVersion": "paris",
    "outputSelection": {
        "*": {
            "*": [
                "abi",
                "evm.bytecode.object",
                "evm.bytecode.linkReferences",
                "evm.deployedBytecode.object",
                "evm.deployedBytecode.immutableReferences",
            ]
        }
    },
}

_IMPORT = re.compile(r"""\bimport\s+(?:[^;"']*?\bfrom\s+)?["']([^"']+)["']""")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_COMPILE_JS = """
const solc = require(%s);
let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => { input += chunk; });
process.stdin.on('end', () => { process.stdout.write(solc.compile(input)); });
"""


class ToolchainError(RuntimeError):
    """The toolchain is missing, or a source does not compile."""


@dataclass(frozen=True)
class Artifact:
    """A compiled contract: its ABI and its creation and runtime code (0x hex).

    ``link_references`` is solc's ``{source: {library: [{"start", "length"}]}}`` map of the
    library placeholders in ``bytecode`` (byte offsets); ``immutable_references`` its
    ``{ast id: [{"start", "length"}]}`` map of the immutables in ``deployed_bytecode``,
    which the constructor fills in (zeros in the artifact).
    """

    name: str
    abi: list[dict[str, Any]]
    bytecode: str
    deployed_bytecode: str
    link_references: dict[str, Any]
    immutable_references: dict[str, Any] = field(default_factory=dict)

    def libraries(self) -> set[str]:
        """The names of the libraries the creation code must be linked with."""
        return {name for by_name in self.link_references.values() for name in by_name}

    def linked_bytecode(self, libraries: dict[str, str] | None = None) -> str:
        """The creation code with each library placeholder replaced by its address."""
        code = self.bytecode.removeprefix("0x")
        given = libraries or {}
        missing = self.libraries() - set(given)
        if missing:
            raise ToolchainError(f"{self.name} needs libraries {sorted(missing)}")
        for by_name in self.link_references.values():
            for library, places in by_name.items():
                address = given[library].removeprefix("0x").lower()
                for place in places:
                    start, length = 2 * int(place["start"]), 2 * int(place["length"])
                    if len(address) != length:
                        raise ToolchainError(f"{library}: {given[library]!r} is not an address")
                    code = code[:start] + address + code[start + length :]
        if "__" in code:
            raise ToolchainError(f"{self.name} has library placeholders no reference names")
        return "0x" + code


def anvil_binary() -> Path:
    """The anvil executable that ``@foundry-rs/anvil`` installs (linux-amd64)."""
    path = NODE_MODULES / "@foundry-rs" / "anvil-linux-amd64" / "bin" / "anvil"
    if not path.is_file():
        raise ToolchainError(f"{path} is missing: run `npm ci --prefix contracts`")
    return path


def _solc_package() -> Path:
    path = NODE_MODULES / "solc"
    if not (path / "package.json").is_file():
        raise ToolchainError(f"{path} is missing: run `npm ci --prefix contracts`")
    return path


def _resolve(unit: str, imported: str) -> str:
    """The source unit name an import statement in ``unit`` refers to (solc's rules)."""
    if imported.startswith(("./", "../")):
        return posixpath.normpath(posixpath.join(posixpath.dirname(unit), imported))
    return imported


def _source_file(unit: str) -> Path:
    for root in (CONTRACTS, NODE_MODULES):
        path = root / unit
        if path.is_file():
            return path
    raise ToolchainError(f"cannot find the Solidity source {unit!r}")


def project_sources() -> dict[str, str]:
    """Every source unit the project compiles: ``src/**/*.sol`` and what they import."""
    pending = [f"src/{p.relative_to(SOURCES).as_posix()}" for p in sorted(SOURCES.rglob("*.sol"))]
    sources: dict[str, str] = {}
    while pending:
        unit = pending.pop()
        if unit in sources:
            continue
        text = _source_file(unit).read_text()
        sources[unit] = text
        for imported in _IMPORT.findall(_COMMENT.sub("", text)):
            pending.append(_resolve(unit, imported))
    return dict(sorted(sources.items()))


def _input_digest(standard_input: str) -> str:
    version = json.loads((_solc_package() / "package.json").read_text())["version"]
    return hashlib.sha256(f"solc-js {version}\n{standard_input}".encode()).hexdigest()


def _run_solc(standard_input: str) -> dict[str, Any]:
    script = _COMPILE_JS % json.dumps(str(_solc_package()))
    done = subprocess.run(
        ["node", "-e", script],
        input=standard_input,
        capture_output=True,
        text=True,
        check=False,
        cwd=CONTRACTS,
        env=child_environment(),
    )
    if done.returncode != 0:
        raise ToolchainError(f"solc-js failed: {done.stderr.strip()[-2000:]}")
    output: dict[str, Any] = json.loads(done.stdout)
    errors = [e for e in output.get("errors", []) if e.get("severity") == "error"]
    if errors:
        raise ToolchainError("\n".join(e.get("formattedMessage", e["message"]) for e in errors))
    return output


def _artifacts(output: dict[str, Any]) -> dict[str, Artifact]:
    """Artifacts by contract name and by ``unit:name``.

    A bare name that two contracts share goes to the one with code when only one has code,
    and is left out otherwise (its qualified names stay).
    """
    qualified: dict[str, Artifact] = {}
    for unit, contracts in output.get("contracts", {}).items():
        for name, compiled in contracts.items():
            evm = compiled["evm"]
            qualified[f"{unit}:{name}"] = Artifact(
                name=name,
                abi=compiled["abi"],
                bytecode="0x" + evm["bytecode"]["object"],
                deployed_bytecode="0x" + evm["deployedBytecode"]["object"],
                link_references=evm["bytecode"]["linkReferences"],
                immutable_references=evm["deployedBytecode"].get("immutableReferences", {}),
            )
    by_name: dict[str, list[Artifact]] = {}
    for artifact in qualified.values():
        by_name.setdefault(artifact.name, []).append(artifact)
    result = dict(qualified)
    for name, candidates in by_name.items():
        with_code = [a for a in candidates if a.bytecode != "0x"]
        if len(candidates) == 1:
            result[name] = candidates[0]
        elif len(with_code) == 1:
            result[name] = with_code[0]
    return result


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(temporary, path)  # atomic: concurrent compilations keep one file


def _fingerprint() -> tuple[object, ...]:
    """What the project's own sources look like on disk (paths, sizes, modification times)."""
    files = sorted(SOURCES.rglob("*.sol"))
    return (str(SOURCES), *((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files))


_by_fingerprint: dict[tuple[object, ...], dict[str, Artifact]] = {}


def compile_project() -> dict[str, Artifact]:
    """The project's contracts compiled (or read back from the cache), keyed by name.

    Each contract is also under ``"<unit>:<name>"`` (for example ``"src/USDC.sol:USDC"``),
    which stays unambiguous when two sources declare the same name. Within a process, a
    call whose sources have not changed on disk returns the previous result at once.
    """
    fingerprint = _fingerprint()
    if fingerprint not in _by_fingerprint:
        _by_fingerprint[fingerprint] = _compile_sources()
    return _by_fingerprint[fingerprint]


def _compile_sources() -> dict[str, Artifact]:
    standard_input = json.dumps(
        {
            "language": "Solidity",
            "sources": {unit: {"content": text} for unit, text in project_sources().items()},
            "settings": SOLC_SETTINGS,
        },
        sort_keys=True,
    )
    return _compiled(_input_digest(standard_input), standard_input)


def _compiled(digest: str, standard_input: str) -> dict[str, Artifact]:
    cached = BUILD / f"{digest}.json"
    if cached.is_file():
        return {key: Artifact(**value) for key, value in json.loads(cached.read_text()).items()}
    artifacts = _artifacts(_run_solc(standard_input))
    _write_atomically(cached, json.dumps({key: asdict(a) for key, a in artifacts.items()}))
    return artifacts


@cache
def _aave_index() -> dict[str, list[Path]]:
    root = NODE_MODULES / "@aave" / "core-v3" / "artifacts" / "contracts"
    if not root.is_dir():
        raise ToolchainError(f"{root} is missing: run `npm ci --prefix contracts`")
    index: dict[str, list[Path]] = {}
    for path in sorted(root.rglob("*.json")):
        if not path.name.endswith(".dbg.json"):
            index.setdefault(path.stem, []).append(path)
    return index


@cache
def aave_artifact(name: str) -> Artifact:
    """The contract ``name`` from the artifacts ``@aave/core-v3`` ships (Hardhat format)."""
    paths = _aave_index().get(name, [])
    if len(paths) != 1:
        found = [str(p) for p in paths]
        raise ToolchainError(f"@aave/core-v3 has {len(paths)} artifacts named {name!r}: {found}")
    raw = json.loads(paths[0].read_text())
    return Artifact(
        name=raw["contractName"],
        abi=raw["abi"],
        bytecode=raw["bytecode"],
        deployed_bytecode=raw["deployedBytecode"],
        link_references=raw["linkReferences"],
    )
