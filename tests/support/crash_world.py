"""A world for the money paths' process-level crash tests.

A migrated database whose simulated chain stands still (speed 0), a partner and its API
key, and the service (``yieldagent serve``) in a process of its own that a test sends
gRPC calls to, kills with SIGKILL and starts again. Also what the tests read from the
database while the service runs: an operation by its idempotency key, the operations
left open, the wallets left in a transient state or due for an agent run.

The processes a test kills are forked from a fork server that imported the service once
(``Servers``), so that a restart does not cost the import; each runs what
``yieldagent serve`` runs. ``ServeProcess`` runs the command itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import grpc
from sqlalchemy import Engine, update
from sqlmodel import Session, col, select

from support.agent_world import cycle_env
from support.service import free_port
from support.wallet_setup import FEE
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.books.operations import OPEN
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.simulation import SimulationStore
from yieldagent.storage.tables import (
    IdempotencyKeyRow,
    OperationRow,
    WalletRow,
    WalletScheduleRow,
)

SEED = 7
PARTNER = "crash"
LEASE_SECONDS = 2.0
"""The wallets' lease in the served processes: a dead process's wallets are free again
within two seconds, and the worker reconciles every second."""
TRANSIENT = frozenset({WalletStatus.ACTIVATING, WalletStatus.RUNNING, WalletStatus.DEACTIVATING})

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CrashWorld:
    """A migrated database, its simulated market (time standing still), and a partner."""

    url: str
    engine: Engine
    market: SimulatedMarket
    partner_id: int
    api_key: str

    def credentials(self, key: str | None = None) -> tuple[tuple[str, str], ...]:
        """The partner's call metadata, with the idempotency ``key`` if given."""
        sent = (("x-partner-name", PARTNER), ("x-partner-api-key", self.api_key))
        return (*sent, ("idempotency-key", key)) if key is not None else sent


def open_crash_world(url: str) -> CrashWorld:
    """Migrates the database at ``url`` and creates its simulated world and a partner."""
    engine = create_db_engine(url)
    migrate(engine)
    market = SimulatedMarket(SimulationStore(engine), load_catalog(), SEED, speed=0.0)
    market.start()
    partner, api_key = PartnerStore(engine).create(PARTNER, PERMISSIONS)
    return CrashWorld(url, engine, market, partner.id, api_key)


def serve_env(url: str, data_dir: Path, port: int, **settings: str) -> dict[str, str]:
    """The environment of a served process: simulated time standing still, a short lease,
    a quick worker, agents that run only once a day, fees to ``FEE``; plus ``settings``."""
    return cycle_env(
        url,
        data_dir,
        YIELDAGENT_GRPC_PORT=str(port),
        YIELDAGENT_LEASE_SECONDS=str(LEASE_SECONDS),
        YIELDAGENT_WORKER_INTERVAL_SECONDS="0.5",
        YIELDAGENT_AGENT_INTERVAL_SECONDS="86400",
        YIELDAGENT_FEE_COLLECTOR=FEE,
        **settings,
    )


class Logs:
    """The JSON log lines a process writes to its stderr, read as they come, so that a
    test can wait for one."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._process = process
        self._changed = threading.Condition()
        self._messages: Counter[str] = Counter()
        self._lines: list[str] = []
        self._ended = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._process.stderr is not None
        for line in self._process.stderr:
            with self._changed:
                self._lines.append(line)
                try:
                    message = json.loads(line).get("message", "")
                except (ValueError, AttributeError):
                    message = ""
                self._messages[message] += 1
                self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def wait_for(self, message: str, count: int = 1, timeout: float = 60.0) -> bool:
        """Waits until ``message`` was logged ``count`` times; False if the process ended
        (or ``timeout`` passed) first."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._messages[message] < count:
                left = deadline - time.monotonic()
                if self._ended or left <= 0:
                    return False
                self._changed.wait(left)
            return True

    def count(self, message: str) -> int:
        """How many times ``message`` was logged so far."""
        with self._changed:
            return self._messages[message]

    def tail(self, last: int = 40) -> str:
        """The last ``last`` lines."""
        with self._changed:
            return "".join(self._lines[-last:])

    def join(self) -> None:
        """Waits until the pipe is closed (the process ended) and read to its end."""
        self._reader.join(timeout=30)


class ServeProcess:
    """``yieldagent serve`` (``python -m yieldagent serve``) in a process of its own."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "yieldagent", "serve"],
            env=dict(env),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.logs = Logs(self.process)

    def terminate(self) -> None:
        """Sends SIGTERM: the service stops gracefully."""
        self.process.send_signal(signal.SIGTERM)

    def wait_exit(self, timeout: float) -> int:
        """Waits for the process to end; its exit code."""
        code = self.process.wait(timeout=timeout)
        self.logs.join()
        return code

    def kill(self) -> None:
        """SIGKILLs the process if it still runs."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self.logs.join()
        if self.process.stderr is not None:
            self.process.stderr.close()


_FORK_SERVER = """\
import os, signal, sys
from yieldagent.cli import main
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # a child is reaped as soon as it ends
for line in sys.stdin:
    if line != "serve\\n":
        break
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        code = 70
        try:
            code = main(["serve"])
        finally:
            sys.stderr.flush()
            os._exit(code)
    print(pid, flush=True)
"""
"""Imports the service once, then forks a process that runs ``main(["serve"])`` (what
``yieldagent serve`` runs) for each ``serve`` line it reads, and prints its pid. The
children write their logs to its stderr."""


class Servers:
    """The service, one process at a time, on a fixed gRPC port; ``channel`` talks to the
    process serving now.

    A restart should not cost the import of the whole service (over a second, most of a
    round): the processes are forked from a fork server that imported it once. Each runs
    ``yieldagent.cli.main(["serve"])``, which reads its settings from the environment
    then, exactly as the ``yieldagent serve`` command does.
    """

    def __init__(self, url: str, data_dir: Path, **settings: str) -> None:
        self.port = free_port()
        self.env = serve_env(url, data_dir, self.port, **settings)
        self.pid: int | None = None
        self.channel: grpc.Channel | None = None
        self.started = 0
        self._forks = subprocess.Popen(
            [sys.executable, "-c", _FORK_SERVER],
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._logs = Logs(self._forks)

    def start(self) -> int:
        """Starts a process of the service and waits until it serves; returns its pid."""
        assert self.pid is None, "a process already serves"
        forks = self._forks
        assert forks.stdin is not None and forks.stdout is not None
        forks.stdin.write("serve\n")
        forks.stdin.flush()
        line = forks.stdout.readline()
        if not line:
            raise RuntimeError(f"the fork server ended:\n{self._logs.tail()}")
        self.pid = int(line)
        self.started += 1
        if not self._logs.wait_for("grpc server started", self.started, timeout=60):
            self.kill()
            raise RuntimeError(f"the service did not start:\n{self._logs.tail()}")
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}")
        return self.pid

    def kill(self) -> bool:
        """SIGKILLs the serving process and waits until it is gone; True if it was still
        running."""
        assert self.pid is not None
        running = _signal(self.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while _signal(self.pid, 0):
            if time.monotonic() > deadline:
                raise TimeoutError(f"process {self.pid} outlived SIGKILL")
            time.sleep(0.001)
        self.pid = None
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        return running

    def close(self) -> None:
        """Kills the serving process and the fork server."""
        if self.pid is not None:
            self.kill()
        for pipe in (self._forks.stdin, self._forks.stdout):
            if pipe is not None:
                with contextlib.suppress(BrokenPipeError):
                    pipe.close()
        try:
            self._forks.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._forks.kill()
            self._forks.wait(timeout=10)
        self._logs.join()
        if self._forks.stderr is not None:
            self._forks.stderr.close()

    def logs(self) -> str:
        """The last log lines of the processes (for a failure's message)."""
        return self._logs.tail()


def _signal(pid: int, signum: int) -> bool:
    """Sends ``signum`` to ``pid``; False if no such process exists."""
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        return False
    return True


# -- what the database says ------------------------------------------------------------


def operation_row(engine: Engine, scoped_key: str) -> OperationRow | None:
    """The operation started with ``scoped_key`` (as stored: partner, kind and key)."""
    with Session(engine) as session:
        return session.exec(
            select(OperationRow).where(OperationRow.idempotency_key == scoped_key)
        ).first()


def open_operations(engine: Engine) -> list[OperationRow]:
    """Every operation still open (executing or waiting), agent runs included."""
    with Session(engine) as session:
        return list(session.exec(select(OperationRow).where(col(OperationRow.status).in_(OPEN))))


def unsettled_wallets(engine: Engine) -> list[tuple[str, str, str]]:
    """(address, status, reason) of every wallet ``activating``, ``running`` or
    ``deactivating``. Only a deactivation waiting for a pool's cash may leave one there,
    with its reason; the crash tests build no pool short of cash."""
    with Session(engine) as session:
        rows = session.exec(
            select(WalletRow).where(col(WalletRow.status).in_([str(s) for s in TRANSIENT]))
        ).all()
        return [(r.address, r.status, r.status_reason) for r in rows]


def due_wallets(engine: Engine) -> list[str]:
    """The activated wallets whose agent run is due now (the worker runs them at its next
    tick): a wallet activated by the service, or whose activation a crash cut short."""
    with Session(engine) as session:
        return list(
            session.exec(
                select(WalletRow.address)
                .join(WalletScheduleRow, col(WalletScheduleRow.wallet_id) == WalletRow.id)
                .where(
                    col(WalletRow.status) == str(WalletStatus.ACTIVATED),
                    col(WalletScheduleRow.next_run_at) <= time.time(),
                )
            )
        )


def expire_idempotency_leases(engine: Engine) -> int:
    """Lets every idempotency key still in progress lapse, as it would 20 s after its
    process died (the service's fixed key lease); returns how many there were. Only for
    when no process of the world runs."""
    with Session(engine) as session:
        result = session.execute(
            update(IdempotencyKeyRow)
            .where(col(IdempotencyKeyRow.state) == "in_progress")
            .values(lease_until=0.0)
        )
        session.commit()
        return int(result.rowcount)  # type: ignore[attr-defined]


def wait_until(check: Callable[[], T], timeout: float, pause: float = 0.05) -> T:
    """Polls ``check`` until it returns something truthy; returns its last answer (falsy
    when ``timeout`` passed first)."""
    deadline = time.monotonic() + timeout
    while True:
        answer = check()
        if answer or time.monotonic() > deadline:
            return answer
        time.sleep(pause)
