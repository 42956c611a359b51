"""What the project installs is pinned: Python packages by ``requirements.lock`` (exact
versions with hashes, in step with ``pyproject.toml``), the devnet's npm packages by
``contracts/package-lock.json`` (exact versions with integrity hashes, anvil's binary for
every platform), and the Solidity compiler exactly, in every pragma of ``contracts/src``.

These checks need no network. ``make check-lock`` (CI) re-resolves the lock with
pip-compile and fails on any difference; these catch the common drift (a dependency added,
removed or re-bounded in ``pyproject.toml`` alone) in every ``make test``.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9._-]+)==(\S+)")
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")


def _locked() -> dict[str, tuple[Version, int]]:
    """Each locked package: its version and how many hashes it has."""
    text = (ROOT / "requirements.lock").read_text()
    entries = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 1)[1])
    found: dict[str, tuple[Version, int]] = {}
    for entry in entries:
        match = PIN.match(entry)
        if match:
            found[canonicalize_name(match[1])] = (Version(match[2]), len(HASH.findall(entry)))
    return found


def _declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    lists = [
        project["project"]["dependencies"],
        project["build-system"]["requires"],
        *project["project"]["optional-dependencies"].values(),
    ]
    return [Requirement(line) for requirements in lists for line in requirements]


def test_every_declared_python_dependency_is_locked_at_a_version_it_allows() -> None:
    locked = _locked()
    for requirement in _declared():
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{name} is not in requirements.lock: run `make lock`"
        version, _ = locked[name]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"requirements.lock has {name}=={version}, pyproject.toml wants "
            f"{requirement.specifier}: run `make lock`"
        )


def test_every_locked_python_package_is_pinned_with_its_hashes() -> None:
    locked = _locked()
    assert len(locked) > len(_declared())  # the dependencies' own dependencies too
    unhashed = sorted(name for name, (_, hashes) in locked.items() if hashes == 0)
    assert unhashed == []
    text = (ROOT / "requirements.lock").read_text()
    assert "file://" not in text and "--index-url" not in text  # nothing of one machine


def _npm_lock() -> dict[str, dict[str, Any]]:
    packages: dict[str, dict[str, Any]] = json.loads(
        (ROOT / "contracts" / "package-lock.json").read_text()
    )["packages"]
    return packages


def test_the_devnet_npm_packages_are_exact_and_their_lock_complete_for_npm_ci() -> None:
    """``npm ci`` installs the lock as it is; it refuses a lock that lacks a package
    ``package.json`` or another package asks for, optional ones (anvil's binaries for
    other platforms) included."""
    wanted = json.loads((ROOT / "contracts" / "package.json").read_text())["dependencies"]
    packages = _npm_lock()
    assert packages[""]["dependencies"] == wanted
    for name, version in wanted.items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name} is not pinned exactly"
        assert packages[f"node_modules/{name}"]["version"] == version
    for path, entry in packages.items():
        if not path:
            continue
        assert str(entry.get("integrity", "")).startswith("sha512-"), path
        needed: dict[str, str] = {
            **entry.get("dependencies", {}),
            **entry.get("optionalDependencies", {}),
        }
        for dependency in needed:
            assert f"node_modules/{dependency}" in packages, f"{path} needs {dependency}"
    platforms = {path for path in packages if path.startswith("node_modules/@foundry-rs/anvil-")}
    assert {"linux-amd64", "linux-arm64", "darwin-amd64", "darwin-arm64"} <= {
        path.removeprefix("node_modules/@foundry-rs/anvil-") for path in platforms
    }


def test_every_contract_asks_for_exactly_the_pinned_compiler() -> None:
    solc = _npm_lock()["node_modules/solc"]["version"]
    sources = sorted((ROOT / "contracts" / "src").rglob("*.sol"))
    assert sources
    for source in sources:
        pragmas = re.findall(r"^pragma solidity ([^;]+);", source.read_text(), re.MULTILINE)
        assert pragmas == [solc], f"{source.relative_to(ROOT)}: pragma {pragmas}, solc {solc}"
