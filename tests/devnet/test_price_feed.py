"""``yieldagent devnet price``: the pegged collateral's feed the manifest lists answers a new
price, and the Morpho market's oracle over it follows (its liquidations see the depeg too)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.devnet import Devnet
from yieldagent.cli import main
from yieldagent.devnet.toolchain import compile_project

pytestmark = pytest.mark.evm


def test_the_devnet_price_command_moves_the_pegged_collaterals_feed(
    net: Devnet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "devnet.json"
    net.manifest.write(manifest)
    monkeypatch.setenv("YIELDAGENT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("YIELDAGENT_RPC_URL_8453", net.url)
    monkeypatch.setenv("YIELDAGENT_DEPLOYMENT_8453", str(manifest))
    [(token, listed)] = net.manifest.collateral_feeds.items()
    artifacts = compile_project()
    feed = net.d.at(artifacts["DevPriceFeed"], listed["feed"])
    oracle = net.d.at(artifacts["FeedOracle"], net.morpho.contracts["pegged_oracle"])
    assert oracle.functions.price().call() == 10**36  # $1 of a 6-decimal stable in USDC

    assert main(["devnet", "price", "--token", token.lower(), "--usd", "0.93"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == {
        "token": token.lower(),
        "feed": listed["feed"],
        "answer": "93000000",
        "decimals": 8,
    }
    assert feed.functions.latestRoundData().call()[1] == 93_000_000
    assert oracle.functions.price().call() == 93 * 10**34

    assert main(["devnet", "price", "--token", net.usdc, "--usd", "0.5"]) == 1
    assert "no price feed for" in json.loads(capsys.readouterr().err)["error"]
