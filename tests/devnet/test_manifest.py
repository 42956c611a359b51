"""The deployment manifest: JSON round trips, lookups, and the real devnet's contents."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from support.devnet import Devnet
from yieldagent.composition.deployments import Manifest, ProtocolDeployment, SafeDeployment
from yieldagent.devnet.anvil import rpc
from yieldagent.devnet.run import MANIFEST_ENV, manifest_path

MORPHO = ProtocolDeployment(
    name="morpho_gauntlet_usdc_prime",
    kind="morpho_blue",
    address="0x" + "11" * 20,
    contracts={"morpho": "0x" + "22" * 20, "irm": "0x" + "33" * 20},
    markets=("0x" + "ab" * 32, "0x" + "cd" * 32),
)
MANIFEST = Manifest(
    chain_id=8453,
    rpc_url="http://127.0.0.1:8545",
    deployed_block=42,
    token="0x" + "44" * 20,
    token_symbol="USDC",
    token_decimals=6,
    protocols=(ProtocolDeployment("aave", "aave_v3", "0x" + "55" * 20), MORPHO),
    reward_token=None,
    swap_router="0x" + "77" * 20,
    borrower="0x" + "88" * 20,
    extras={"admin": "0x" + "99" * 20},
)


def test_round_trips_through_json() -> None:
    loaded = Manifest.from_json(MANIFEST.to_json())
    assert loaded == MANIFEST
    assert loaded.protocol("morpho_gauntlet_usdc_prime").markets == MORPHO.markets


def test_round_trips_with_a_safe_deployment() -> None:
    safe = SafeDeployment(
        factory="0x" + "a1" * 20,
        singleton="0x" + "a2" * 20,
        fallback_handler="0x" + "a3" * 20,
        multi_send_call_only="0x" + "a4" * 20,
        module_setup="0x" + "a5" * 20,
        module="0x" + "a6" * 20,
        admin="0x" + "a7" * 20,
        operator="0x" + "a8" * 20,
        price_feeds={"0x" + "44" * 20: "0x" + "a9" * 20},
    )
    manifest = replace(MANIFEST, safe=safe)
    assert Manifest.from_json(manifest.to_json()) == manifest
    assert Manifest.from_json(MANIFEST.to_json()).safe is None  # older manifests load too


def test_writes_and_loads(tmp_path: Path) -> None:
    path = tmp_path / "var" / "devnet.json"
    MANIFEST.write(path)
    assert Manifest.load(path) == MANIFEST
    assert [p.name for p in path.parent.iterdir()] == ["devnet.json"]  # no temporary left


def test_protocol_lookup() -> None:
    assert MANIFEST.protocol("aave").kind == "aave_v3"
    with pytest.raises(KeyError, match="compound"):
        MANIFEST.protocol("compound")


def test_only_a_json_object_is_a_manifest() -> None:
    with pytest.raises(ValueError, match="JSON object"):
        Manifest.from_json("[]")


def test_path_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MANIFEST_ENV, raising=False)
    assert manifest_path() == Path("var/devnet.json")
    monkeypatch.setenv(MANIFEST_ENV, "/tmp/elsewhere.json")
    assert manifest_path() == Path("/tmp/elsewhere.json")


@pytest.mark.evm
def test_the_devnets_manifest_names_deployed_code(devnet: Devnet) -> None:
    manifest, url = devnet
    assert Manifest.from_json(manifest.to_json()) == manifest
    assert manifest.chain_id == 8453
    assert manifest.rpc_url == url
    assert (manifest.token_symbol, manifest.token_decimals) == ("USDC", 6)
    assert manifest.deployed_block <= int(rpc(url, "eth_blockNumber"), 16)
    addresses = [manifest.token] + [
        a for p in manifest.protocols for a in (p.address, *p.contracts.values())
    ]
    for address in addresses:
        assert rpc(url, "eth_getCode", [address, "latest"]) not in ("0x", "0x0"), address
