"""The agent as the service runs it: each run counted in the metrics.

The domain's ``Agent`` knows nothing of metrics; this subclass, built by the app, counts
what its public ``run`` returns (manual runs) and what each scheduled run of a batch
ends with (``Agent._count``): the run's outcome and, for a completed run, the amounts
its mined withdraw and deposit steps moved (the outcome carries them). Runs a crash
interrupted are counted as ``recovered`` from reconciliation's repairs
(``count_recovered``).
"""

from __future__ import annotations

from collections.abc import Iterable

from yieldagent.domain.agent.rounds import RunOutcome
from yieldagent.domain.agent.runs import Agent
from yieldagent.domain.books.operations import OperationKind, OperationStatus, StepAction
from yieldagent.domain.books.reconciliation import Repair
from yieldagent.domain.errors import YieldAgentError
from yieldagent.observability.metrics import record_run

_MOVES = frozenset({StepAction.DEPOSIT, StepAction.WITHDRAW})


class MeasuredAgent(Agent):
    """An ``Agent`` that records each run in ``yieldagent.observability.metrics``."""

    async def run(
        self,
        chain_id: int,
        address: str,
        partner_id: int | None = None,
        owner: str | None = None,
    ) -> RunOutcome:
        """Runs the wallet's agent (see ``Agent.run``) and counts the run.

        A manual run the service refuses (unknown wallet, wrong state) is no run, and nor
        is a wallet found in a state that allows none: neither is counted.
        """
        try:
            outcome = await super().run(chain_id, address, partner_id, owner)
        except YieldAgentError:
            if partner_id is None:
                record_run("error")
            raise
        except Exception:
            record_run("error")
            raise
        self._count(chain_id, outcome)
        return outcome

    def _count(self, chain_id: int, outcome: RunOutcome | None) -> None:
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
            if action in _MOVES
        ]


def count_recovered(repairs: Iterable[Repair]) -> None:
    """Counts the runs reconciliation closed after a crash."""
    for repair in repairs:
        if repair.kind == OperationKind.RUN and repair.operation is not None:
            record_run("recovered")
