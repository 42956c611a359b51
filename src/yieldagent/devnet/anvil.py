"""STAND-IN (devnet-contracts branch): an anvil process. devnet-core owns this module."""

from __future__ import annotations

import socket
import subprocess
import time
from types import TracebackType
from typing import Any

import requests

from yieldagent.devnet.toolchain import anvil_binary


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Anvil:
    """An anvil node on 127.0.0.1; ``with Anvil(port) as node: node.url``."""

    def __init__(self, port: int, chain_id: int = 8453, block_time: int | None = None) -> None:
        self.port = port
        self.chain_id = chain_id
        self.block_time = block_time
        self.url = f"http://127.0.0.1:{port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Anvil:
        """Starts anvil and waits until its RPC answers."""
        command = [
            str(anvil_binary()),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--chain-id",
            str(self.chain_id),
            "--silent",
        ]
        if self.block_time is not None:
            command += ["--block-time", str(self.block_time)]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "eth_chainId"}
                if requests.post(self.url, json=body, timeout=1).ok:
                    return self
            except requests.ConnectionError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("anvil did not answer")

    def stop(self) -> None:
        """Kills anvil."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def __enter__(self) -> Anvil:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
