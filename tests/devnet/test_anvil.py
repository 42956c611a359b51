"""The anvil runner: it starts on a port with Base's chain id and stops by its own pid."""

from __future__ import annotations

import os
import time
import urllib.error
from pathlib import Path

import pytest

from yieldagent.devnet.anvil import Anvil, AnvilError, free_port, rpc

pytestmark = pytest.mark.evm


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_starts_answers_and_stops() -> None:
    with Anvil.start(free_port()) as anvil:
        pid = anvil.pid
        assert int(rpc(anvil.url, "eth_chainId"), 16) == 8453
        assert int(rpc(anvil.url, "eth_blockNumber"), 16) == 0
        url = anvil.url
    assert not _alive(pid)
    with pytest.raises(urllib.error.URLError):
        rpc(url, "eth_chainId", timeout=1.0)


def test_a_taken_port_is_an_error_not_a_hang() -> None:
    with Anvil.start(free_port(), chain_id=31337) as first:
        second = Anvil(first.port)
        with pytest.raises(AnvilError, match=r"exited|chain id 31337"):
            second.launch(timeout=10)
        assert second.process is None  # the failed start cleaned up after itself


def test_block_time_mines_without_transactions() -> None:
    with Anvil.start(free_port(), block_time=1) as anvil:
        first = int(rpc(anvil.url, "eth_blockNumber"), 16)
        time.sleep(2.2)
        assert int(rpc(anvil.url, "eth_blockNumber"), 16) >= first + 2


def test_anvil_runs_with_none_of_our_settings_in_its_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = "0x" + "4d" * 32
    monkeypatch.setenv("YIELDAGENT_OPERATOR_PRIVATE_KEY", key)
    monkeypatch.setenv("YIELDAGENT_OPERATOR_KEY_PASSWORD", "operator-keystore-password")
    with Anvil.start(free_port()) as anvil:
        environ = Path(f"/proc/{anvil.pid}/environ").read_bytes().decode()
    assert "PATH=" in environ
    assert "YIELDAGENT_" not in environ
    assert key not in environ and "operator-keystore-password" not in environ
