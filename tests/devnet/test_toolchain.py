"""The toolchain: solc-js compilation with its cache, import resolution, linking, Aave's
artifacts."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from yieldagent.devnet import toolchain
from yieldagent.devnet.toolchain import (
    ToolchainError,
    aave_artifact,
    anvil_binary,
    compile_project,
    project_sources,
)

ADDRESSES = [f"0x{i:040x}" for i in range(1, 8)]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A contracts folder of its own: a library to link, a package import, a shared name."""
    src = tmp_path / "src"
    (src / "lib").mkdir(parents=True)
    (src / "Thing.sol").write_text(
        """// SPDX-License-Identifier: MIT
pragma solidity ^0.8.19;
import {Helper} from "./lib/Helper.sol";
import {MathLib} from "@morpho-org/morpho-blue/src/libraries/MathLib.sol";
// import "./Missing.sol";  (commented out: not an import)
contract Thing {
    function twice(uint256 x) external pure returns (uint256) { return Helper.twice(x); }
    function half(uint256 x) external pure returns (uint256) { return MathLib.mulDivDown(x, 1, 2); }
}
contract Dup { function a() external pure returns (uint256) { return 1; } }
"""
    )
    (src / "lib" / "Helper.sol").write_text(
        """// SPDX-License-Identifier: MIT
pragma solidity ^0.8.19;
library Helper { function twice(uint256 x) external pure returns (uint256) { return 2 * x; } }
contract Dup { function b() external pure returns (uint256) { return 2; } }
"""
    )
    monkeypatch.setattr(toolchain, "CONTRACTS", tmp_path)
    monkeypatch.setattr(toolchain, "SOURCES", src)
    monkeypatch.setattr(toolchain, "BUILD", tmp_path / "build")
    return tmp_path


def test_sources_are_the_tree_and_what_it_imports(tree: Path) -> None:
    assert list(project_sources()) == [
        "@morpho-org/morpho-blue/src/libraries/MathLib.sol",
        "src/Thing.sol",
        "src/lib/Helper.sol",
    ]


def test_an_import_that_resolves_nowhere_is_an_error(tree: Path) -> None:
    (tree / "src" / "Broken.sol").write_text('import "./Nowhere.sol";\n')
    with pytest.raises(ToolchainError, match=re.escape("src/Nowhere.sol")):
        project_sources()


def test_compiles_links_and_caches_by_input_hash(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    artifacts = compile_project()
    thing = artifacts["Thing"]
    assert thing.libraries() == {"Helper"}
    assert "Dup" not in artifacts  # two contracts share the name: only qualified names stay
    assert {"src/Thing.sol:Dup", "src/lib/Helper.sol:Dup"} <= set(artifacts)
    linked = thing.linked_bytecode({"Helper": ADDRESSES[0]})
    assert ADDRESSES[0].removeprefix("0x") in linked
    assert "__" not in linked
    with pytest.raises(ToolchainError, match="Helper"):
        thing.linked_bytecode()

    [cached] = (tree / "build").glob("*.json")
    toolchain._by_fingerprint.clear()  # a new process, as it were

    def no_solc(standard_input: str) -> dict[str, object]:
        raise AssertionError("compiled again despite the cache")

    monkeypatch.setattr(toolchain, "_run_solc", no_solc)
    assert compile_project() == artifacts  # read back from the file, not compiled

    (tree / "src" / "lib" / "Helper.sol").write_text(
        (tree / "src" / "lib" / "Helper.sol").read_text() + "\n// changed\n"
    )
    with pytest.raises(AssertionError, match="compiled again"):
        compile_project()  # a changed source is a new hash
    assert cached.exists()


def test_a_compile_error_names_the_source(tree: Path) -> None:
    (tree / "src" / "Bad.sol").write_text("pragma solidity ^0.8.19; contract Bad { uint x = ; }\n")
    with pytest.raises(ToolchainError, match=re.escape("Bad.sol")):
        compile_project()


def test_the_project_compiles_its_usdc() -> None:
    usdc = compile_project()["USDC"]
    assert usdc == compile_project()["src/USDC.sol:USDC"]
    names = {item.get("name") for item in usdc.abi}
    assert {"mint", "transfer", "transferFrom", "approve", "decimals", "Transfer"} <= names
    assert usdc.deployed_bytecode.startswith("0x") and len(usdc.deployed_bytecode) > 2


def test_aave_pool_links_its_seven_libraries_at_their_offsets() -> None:
    pool = aave_artifact("Pool")
    names = sorted(pool.libraries())
    assert names == [
        "BorrowLogic",
        "BridgeLogic",
        "EModeLogic",
        "FlashLoanLogic",
        "LiquidationLogic",
        "PoolLogic",
        "SupplyLogic",
    ]
    libraries = dict(zip(names, ADDRESSES, strict=True))
    code = pool.linked_bytecode(libraries).removeprefix("0x")
    assert "__" not in code
    for by_name in pool.link_references.values():
        for name, places in by_name.items():
            for place in places:
                start = 2 * place["start"]
                assert code[start : start + 40] == libraries[name].removeprefix("0x")


def test_unknown_aave_artifact_is_an_error() -> None:
    with pytest.raises(ToolchainError, match="NoSuchContract"):
        aave_artifact("NoSuchContract")


def test_anvil_binary_is_the_pinned_one() -> None:
    assert anvil_binary().name == "anvil"
    assert anvil_binary().is_file()


def test_solc_runs_with_none_of_our_settings_in_its_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("YIELDAGENT_OPERATOR_PRIVATE_KEY", "0x" + "4d" * 32)
    given: list[dict[str, str]] = []

    def recorded(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        given.append(kwargs["env"])
        return subprocess.CompletedProcess(command, 0, stdout='{"contracts": {}}', stderr="")

    monkeypatch.setattr(subprocess, "run", recorded)
    assert toolchain._run_solc("{}") == {"contracts": {}}
    assert given and "PATH" in given[0]
    assert not [name for name in given[0] if name.startswith("YIELDAGENT_")]
