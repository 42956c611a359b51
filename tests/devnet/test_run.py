"""``make devnet``'s module: starts anvil, deploys, writes the manifest, stops on a signal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
from pathlib import Path

import pytest
from eth_account import Account

from yieldagent.composition.deployments import Manifest
from yieldagent.devnet.anvil import free_port, rpc

pytestmark = pytest.mark.evm


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_runs_in_the_foreground_until_a_signal(tmp_path: Path, stop: signal.Signals) -> None:
    port = free_port()
    manifest_file = tmp_path / "devnet.json"
    operator = Account.create()
    env = {
        **os.environ,
        "YIELDAGENT_DEVNET_PORT": str(port),
        "YIELDAGENT_DEVNET_MANIFEST": str(manifest_file),
        "YIELDAGENT_DATA_DIR": str(tmp_path / "var"),
        "YIELDAGENT_FEE_COLLECTOR": "0x" + "fe" * 20,
        "YIELDAGENT_OPERATOR_PRIVATE_KEY": operator.key.to_0x_hex(),
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "yieldagent.devnet"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        summary = json.loads(line)
        manifest = Manifest.load(manifest_file)
        url = f"http://127.0.0.1:{port}"
        assert summary["manifest"] == str(manifest_file.resolve())
        assert summary["rpc_url"] == manifest.rpc_url == url
        assert summary["token"] == manifest.token
        assert summary["protocols"]["aave"] == manifest.protocol("aave").address
        assert int(rpc(url, "eth_chainId"), 16) == 8453 == manifest.chain_id
        assert manifest.extras["fee_collector"] == "0x" + "fe" * 20
        assert summary["operator"] == manifest.extras["operator"] == operator.address
        assert int(rpc(url, "eth_getBalance", [operator.address, "latest"]), 16) > 0  # for gas
        assert manifest.safe is not None  # the Safe operator module acts with the same key
        assert manifest.safe.operator == operator.address
        assert summary["safe_module"] == manifest.safe.module

        process.send_signal(stop)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    with pytest.raises(urllib.error.URLError):
        rpc(url, "eth_chainId", timeout=1.0)  # anvil stopped with it
