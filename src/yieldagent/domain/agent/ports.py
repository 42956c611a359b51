"""The observer port: what the domain reports to whoever watches it.

The agent tells a ``RunObserver`` how each run ended; ``yieldagent.observability`` counts
them in the metrics. ``UNOBSERVED`` hears nothing, for an agent nobody watches.
"""

from __future__ import annotations

from typing import Protocol

from yieldagent.domain.agent.rounds import RunOutcome


class RunObserver(Protocol):
    """Hears how each run ended."""

    def run_ended(self, chain_id: int, outcome: RunOutcome | None) -> None:
        """A run on ``chain_id`` ended with ``outcome`` (``ran`` False: the wallet's state
        allowed no run), or raised (None). A scheduled wallet whose state allows no run,
        and a partner's request the service refused, are no runs: they are not reported."""


class _Unobserved:
    """A ``RunObserver`` that hears nothing."""

    def run_ended(self, chain_id: int, outcome: RunOutcome | None) -> None:
        """Ignores the run."""


UNOBSERVED: RunObserver = _Unobserved()
"""The observer of an agent nobody watches."""
