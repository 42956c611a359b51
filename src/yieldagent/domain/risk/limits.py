"""What the guards let a wallet do: how much it may hold in a pool, which moves are
refused, and when a yield-only move must wait.

``guarded`` turns the pools' verdicts and caps into the optimizer's own constraints
(``domain.constraints``): a pool to exit is excluded (the optimizer then must leave it,
a required move), a pool that takes no new funds is capped at what the wallet holds, and
every pool is capped at what the share and size rules let the wallet hold. So the
optimizer's allocation respects every guard, and its tests against brute force hold with
the guards in place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from yieldagent.domain.constraints import Constraints
from yieldagent.domain.risk.guards import Verdict
from yieldagent.domain.risk.settings import RiskSettings, exact


def share_room(tvl: int, ours: int, settings: RiskSettings) -> int:
    """What the service may add to a pool of ``tvl`` (its own ``ours`` included) and still
    hold at most ``max_pool_share`` of it after its change: the largest ``x`` with
    ``(ours + x) / (tvl + x) <= share``; 0 when it already holds that much."""
    share = exact(settings.max_pool_share)
    if share >= 1:
        return 1 << 256
    room = (share.numerator * tvl - share.denominator * ours) // (
        share.denominator - share.numerator
    )
    return max(room, 0)


def size_cap(tvl: int, held: int, settings: RiskSettings) -> int:
    """The most a wallet holding ``held`` of a pool of ``tvl`` may hold there so that the
    pool's TVL, after the wallet's change, is at least ``min_pool_multiple`` times it: the
    largest ``x`` with ``tvl - held + x >= multiple * x``."""
    multiple = settings.min_pool_multiple
    if multiple <= 1:
        return 1 << 256
    return max(tvl - held, 0) // (multiple - 1)


def wallet_cap(tvl: int, ours: int, held: int, verdict: Verdict, settings: RiskSettings) -> int:
    """The most a wallet holding ``held`` may hold in a pool of ``tvl`` where the service
    holds ``ours`` (``held`` included): 0 for a pool to exit; at most ``held`` for one that
    takes no new funds; otherwise ``held`` plus the service's share room, and never more
    than the size rule allows (which may be less than ``held``: a required move down)."""
    return cap_within(share_room(tvl, ours, settings), tvl, held, verdict, settings)


def unbound_below(tvl: int, ours: int, settings: RiskSettings) -> int:
    """The largest wallet value that no cap of a pool taking new funds binds, whatever the
    wallet holds of it: with ``ours`` the service's position in a pool of ``tvl``, every
    wallet worth at most this gets a ``wallet_cap`` of at least its value. Three bounds:
    the share room at ``ours``; the room left to a wallet holding all of itself there (the
    share of ``tvl`` where ``x <= share_room(tvl, x)``); and the size rule's ``tvl /
    multiple``."""
    share = exact(settings.max_pool_share)
    bound = tvl // settings.min_pool_multiple if settings.min_pool_multiple > 1 else 1 << 256
    if share < 1:
        own = share.numerator * tvl // (2 * share.denominator - share.numerator)
        bound = min(bound, own, share_room(tvl, ours, settings))
    return max(bound, 0)


def cap_within(room: int, tvl: int, held: int, verdict: Verdict, settings: RiskSettings) -> int:
    """``wallet_cap`` given the service's share ``room`` in the pool (``share_room``), which
    every wallet of a batch planned on the same pool state shares."""
    if verdict.exit:
        return 0
    grow = held if not verdict.takes_funds else held + room
    return min(grow, size_cap(tvl, held, settings))


def guarded(
    rules: Constraints,
    verdicts: Mapping[str, Verdict],
    caps: Mapping[str, int],
) -> Constraints:
    """A wallet's constraints with the guards added: pools whose verdict is ``exit``
    excluded (and freed of the wallet's minimums there), each of ``caps`` a maximum
    amount (the lower of the wallet's own and the guard's)."""
    leaving = {name for name, verdict in verdicts.items() if verdict.exit}
    if not leaving and not caps:
        return rules
    max_amount = dict(rules.max_amount)
    for name, cap in caps.items():
        if name not in leaving:
            max_amount[name] = min(cap, max_amount.get(name, cap))
    return replace(
        rules,
        excluded=rules.excluded | leaving,
        max_amount=max_amount,
        min_amount={n: a for n, a in rules.min_amount.items() if n not in leaving},
    )


def relaxed(rules: Constraints) -> Constraints:
    """``rules`` without what can make the guards' caps infeasible (a minimum number of
    protocols, forced positions): leaving a failing pool comes first."""
    return replace(rules, min_protocols=1, min_amount={})


def move_loss_refused(amount: int, received: int, settings: RiskSettings) -> bool:
    """Whether a move of ``amount`` that returns ``received`` loses more than
    ``max_move_loss_bps`` of it (a vault redeem below its share price, a withdrawal short
    of its amount)."""
    lost = amount - received
    return lost > 0 and lost * 10_000 > settings.max_move_loss_bps * amount


def must_wait(last_move_at: float | None, now: float, settings: RiskSettings) -> bool:
    """Whether a move that only chases yield must wait: the wallet's last move was less
    than ``min_wait_seconds`` ago. Exits and other required moves never wait."""
    return last_move_at is not None and now - last_move_at < settings.min_wait_seconds
