"""The agent's runs counted in the metrics.

``RunMetrics`` is the ``RunObserver`` the service gives its agent: each run the agent
reports (a manual one, or a scheduled one of a batch) is counted by its outcome and, for
a completed run, with the amounts its mined withdraw and deposit steps moved (the outcome
carries them). Runs a crash interrupted are counted as ``recovered`` from reconciliation's
repairs (``count_recovered``).
"""

from __future__ import annotations

from collections.abc import Iterable

from yieldagent.domain.agent.rounds import RunOutcome
from yieldagent.domain.books.operations import MOVES, OperationKind, OperationStatus
from yieldagent.domain.books.reconciliation import Repair
from yieldagent.observability.metrics import record_run


class RunMetrics:
    """Records each run the agent reports in ``yieldagent.observability.metrics``."""

    def run_ended(self, chain_id: int, outcome: RunOutcome | None) -> None:
        """Counts a run: its outcome (None: it raised, an error); a wallet found in a state
        that allows no run is not counted."""
        if outcome is None:
            record_run("error")
        elif outcome.ran:
            moved = (
                self._moved(chain_id, outcome)
                if outcome.status == OperationStatus.COMPLETED
                else ()
            )
            record_run(outcome.status, moved)

    @staticmethod
    def _moved(chain_id: int, outcome: RunOutcome) -> list[tuple[int, str, str, int]]:
        return [
            (chain_id, token, action, amount)
            for token, action, amount in outcome.moved
            if action in MOVES
        ]


def count_recovered(repairs: Iterable[Repair]) -> None:
    """Counts the runs reconciliation closed after a crash."""
    for repair in repairs:
        if repair.kind == OperationKind.RUN and repair.operation is not None:
            record_run("recovered")
