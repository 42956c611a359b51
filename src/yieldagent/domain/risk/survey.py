"""The guards applied to a chain's pools: what the agent and the placement of new funds
plan with (``RiskView``), and the use case that reads and records it (``RiskSurvey``).

A survey reads each pool's guard inputs from the chain (``PoolReads``; a chain without
them is judged on its quotes: supply, borrows, cash), what the service holds there and
each pool's stored record, and judges every pool (``guards.assess``). A chain read only at
its head gives no history: the record then keeps the pool's recent snapshots
(``history.remembered``), so a TVL drop or a past pause shows there as on the simulator,
and the highest share price seen, so a loss shows too.
A loss the guards see becomes a stored exclusion that only an operator lifts (``clear``).
A pool whose state changed is reported to the survey's observer (metrics) and stored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from yieldagent.domain.books.valuation import Valuation
from yieldagent.domain.books.wallets import Wallet
from yieldagent.domain.constraints import Constraints, Thresholds
from yieldagent.domain.market.curves import Candidate
from yieldagent.domain.market.history import Snapshot, remembered
from yieldagent.domain.market.ports import MarketChain, PoolReads, RiskRecord, RiskRepository
from yieldagent.domain.market.quotes import PoolQuote
from yieldagent.domain.market.readings import PoolReading, RiskState
from yieldagent.domain.risk.guards import OK, Exposure, Rule, Verdict, assess
from yieldagent.domain.risk.limits import (
    cap_within,
    guarded,
    must_wait,
    relaxed,
    share_room,
    unbound_below,
)
from yieldagent.domain.risk.notices import tell
from yieldagent.domain.risk.settings import RiskSettings


class RiskObserver(Protocol):
    """Hears of the guards' verdicts: pools whose state changed, and moves refused
    (metrics, events)."""

    def changed(self, chain_id: int, token: str, protocol: str, verdict: Verdict) -> None:
        """The pool's state or reasons changed since the last survey."""

    def move_refused(self, chain_id: int, token: str, protocol: str) -> None:
        """A wallet's move out of the pool was refused: it would have lost too much."""


class _Unobserved:
    def changed(self, chain_id: int, token: str, protocol: str, verdict: Verdict) -> None:
        return None

    def move_refused(self, chain_id: int, token: str, protocol: str) -> None:
        return None


UNOBSERVED = _Unobserved()


@dataclass(frozen=True, slots=True)
class PoolRisk:
    """One pool's verdict, and what the service held there when it was judged."""

    verdict: Verdict
    ours: int = 0


@dataclass(frozen=True, slots=True)
class RiskView:
    """The guards' view of one chain's pools at one moment, for planning."""

    settings: RiskSettings = field(default_factory=RiskSettings)
    pools: Mapping[tuple[str, str], PoolRisk] = field(default_factory=dict)
    """By (token, protocol)."""
    last_moves: Mapping[int, float] = field(default_factory=dict)
    """When each wallet last moved funds (wall-clock unix seconds), by wallet id."""
    now: float = 0.0
    """Wall-clock unix seconds, as ``last_moves`` are."""
    enabled: bool = True
    """False: no guard applies (a view for callers that guard nothing)."""
    chain_id: int = 0
    observer: RiskObserver = UNOBSERVED
    """Hears of the moves the plans refuse."""
    _rooms: dict[tuple[str, str, int, int], int] = field(
        default_factory=dict, compare=False, repr=False
    )
    """The service's share room by (token, pool, TVL, position): the same for every wallet
    of a batch until a move changes the pool, so computed once per pool state."""
    _unbound: dict[tuple[str, str], tuple[PoolQuote, int, int]] = field(
        default_factory=dict, compare=False, repr=False
    )
    """By (token, pool): the quote and service position last seen there, and the wallet
    value below which no cap binds in that state (``limits.unbound_below``). The quote
    is held, so an identity check stands for its state."""

    def move_refused(self, token: str, protocol: str) -> None:
        """Tells the observer that a move out of the pool was refused."""
        self.observer.move_refused(self.chain_id, token, protocol)

    def pool(self, token: str, protocol: str) -> PoolRisk:
        """The pool's verdict; OK for a pool not surveyed."""
        return self.pools.get((token, protocol), _UNJUDGED)

    def constrain(
        self,
        token: str,
        rules: Constraints,
        candidates: Sequence[Candidate],
        total: int,
        ours: Mapping[tuple[str, str], int] | None = None,
        relax: bool = False,
    ) -> Constraints:
        """A wallet's ``rules`` with the guards, for a wallet worth ``total``: pools to exit
        excluded, and each of ``candidates`` capped at what its verdict, the pool share and
        the pool size let the wallet hold (a cap of ``total`` or more binds nothing and is
        left out, so most wallets keep their own rules, and equal wallets share a plan).
        ``ours``: the service's position in each pool (by token, protocol) as the moves
        planned so far leave it, when not as surveyed. ``relax``: the wallet's minimums
        dropped (see ``limits.relaxed``)."""
        if not self.enabled:
            return rules
        verdicts: dict[str, Verdict] = {}
        caps: dict[str, int] = {}
        for candidate in candidates:
            name = candidate.protocol
            pool = self.pool(token, name)
            held = candidate.current
            service = pool.ours if ours is None else ours.get((token, name), pool.ours)
            if not pool.verdict.takes_funds:
                verdicts[name] = pool.verdict
            elif total <= self._unbound_below(token, name, candidate.quote, service):
                continue  # most wallets: nothing of this pool's caps binds them
            tvl = candidate.quote.total_supply
            key = (token, name, tvl, max(service, held))
            room = self._rooms.get(key)
            if room is None:
                room = self._rooms[key] = share_room(tvl, key[3], self.settings)
            cap = cap_within(room, tvl, held, pool.verdict, self.settings)
            if cap < total:
                caps[name] = cap
        return guarded(relaxed(rules) if relax else rules, verdicts, caps)

    def _unbound_below(self, token: str, name: str, quote: PoolQuote, service: int) -> int:
        """``limits.unbound_below`` of the pool in this state, computed once per state."""
        seen = self._unbound.get((token, name))
        if seen is None or seen[0] is not quote or seen[1] != service:
            bound = unbound_below(quote.total_supply, service, self.settings)
            seen = self._unbound[(token, name)] = (quote, service, bound)
        return seen[2]

    def thresholds(self, wallet_id: int, thresholds: Thresholds) -> Thresholds:
        """``thresholds`` for this wallet now: within the minimum wait after its last move,
        no gain pays for a move (required moves and idle funds still go)."""
        if self.enabled and must_wait(self.last_moves.get(wallet_id), self.now, self.settings):
            return replace(thresholds, min_apr_gain=math.inf)
        return thresholds


_UNJUDGED = PoolRisk(OK)
UNGUARDED = RiskView(enabled=False)
"""A view under which every pool is OK and no move waits."""


def reading_of(quote: PoolQuote, at: int) -> PoolReading:
    """What a pool's quote shows its guards, for a chain that reads no more: its supply
    and what it cannot pay out now, no switches, no history."""
    tvl = quote.total_supply
    snapshot = Snapshot(at, tvl, max(tvl - quote.cash, 0), share_price=0)
    return PoolReading(quote.protocol, snapshot)


@dataclass(frozen=True, slots=True)
class Judged:
    """One pool as a survey judged it: its verdict, what the service holds there, and its
    stored record."""

    protocol: str
    token: str
    verdict: Verdict
    ours: int
    record: RiskRecord


class RiskSurvey:
    """Judges a chain's pools under every guard and keeps their records."""

    def __init__(
        self,
        store: RiskRepository,
        settings: RiskSettings,
        observer: RiskObserver = UNOBSERVED,
    ) -> None:
        self._store = store
        self.settings = settings
        self._observer = observer

    async def judge(
        self,
        chain_id: int,
        chain: MarketChain,
        token: str,
        quotes: Mapping[str, PoolQuote],
        at: int,
    ) -> list[Judged]:
        """Every pool of ``quotes`` (of ``token``), judged at chain time ``at``. Stores a
        new loss exclusion and every changed state, and tells the observer."""
        protocols = sorted(quotes)
        readings = {q.protocol: reading_of(q, at) for q in quotes.values()}
        if isinstance(chain, PoolReads):
            readings.update({r.protocol: r for r in await chain.pool_readings(token, protocols)})
        exposure = self._store.exposure(chain_id, token)
        records = {(r.protocol, r.token): r for r in self._store.records(chain_id)}
        judged: list[Judged] = []
        changed: list[RiskRecord] = []
        for protocol in protocols:
            record = records.get((protocol, token), RiskRecord(protocol, token))
            ours = exposure.get(protocol, 0)
            reading = readings[protocol]
            history = record.history
            if not reading.history:  # the chain keeps none: the record does
                reading = replace(reading, history=record.history)
                history = remembered(record.history, reading.now, self.settings.window_seconds)
            verdict = assess(
                reading,
                Exposure(ours, record.loss_excluded, record.cleared_at, record.peak_share_price),
                self.settings,
            )
            updated = replace(
                record,
                loss_excluded=record.loss_excluded or Rule.LOSS in verdict.rules,
                state=str(verdict.state),
                reasons=verdict.reasons,
                peak_share_price=max(record.peak_share_price, reading.now.share_price),
                history=history,
            )
            if updated != record:
                changed.append(updated)
                if (updated.state, updated.reasons) != (record.state, record.reasons):
                    self._observer.changed(chain_id, token, protocol, verdict)
            judged.append(Judged(protocol, token, verdict, ours, updated))
        if changed:
            tell(self._store, chain_id, changed, {k: r.state for k, r in records.items()})
        return judged

    def held(self, chain_id: int, token: str) -> list[str]:
        """The protocols in which the chain's wallets hold ``token``, as the books' totals
        have it."""
        return sorted(
            name for name, amount in self._store.exposure(chain_id, token).items() if amount > 0
        )

    async def view(
        self,
        chain_id: int,
        chain: MarketChain,
        quotes: Mapping[str, Mapping[str, PoolQuote]],
        at: int,
        wallet_ids: Sequence[int] = (),
        now: float = 0.0,
        moved: Mapping[int, float] | None = None,
    ) -> RiskView:
        """The view a batch plans with: every pool of ``quotes`` (by token, then
        protocol) judged at chain time ``at``, and when ``wallet_ids`` last moved
        (``moved`` when the caller read it already, as a claim does)."""
        pools: dict[tuple[str, str], PoolRisk] = {}
        for token, by_protocol in quotes.items():
            for judged in await self.judge(chain_id, chain, token, by_protocol, at):
                pools[(token, judged.protocol)] = PoolRisk(judged.verdict, judged.ours)
        if moved is not None:
            last_moves = moved
        else:
            last_moves = self._store.last_moves(wallet_ids) if wallet_ids else {}
        return RiskView(
            self.settings, pools, last_moves, now, chain_id=chain_id, observer=self._observer
        )

    def clear(self, chain_id: int, protocol: str, at: int) -> list[RiskRecord]:
        """Lifts the loss exclusion of ``protocol``'s pools on ``chain_id`` at chain time
        ``at``: the loss guard looks at share prices only from then on. Returns the
        records it cleared (none if no pool was excluded)."""
        records = self._store.records(chain_id)
        cleared = [
            replace(
                r,
                loss_excluded=False,
                cleared_at=at,
                state=str(RiskState.OK),
                reasons=(),
                peak_share_price=0,  # the price from now on is the new reference
            )
            for r in records
            if r.protocol == protocol and r.loss_excluded
        ]
        if cleared:
            tell(self._store, chain_id, cleared, {(r.protocol, r.token): r.state for r in records})
        return cleared


async def risk_view(
    survey: RiskSurvey | None,
    chain_id: int,
    chain: MarketChain,
    wallets: Sequence[Wallet],
    valuations: Mapping[int, Valuation],
    at: int,
    now: float,
    moved: Mapping[int, float] | None = None,
) -> RiskView:
    """The guards' view of the pools ``valuations`` read, for planning ``wallets`` (every
    pool OK and no wait without a ``survey``); ``moved``: when the wallets last moved, if
    the caller knows (else the survey reads it)."""
    if survey is None:
        return UNGUARDED
    quotes = {w.token: valuations[w.id].quotes for w in wallets if w.id in valuations}
    return await survey.view(chain_id, chain, quotes, at, [w.id for w in wallets], now, moved)
