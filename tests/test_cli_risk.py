"""The risk scenarios of ``yieldagent sim`` and the guards' view of ``yieldagent protocol``:
each provoked from the command line, each seen in ``protocol risk``, all JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from yieldagent.cli import main

BASE = "8453"
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("YIELDAGENT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("YIELDAGENT_SIM_SPEED", "0")
    for name in ("YIELDAGENT_DATABASE_URL", "YIELDAGENT_SIM_SEED"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out if code == 0 else err)


def _risk(capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, Any]]:
    code, answer = _run(capsys, "protocol", "risk", "--chain", BASE)
    assert code == 0, answer
    return {p["protocol"]: p for p in answer["pools"] if p["token"] == USDC}


def test_a_fresh_market_is_ok_everywhere(capsys: pytest.CaptureFixture[str]) -> None:
    pools = _risk(capsys)
    assert set(pools) == {"aave", "compound", "moonwell", "morpho_gauntlet_usdc_prime"}
    assert {p["state"] for p in pools.values()} == {"ok"}
    assert all(p["reasons"] == [] for p in pools.values())


def test_a_drain_halving_a_pool_puts_it_in_exit(capsys: pytest.CaptureFixture[str]) -> None:
    code, drained = _run(
        capsys, "sim", "drain", "--chain", BASE, "--protocol", "aave", "--fraction", "0.6"
    )
    assert code == 0, drained
    assert int(drained["drained"][USDC]) > 0
    aave = _risk(capsys)["aave"]
    assert aave["state"] == "exit"
    assert "tvl_drop" in aave["rules"]


def test_a_pause_then_its_reopening_keep_the_pool_in_exit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, paused = _run(
        capsys, "sim", "pause", "--chain", BASE, "--protocol", "compound", "--what", "withdraw"
    )
    assert code == 0 and paused["withdraw_paused"] is True and paused["supply_paused"] is False
    assert _risk(capsys)["compound"]["state"] == "no_new_funds"
    _run(capsys, "sim", "pause", "--chain", BASE, "--protocol", "compound", "--what", "supply")
    # nothing can leave while withdrawals are paused: no new funds, whatever else is
    assert _risk(capsys)["compound"]["reasons"] == ["withdrawals are paused"]
    _run(capsys, "sim", "unpause", "--chain", BASE, "--protocol", "compound", "--what", "withdraw")
    assert _risk(capsys)["compound"]["reasons"] == ["supply is paused"]
    code, reopened = _run(
        capsys, "sim", "unpause", "--chain", BASE, "--protocol", "compound", "--what", "all"
    )
    assert code == 0 and reopened["withdraw_paused"] is False
    compound = _risk(capsys)["compound"]
    assert compound["state"] == "exit"
    assert compound["reasons"] == ["the pool was paused within the window"]


def test_a_loss_excludes_the_pool_until_an_operator_clears_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, lost = _run(
        capsys, "sim", "loss", "--chain", BASE, "--protocol", "moonwell", "--fraction", "0.02"
    )
    assert code == 0 and int(lost["lost"][USDC]) > 0
    moonwell = _risk(capsys)["moonwell"]
    assert (moonwell["state"], moonwell["loss_excluded"]) == ("exit", True)
    assert _run(capsys, "sim", "advance", "--seconds", str(3 * 86_400))[0] == 0
    # days later the price history no longer shows the loss: the exclusion still holds
    assert _risk(capsys)["moonwell"]["reasons"] == [
        "excluded after a loss until an operator clears it"
    ]
    code, cleared = _run(capsys, "protocol", "clear", "moonwell", "--chain", BASE)
    assert code == 0 and cleared["cleared"] == [USDC]
    assert _risk(capsys)["moonwell"]["state"] == "ok"


def test_a_depegged_collateral_puts_the_vault_lending_against_it_in_exit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, feed = _run(capsys, "sim", "price", "--chain", BASE, "--token", "cbBTC", "--usd", "94000")
    assert code == 0 and feed["peg"] == str(95_000 * 10**8)
    assert _risk(capsys)["morpho_gauntlet_usdc_prime"]["state"] == "ok"
    _run(capsys, "sim", "price", "--chain", BASE, "--token", "cbBTC", "--usd", "90000")
    morpho = _risk(capsys)["morpho_gauntlet_usdc_prime"]
    assert morpho["state"] == "exit"
    assert "cbBTC" in morpho["reasons"][0]


def test_a_sequencer_outage_makes_every_collateral_feed_stale(
    capsys: pytest.CaptureFixture[str],
) -> None:
    morpho = "morpho_gauntlet_usdc_prime"
    _run(capsys, "sim", "price", "--chain", BASE, "--token", "cbBTC", "--usd", "95000")
    assert _risk(capsys)[morpho]["state"] == "ok"
    code, down = _run(capsys, "sim", "sequencer", "--chain", BASE, "--status", "down")
    assert code == 0 and down["up"] is False
    vault = _risk(capsys)[morpho]
    assert vault["state"] == "no_new_funds"
    assert vault["reasons"] == [
        "the price feed of collateral cbBTC is stale: the chain's sequencer is down"
    ]
    code, up = _run(capsys, "sim", "sequencer", "--chain", BASE, "--status", "up")
    assert code == 0 and up["up"] is True and up["since"] == down["since"]
    assert "came back up less than 3600 s ago" in _risk(capsys)[morpho]["reasons"][0]


@pytest.mark.parametrize(
    "argv",
    [
        ("sim", "drain", "--chain", BASE, "--protocol", "aave", "--fraction", "1.5"),
        ("sim", "loss", "--chain", BASE, "--protocol", "nope", "--fraction", "0.1"),
        ("sim", "price", "--chain", BASE, "--token", "cbBTC", "--usd", "cheap"),
        ("sim", "pause", "--chain", "999", "--protocol", "aave"),
        ("protocol", "clear", "aave"),
    ],
)
def test_bad_arguments_answer_a_json_error(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    code, answer = _run(capsys, *argv)
    assert code == 1
    assert set(answer) == {"error"}
