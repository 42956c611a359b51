"""Starting a child process (Envoy, anvil) from a process that runs gRPC: ``start``.

The child gets ``child_environment()``, and on Linux the kernel ends it (SIGTERM) when our
process dies, even by SIGKILL, so a killed service or test run leaves no proxy or node
holding its port. A trampoline sets that death signal: a bare interpreter that calls
``prctl`` and then ``exec``s the program. A ``preexec_fn`` would do it in one call, but it
makes ``subprocess`` fork instead of vfork, and a fork runs gRPC's fork handlers in the
child: they restart a poller whose epoll descriptor ``close_fds`` then closes, and the
child aborts before its ``exec`` (grpc/grpc#43055; about 1 start in 25 while calls are in
flight). The kernel ties the signal to the thread that started the child, so start children
from a thread that lives as long as they do (the main thread, as the service and tests do).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from yieldagent.secret_values import child_environment

_TIED = """\
import ctypes, os, signal, sys
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
except (OSError, AttributeError):
    pass
if os.getppid() != int(sys.argv[1]):
    os._exit(70)  # the parent ended before the signal was set: nobody to serve
os.execv(sys.argv[2], sys.argv[2:])
"""


def start(command: Sequence[str], **options: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(command, **options)`` with ``child_environment()``, ended when we
    die (Linux). Its pid is the program's: the trampoline ``exec``s it. Raises
    FileNotFoundError, as Popen does, when the program is not there."""
    program = shutil.which(command[0])
    if program is None:
        raise FileNotFoundError(f"no such program: {command[0]}")
    argv = [program, *command[1:]]
    if sys.platform == "linux":
        argv = [sys.executable, "-I", "-S", "-c", _TIED, str(os.getpid()), *argv]
    return subprocess.Popen(argv, env=child_environment(), **options)
