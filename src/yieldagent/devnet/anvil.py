"""A local anvil node: started from the pinned npm binary, stopped by its own pid.

``Anvil.start(port)`` returns once the node answers JSON-RPC; ``stop()`` ends it (SIGTERM,
then SIGKILL). As a context manager it stops on exit. The binary is started directly, not
through a shell or npx, so its pid is the process to stop; on Linux it also dies with the
process that started it.
"""

from __future__ import annotations

import json
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from yieldagent import children
from yieldagent.devnet.toolchain import anvil_binary

BASE_CHAIN_ID = 8453


class AnvilError(RuntimeError):
    """Anvil did not start, or stopped answering."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def rpc(url: str, method: str, params: list[Any] | None = None, timeout: float = 10.0) -> Any:
    """One JSON-RPC call over HTTP; raises ``AnvilError`` on an error answer."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or []})
    request = urllib.request.Request(  # noqa: S310 - a local http URL of our own node
        url, data=body.encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
        answer = json.loads(response.read())
    if "error" in answer:
        raise AnvilError(f"{method}: {answer['error']}")
    return answer["result"]


class Anvil:
    """An anvil process on ``host:port`` with a chain id (Base's by default).

    ``block_time`` None mines a block per transaction (automine); a number of seconds mines
    on that interval instead. ``log`` receives anvil's output (a temporary file by default,
    removed on stop).
    """

    def __init__(
        self,
        port: int,
        *,
        chain_id: int = BASE_CHAIN_ID,
        block_time: float | None = None,
        host: str = "127.0.0.1",
        log: Path | None = None,
    ) -> None:
        self.port = port
        self.chain_id = chain_id
        self.block_time = block_time
        self.host = host
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None
        self._log_handle: IO[bytes] | None = None
        self._temporary_log: Path | None = None

    @classmethod
    def start(
        cls,
        port: int,
        chain_id: int = BASE_CHAIN_ID,
        block_time: float | None = None,
        *,
        host: str = "127.0.0.1",
        log: Path | None = None,
        timeout: float = 30.0,
    ) -> Anvil:
        """Starts anvil and returns it once its RPC answers."""
        anvil = cls(port, chain_id=chain_id, block_time=block_time, host=host, log=log)
        anvil.launch(timeout)
        return anvil

    @property
    def url(self) -> str:
        """The node's HTTP JSON-RPC URL."""
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        """The anvil process id."""
        if self.process is None:
            raise AnvilError("anvil is not running")
        return self.process.pid

    def command(self) -> list[str]:
        """The command line anvil runs with."""
        command = [
            str(anvil_binary()),
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--chain-id",
            str(self.chain_id),
            "--quiet",
        ]
        if self.block_time is not None:
            command += ["--block-time", str(self.block_time)]
        return command

    def launch(self, timeout: float = 30.0) -> None:
        """Starts the process and waits until ``eth_chainId`` answers with our chain id."""
        if self.process is not None:
            raise AnvilError("anvil is already running")
        if self.log is None:
            handle, name = tempfile.mkstemp(prefix="anvil-", suffix=".log")
            self._temporary_log = Path(name)
            self._log_handle = open(handle, "wb")  # noqa: SIM115 - closed in stop()
        else:
            self.log.parent.mkdir(parents=True, exist_ok=True)
            self._log_handle = self.log.open("ab")
        self.process = children.start(  # none of our settings, the operator's key least
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=self._log_handle,
            stderr=subprocess.STDOUT,
        )
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout: float) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise AnvilError(f"anvil exited with {self.process.returncode}: {self._log_tail()}")
            try:
                chain_id = int(rpc(self.url, "eth_chainId", timeout=1.0), 16)
            except (OSError, urllib.error.URLError, AnvilError, ValueError):
                chain_id = None
            if chain_id == self.chain_id:
                return
            if chain_id is not None:
                raise AnvilError(f"{self.url} answers chain id {chain_id}, not {self.chain_id}")
            if time.monotonic() > deadline:
                raise AnvilError(f"anvil did not answer on {self.url} in {timeout:.0f}s")
            time.sleep(0.05)

    def _log_tail(self) -> str:
        path = self.log or self._temporary_log
        if path is None or not path.exists():
            return ""
        return path.read_bytes()[-2000:].decode(errors="replace").strip()

    def stop(self, timeout: float = 5.0) -> None:
        """Stops anvil (SIGTERM, SIGKILL after ``timeout``) and closes its log."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._log_handle is not None:
            self._log_handle.close()
            self._log_handle = None
        if self._temporary_log is not None:
            self._temporary_log.unlink(missing_ok=True)
            self._temporary_log = None

    def __enter__(self) -> Anvil:
        if self.process is None:
            self.launch()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
