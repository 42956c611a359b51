"""The configuration page lists every ``YIELDAGENT_*`` variable the code reads.

A setting nobody can find is a setting nobody sets. ``docs/configuration.md`` must name
every ``YIELDAGENT_*`` variable that ``src/`` mentions (the settings, the devnet's, the
per-chain ones) and every one the tests and benchmarks read from the environment; and each
name it lists must still be read somewhere.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "configuration.md"
NAME = re.compile(r"\bYIELDAGENT_[A-Z0-9_]+")
"""A variable, or a per-chain prefix: the page writes ``YIELDAGENT_RPC_URL_<chain_id>`` and
the code ``"YIELDAGENT_RPC_URL_"`` or ``f"YIELDAGENT_RPC_URL_{chain_id}"``, both of which
read as the prefix ``YIELDAGENT_RPC_URL_``."""
READ = re.compile(r"""(?:environ\.get\(|environ\[|getenv\()\s*["'](YIELDAGENT_[A-Z0-9_]+)["']""")
"""A variable a test or a benchmark reads from its environment."""


def _python(*folders: str) -> list[Path]:
    return [
        path
        for folder in folders
        for path in sorted((ROOT / folder).rglob("*.py"))
        if "yieldagent/v1/" not in path.as_posix()  # generated from the protos
    ]


def _documented() -> set[str]:
    return set(NAME.findall(PAGE.read_text(encoding="utf-8")))


def _mentioned_in_src() -> set[str]:
    return {name for path in _python("src") for name in NAME.findall(path.read_text())}


def _read_by_tests() -> set[str]:
    return {
        name for path in _python("tests", "benchmarks") for name in READ.findall(path.read_text())
    }


def _covers(documented: set[str], name: str) -> bool:
    """Whether the page names ``name``: a prefix (``…_``) is named by any variable it
    starts, and a per-chain variable (``…_8453``) by its prefix."""
    if name.endswith("_"):
        return any(doc.startswith(name) for doc in documented)
    return name in documented or any(
        doc.endswith("_") and name.startswith(doc) and name[len(doc) :].isdigit()
        for doc in documented
    )


def test_every_variable_the_code_reads_is_documented() -> None:
    documented = _documented()
    missing = sorted(
        name for name in _mentioned_in_src() | _read_by_tests() if not _covers(documented, name)
    )
    assert not missing, f"add these to {PAGE.relative_to(ROOT)}: {missing}"


def test_every_documented_variable_is_still_read() -> None:
    read = _mentioned_in_src() | _read_by_tests()
    stale = sorted(
        name
        for name in _documented()
        if not (any(use.startswith(name) for use in read) if name.endswith("_") else name in read)
    )
    assert not stale, f"{PAGE.relative_to(ROOT)} lists variables nothing reads: {stale}"


def test_a_prefix_covers_its_chains_only() -> None:
    documented = {"YIELDAGENT_RPC_URL_", "YIELDAGENT_HTTP_PORT"}
    assert _covers(documented, "YIELDAGENT_RPC_URL_")
    assert _covers(documented, "YIELDAGENT_RPC_URL_8453")
    assert not _covers(documented, "YIELDAGENT_RPC_URL_BASE")
    assert not _covers(documented, "YIELDAGENT_HTTP_HOST")
