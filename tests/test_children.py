"""children.start: a child gets none of our settings, ends when the process that started it
is killed, and starts cleanly while gRPC calls are in flight."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent import futures

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from yieldagent import children

linux = pytest.mark.skipif(sys.platform != "linux", reason="a death signal is Linux's")


def test_the_child_gets_none_of_our_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YIELDAGENT_OPERATOR_KEY_PASSWORD", "hunter2")
    monkeypatch.setenv("CHILDREN_TEST_PLAIN", "kept")
    child = children.start(["env"], stdout=subprocess.PIPE)
    out, _ = child.communicate(timeout=30)
    assert child.returncode == 0
    assert b"CHILDREN_TEST_PLAIN=kept" in out
    assert b"YIELDAGENT_" not in out and b"hunter2" not in out


def test_the_child_runs_the_program_itself() -> None:
    child = children.start(["sh", "-c", "echo $$"], stdout=subprocess.PIPE)
    out, _ = child.communicate(timeout=30)
    assert int(out) == child.pid  # the pid to signal is the program's


def test_a_missing_program_is_refused_here() -> None:
    with pytest.raises(FileNotFoundError):
        children.start(["no-such-program-anywhere"])


_STARTER = """
import os, signal, sys
from yieldagent import children
child = children.start(["sleep", "60"])
with open(f"/proc/{child.pid}/comm") as comm:  # wait until the trampoline is gone
    while comm.read().strip() != "sleep":
        comm.seek(0)
print(child.pid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _ended(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


@linux
def test_the_child_ends_when_the_process_that_started_it_is_killed() -> None:
    starter = subprocess.run(
        [sys.executable, "-c", _STARTER], capture_output=True, timeout=60, check=False
    )
    assert starter.returncode == -signal.SIGKILL
    pid = int(starter.stdout)
    deadline = time.monotonic() + 30
    while not _ended(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _ended(pid)


@pytest.fixture
def calls_in_flight() -> Iterator[None]:
    """A gRPC server and two threads calling it without a pause."""
    server = grpc.server(futures.ThreadPoolExecutor(4))
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    stop = threading.Event()

    def call() -> None:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while not stop.is_set():
                stub.Check(health_pb2.HealthCheckRequest())

    callers = [threading.Thread(target=call) for _ in range(2)]
    for caller in callers:
        caller.start()
    yield
    stop.set()
    for caller in callers:
        caller.join()
    server.stop(None)


@linux
@pytest.mark.usefixtures("calls_in_flight")
def test_children_start_cleanly_while_grpc_calls_are_in_flight() -> None:
    """A fork would run gRPC's fork handlers in the child, which then aborts before exec
    about once in 25 starts; a hundred starts all run the program."""
    codes = []
    for _ in range(100):
        child = children.start(["true"], stderr=subprocess.DEVNULL)
        codes.append(child.wait(timeout=30))
    assert codes == [0] * 100
