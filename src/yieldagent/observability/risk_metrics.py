"""The risk guards counted in the metrics: ``RiskMetrics`` is the ``RiskObserver`` the
service gives its survey. Each pool whose state changed sets its state gauge and counts a
trip of every rule that put it there; a move the move-loss rule refused counts a trip of
that rule."""

from __future__ import annotations

from yieldagent.domain.market.readings import RiskState
from yieldagent.domain.risk.guards import Verdict
from yieldagent.observability.metrics import record_move_refused, record_risk

_LEVEL = {RiskState.OK: 0, RiskState.NO_NEW_FUNDS: 1, RiskState.EXIT: 2}


class RiskMetrics:
    """Records the guards' changes in ``yieldagent.observability.metrics``."""

    def changed(self, chain_id: int, token: str, protocol: str, verdict: Verdict) -> None:
        """A pool's state or reasons changed."""
        record_risk(
            chain_id, token, protocol, _LEVEL[verdict.state], [str(r) for r in verdict.rules]
        )

    def move_refused(self, chain_id: int, token: str, protocol: str) -> None:
        """A move out of the pool was refused by the move-loss rule."""
        record_move_refused(chain_id, protocol)
