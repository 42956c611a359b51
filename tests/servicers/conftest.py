"""Makes the grpc_testing harness next to this file importable by the servicer tests.

Tests run with ``--import-mode=importlib``, which puts no test directory on
``sys.path``; the harness is a plain module, so this directory is added here.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
