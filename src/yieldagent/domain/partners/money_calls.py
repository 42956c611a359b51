"""The per-wallet limit on money calls: at most ``limit`` in any ``window`` seconds.

Every money call (activation, top-up, withdrawal, run, reward claim, deactivation) can make
the operator pay gas, so a leaked partner key could burn it on one wallet as fast as the
partner's rate limit allows. This limit counts each partner's calls on each wallet over a
sliding window, in a log every replica shares (``MoneyCallLog``, a table), so N replicas
do not allow N times the calls.

A call is written first, then counted with the others in the window: of two calls that
race for the last place both may be refused, never both allowed. A refused call is taken
out of the log again, so that a caller who keeps knocking is let in once the window has
room.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from yieldagent.domain.errors import RateLimited

WINDOW_SECONDS = 60.0
"""The span the limit counts over: a minute."""


@dataclass(frozen=True, slots=True)
class MoneyCall:
    """One money call: who made it, on which wallet, when (unix seconds)."""

    partner_id: int
    chain_id: int
    wallet: str
    """The wallet's address, lower-cased: the same wallet however it is spelled."""
    at: float


@dataclass(frozen=True, slots=True)
class LoggedCall:
    """A call in the log: its id and when it was made."""

    id: int
    at: float


class MoneyCallLog(Protocol):
    """Where every replica writes the money calls it admits."""

    def record(self, call: MoneyCall, since: float) -> tuple[int, Sequence[LoggedCall]]:
        """Writes ``call``, forgets every call (of any wallet) made before ``since``, and
        returns the new call's id with the calls of the same partner and wallet made since
        ``since``, the new one included."""
        ...

    def forget(self, call_id: int) -> None:
        """Takes the call ``call_id`` out of the log."""
        ...


class MoneyCallLimit:
    """Admits a partner's money calls on a wallet while fewer than ``limit`` were made in
    the last ``window`` seconds."""

    def __init__(
        self,
        log: MoneyCallLog,
        limit: int,
        now: Callable[[], float],
        window: float = WINDOW_SECONDS,
    ) -> None:
        if limit < 1:
            raise ValueError("a money call limit needs at least one call a window")
        self._log = log
        self._limit = limit
        self._now = now
        self._window = window

    @property
    def limit(self) -> int:
        """The calls admitted per wallet in a window."""
        return self._limit

    def check(self, partner_id: int, chain_id: int, wallet: str) -> None:
        """Counts one money call of ``partner_id`` on ``wallet``; raises RateLimited, with
        the whole seconds until the window has room, when it is one too many."""
        now = self._now()
        call = MoneyCall(partner_id, chain_id, wallet.lower(), now)
        call_id, calls = self._log.record(call, now - self._window)
        earlier = sorted(c.at for c in calls if c.id != call_id)
        if len(earlier) < self._limit:
            return
        self._log.forget(call_id)
        # Room comes back when enough of the earlier calls leave the window that fewer
        # than ``limit`` remain.
        frees_at = earlier[len(earlier) - self._limit] + self._window
        raise RateLimited(
            f"Too many money calls on wallet {wallet}: at most {self._limit} a minute; retry later",
            math.ceil(max(frees_at - now, 0.0)),
        )
