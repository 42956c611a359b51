"""The README's quickstart, run as written: its bash block against a running service.

The block is the ```sh fence between the README's ``--8<-- [start:quickstart]`` and
``[end:quickstart]`` markers (the docs site includes it from there too). It runs with bash
under ``set -euo pipefail``, so any command that fails fails the test: every curl in it uses
``--fail-with-body``. Then each step's answer (one JSON document a line) is checked in
order, and the service's own record of the wallet at the end.

The service is one of its own, not the shared ``api`` fixture: the block registers the
partner ``acme`` and uses a well-known EOA, which other tests' partners hold there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from support.funded import USDC
from support.service import RunningService, running_service

pytestmark = pytest.mark.rest

README = Path(__file__).resolve().parents[2] / "README.md"
START = "<!-- --8<-- [start:quickstart] -->"
END = "<!-- --8<-- [end:quickstart] -->"
SMART_ACCOUNT = "0xFcA3333b68464af63b80909dFd7F66cf4d2Eb5Aa"
"""The account of the block's EOA with the default agent id, which the README shows."""


def quickstart() -> str:
    """The README's quickstart block, as a human copies it."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index(START) + len(START) : text.index(END)]
    block = re.fullmatch(r"\s*```sh\n(.*)```\s*", section, re.DOTALL)
    assert block, "the quickstart markers must hold exactly one ```sh block"
    return block.group(1)


@pytest.fixture
def service(database_url: str, tmp_path: Path) -> Iterator[RunningService]:
    data_dir = tmp_path / "var"
    data_dir.mkdir()
    with running_service(database_url, data_dir) as running:
        yield running


def run_quickstart(service: RunningService, workdir: Path) -> list[Any]:
    """Runs the block in ``workdir`` and returns its answers, in order."""
    assert shutil.which("curl"), "the quickstart needs curl"
    # After `make run`, `.venv/bin/yieldagent` is the project's command; here it is this
    # interpreter's, with the service's database and data directory in its environment.
    command = workdir / ".venv" / "bin" / "yieldagent"
    command.parent.mkdir(parents=True)
    command.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m yieldagent "$@"\n')
    command.chmod(0o755)
    env = {
        **os.environ,
        "B": f"127.0.0.1:{service.http_port}/api/v1",
        "YIELDAGENT_DATABASE_URL": service.database_url,
        "YIELDAGENT_DATA_DIR": str(service.data_dir),
    }
    done = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + quickstart()],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert done.returncode == 0, f"the quickstart failed:\n{done.stderr}\n{done.stdout}"
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def _withdrawn(answer: Any) -> bool:
    [detail] = answer["withdraw_details"]
    return bool(
        detail["amount"] == "1000000000"
        and detail["principal_amount"] + detail["yield_amount"] == 1_000 * 10**6
        and detail["yield_amount"] > 0  # a month of interest
        and detail["fee_amount"] == detail["yield_amount"] // 10
    )


STEPS: list[tuple[str, Callable[[Any], bool]]] = [
    ("healthcheck", lambda a: a["message"] == "Service is healthy"),
    ("chains", lambda a: 8453 in a["chain_ids"]),
    ("tokens", lambda a: a["tokens"][0]["address"] == USDC),
    (
        "protocols",
        lambda a: {"aave", "compound", "moonwell"} <= {p["name"] for p in a["protocols"]},
    ),
    (
        "activation",
        lambda a: a == {"message": "Agent activated successfully", "wallet": SMART_ACCOUNT},
    ),
    ("a month passes", lambda a: set(a) == {"time"}),
    ("wallet", lambda a: a["wallet"] == SMART_ACCOUNT and a["status"] == "activated"),
    (
        "wallet by EOA",
        lambda a: a["wallet"] == SMART_ACCOUNT and a["deposits"][0]["amount"] == 5 * 10**9,
    ),
    ("APR", lambda a: 0 < a["apr"] < 30 and a["sub_periods"][0]["initial_value"] == 5_000),
    ("transactions", lambda a: "deposit" in {t["action"] for t in a["transactions"]}),
    ("stats", lambda a: a["total_users"] == 1 and a["total_deposits"] == 5_000),
    ("withdrawal", _withdrawn),
    ("top-up", lambda a: a == {"message": "Top-up process started"}),
    ("claim", lambda a: int(a["rewards"][0]["amount"]) > 0),
    (
        "reward history",
        lambda a: a["rewards"][0]["token_symbol"] == "WELL" and a["rewards"][0]["is_staked"],
    ),
    ("run", lambda a: a["status"] in {"completed", "no_action"}),
    ("optimize", lambda a: a["optimization_result"]["allocations"] != []),
    ("deactivation", lambda a: a == {"message": "Wallet deactivation initiated"}),
]
"""Each answer the block prints, in order (a 204 prints none), and what it must say."""


def test_the_readme_quickstart_runs_as_written(service: RunningService, tmp_path: Path) -> None:
    assert SMART_ACCOUNT in quickstart(), "the README shows the account the service creates"

    answers = run_quickstart(service, tmp_path)

    assert len(answers) == len(STEPS), f"{len(STEPS)} answers expected, got {answers}"
    for (name, holds), answer in zip(STEPS, answers, strict=True):
        assert holds(answer), f"{name}: {answer}"

    # The wallet the quickstart left: deactivated, everything back with the user.
    final = service.request("GET", f"/api/v1/8453/wallets/{SMART_ACCOUNT}").json()
    assert final["status"] == "deactivated"
    assert final["selected_protocols"] == [
        "aave",
        "compound",
        "moonwell",
        "morpho_gauntlet_usdc_prime",
    ]
    assert final["current_protocols"] == []
    returned = sum(Decimal(str(w["value"])) for w in final["withdraws"])
    assert returned > 5_500 - 1  # both deposits back, plus yield less fees
