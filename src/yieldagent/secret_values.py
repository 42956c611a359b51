"""Secrets: a value kept out of ``repr`` and logs, and the environment a child process gets.

A setting that carries a secret is a ``Secret``; what needs the value asks for it with
``reveal()``, so printing the settings, logging them or putting them in an exception shows
only ``Secret('********')``. Child processes (Envoy, anvil, solc) get ``child_environment()``:
this process's environment without any ``YIELDAGENT_*`` variable. They are configured by
their command lines and files, none reads our settings, and a setting may carry a secret
that no list of names would catch (a password in a database URL, a key in an RPC URL).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

SETTINGS_PREFIX = "YIELDAGENT_"


@dataclass(frozen=True, slots=True)
class Secret:
    """A secret value: ``reveal()`` gives it; ``repr`` and ``str`` never do."""

    _value: str = field(repr=False)

    def reveal(self) -> str:
        """The value, for the one call that needs it; do not keep or log it."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('********')"

    def __str__(self) -> str:
        return repr(self)


def child_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (this process's environment by default) without our settings: the
    environment every child process is started with."""
    env = os.environ if env is None else env
    return {name: value for name, value in env.items() if not name.startswith(SETTINGS_PREFIX)}
