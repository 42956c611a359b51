"""Extra gRPC serving processes: started by the main process when
``YIELDAGENT_GRPC_PROCESSES`` is above 1, each serving the API on a private loopback port of
its own that Envoy's gRPC cluster lists beside the main process's.

One Python process spends most of a read in grpc.aio's own machinery and uses at most one
core; more processes use more cores. Each is a ``multiprocessing`` child started with
*spawn* (a fresh interpreter, not a fork of a process with threads and open connections),
and gets the settings through its pipe, never on a command line, without the operator's
key or keystore password: it signs through a second pipe, which the main process answers
with its own signer (``chain.signers.relayed``), so the key is never in a child's memory.
The first pipe is also how it ends: a ``stop`` message or the pipe's end-of-file (the
main process died, even by SIGKILL) stops it gracefully; it ignores SIGINT, which a
terminal sends to the whole process group, and leaves stopping to the main process.

Only the main process runs the background work; these answer calls, sharing the database
as replicas do (leases, idempotency records and versioned replies live there).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import signal
from collections.abc import Callable
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from yieldagent.chain.signers.relayed import RelayedSigner, SignatureDesk
from yieldagent.config import Settings
from yieldagent.domain.ports.signer import Signer
from yieldagent.secret_values import Secret

log = logging.getLogger(__name__)

Target = Callable[[Settings, Connection, Signer], None]
"""What an extra process runs, with its settings, its control pipe and the operator's
signer: it serves, then calls ``serve_until_stopped`` with its port."""

_SPAWN = multiprocessing.get_context("spawn")

STOP = "stop"


def without_keys(settings: Settings) -> Settings:
    """``settings`` as a child gets them: no operator key, no keystore password."""
    return replace(settings, operator_private_key=None, operator_key_password=Secret(""))


def _child(
    target: Target, settings: Settings, connection: Connection, signing: Connection, address: str
) -> None:
    """The child's entry point: Ctrl-C reaches the whole process group, and the main process
    stops its children itself, after its own calls have drained."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    target(settings, connection, RelayedSigner(address, signing))


async def serve_until_stopped(connection: Connection, port: int) -> None:
    """In a child: tells the main process the port it serves on, then waits until it is
    told to stop, the main process is gone (end of file on the pipe) or SIGTERM comes."""
    connection.send(port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_reader(connection.fileno(), stop.set)
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    loop.remove_reader(connection.fileno())


@dataclass(slots=True)
class _Child:
    process: BaseProcess
    connection: Connection
    desk: SignatureDesk
    port: int = 0


class ServingProcesses:
    """``count`` children running ``target`` with ``settings`` (less the keys), signing
    through ``signer``."""

    def __init__(self, target: Target, settings: Settings, count: int, signer: Signer) -> None:
        self._target = target
        self._settings = without_keys(settings)
        self._signer = signer
        self._count = count
        self._children: list[_Child] = []
        self.lost = asyncio.Event()
        """Set when a child ends before ``stop``: Envoy would still send it calls."""
        self._stopping = False

    @property
    def ports(self) -> list[int]:
        """The private port of each child, once started."""
        return [child.port for child in self._children]

    @property
    def pids(self) -> list[int]:
        """The process id of each child."""
        return [child.process.pid or 0 for child in self._children]

    async def start(self, within_seconds: float = 60.0) -> None:
        """Starts every child and waits until each serves (or raises, naming why not)."""
        loop = asyncio.get_running_loop()
        for index in range(self._count):
            ours, theirs = _SPAWN.Pipe()
            signing, their_signing = _SPAWN.Pipe()
            process = _SPAWN.Process(
                target=_child,
                args=(self._target, self._settings, theirs, their_signing, self._signer.address),
                name=f"yieldagent-grpc-{index + 1}",
                daemon=True,  # ended at our own exit too, not only by the pipe
            )
            process.start()
            theirs.close()  # only the child holds its end: our death is its end of file
            their_signing.close()
            desk = SignatureDesk(self._signer, signing)
            desk.open()
            self._children.append(_Child(process, ours, desk))
        for child in self._children:
            ready = await asyncio.to_thread(child.connection.poll, within_seconds)
            try:
                child.port = int(child.connection.recv()) if ready else 0
            except EOFError:
                child.port = 0
            if not child.port:
                await asyncio.to_thread(child.process.join, 5.0)
                raise RuntimeError(
                    f"serving process {child.process.name} did not start "
                    f"(exit code {child.process.exitcode})"
                )
            loop.add_reader(child.process.sentinel, self._ended, child)
            log.info(
                "serving process started",
                extra={"pid": child.process.pid, "port": child.port},
            )

    def _ended(self, child: _Child) -> None:
        asyncio.get_running_loop().remove_reader(child.process.sentinel)
        if not self._stopping:
            log.error(
                "serving process ended",
                extra={"pid": child.process.pid, "exit_code": child.process.exitcode},
            )
            self.lost.set()

    async def stop(self, grace_seconds: float) -> None:
        """Asks every child to stop (their calls get ``grace_seconds``), then ends any that
        lingers."""
        self._stopping = True
        for child in self._children:
            with contextlib.suppress(OSError):
                child.connection.send(STOP)
        for child in self._children:
            await asyncio.to_thread(child.process.join, grace_seconds + 5.0)
            if child.process.is_alive():
                child.process.kill()
                await asyncio.to_thread(child.process.join, 5.0)
            with contextlib.suppress(ValueError, OSError):
                asyncio.get_running_loop().remove_reader(child.process.sentinel)
            child.connection.close()
            child.desk.close()
