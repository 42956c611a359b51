"""What a wallet says while a pool holds its funds back: which pool holds how much, and
why (its withdrawals are paused).

A pool whose withdrawals are paused keeps what the wallet supplied to it; neither the
agent nor a withdrawal can take it out until the pool reopens. The worker's refresh reads
the pools' switches and puts the reason in the wallet's ``status_reason``, and clears it
once nothing is held back. It leaves alone a reason some other rule set (a revocation, a
deactivation waiting for cash, an exit in progress): those say where the funds are too.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from yieldagent.domain.market.readings import PoolReading

PAUSED = "withdrawals are paused in "
"""How a held-back reason starts (and how the refresh knows it set it)."""


def paused_pools(readings: Sequence[PoolReading]) -> frozenset[str]:
    """The protocols whose latest reading shows their withdrawals paused."""
    return frozenset(r.protocol for r in readings if r.now.withdraw_paused)


def held_back(positions: Mapping[str, int], paused: Collection[str], symbol: str) -> str:
    """The reason the wallet's funds in ``paused`` pools cannot leave ("" when none is
    held there)."""
    held = [(name, amount) for name, amount in sorted(positions.items()) if amount > 0]
    stuck = [f"{name} (holding {amount})" for name, amount in held if name in paused]
    if not stuck:
        return ""
    return (
        f"{PAUSED}{', '.join(stuck)}, in {symbol}'s smallest unit: those funds cannot "
        "leave until the pool reopens withdrawals"
    )


def follows(reason: str) -> bool:
    """Whether the refresh may set or clear ``reason``: none, or one it set itself."""
    return reason == "" or reason.startswith(PAUSED)
