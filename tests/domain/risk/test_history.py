"""A pool's history: what the survey remembers for a chain read only at its head, and the
guards it feeds there. Pure: an in-memory store, readings made by hand."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import pytest

from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.genesis import genesis_pool
from yieldagent.chain.simulated.pools import quote_of
from yieldagent.domain.market.history import MAX_SNAPSHOTS, Snapshot, interval, remembered
from yieldagent.domain.market.ports import RiskRecord
from yieldagent.domain.market.readings import PoolReading, RiskState
from yieldagent.domain.risk.guards import Rule
from yieldagent.domain.risk.settings import RiskSettings
from yieldagent.domain.risk.survey import RiskSurvey

DAY = 86_400
START = 1_800_000_000
_USDC = load_catalog().chain(8453).tokens[0]
TOKEN = _USDC.address
QUOTES = {
    p.name: quote_of(genesis_pool(8453, _USDC, p, 7, START))
    for p in _USDC.protocols
    if p.name == "aave"
}
TVL = 10_000_000 * 10**6


def _at(at: int, tvl: int = TVL, **switches: bool) -> Snapshot:
    return Snapshot(at, tvl, tvl // 2, 10**27, **switches)


def test_one_snapshot_is_remembered_per_interval_and_one_per_flipped_switch() -> None:
    step = interval(DAY)
    assert step == DAY // MAX_SNAPSHOTS == 1_800
    history = remembered((), _at(START), DAY)
    assert history == (_at(START),)
    same = remembered(history, _at(START + step - 1), DAY)
    assert same is history  # read again within the interval: nothing to store
    paused = remembered(history, _at(START + 60, supply_paused=True), DAY)
    assert paused == (_at(START), _at(START + 60, supply_paused=True))
    later = remembered(history, _at(START + step), DAY)
    assert later == (_at(START), _at(START + step))


def test_a_day_of_readings_keeps_the_window_and_no_more() -> None:
    history: tuple[Snapshot, ...] = ()
    for at in range(START, START + 3 * DAY, 60):  # a reading a minute for three days
        history = remembered(history, _at(at), DAY)
    assert len(history) <= MAX_SNAPSHOTS
    assert history[-1].at - history[0].at <= DAY
    assert history[-1].at >= START + 3 * DAY - interval(DAY) - 60


class _Store:
    """An in-memory ``RiskRepository``."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str], RiskRecord] = {}
        self.saves = 0

    def records(self, chain_id: int) -> list[RiskRecord]:
        return list(self.kept.values())

    def save(self, chain_id: int, records: Sequence[RiskRecord]) -> None:
        self.saves += 1
        self.kept.update({(r.protocol, r.token): r for r in records})

    def exposure(self, chain_id: int, token: str) -> Mapping[str, int]:
        return {"aave": TVL // 100}

    def last_moves(self, wallet_ids: Sequence[int]) -> Mapping[int, float]:
        return {}


class _Head:
    """A chain that reads its pools' switches and share prices at its head, and no
    history: as the web3 adapter does."""

    def __init__(self) -> None:
        self.now = _at(START)

    async def pool_readings(self, token: str, protocols: Sequence[str]) -> list[PoolReading]:
        return [PoolReading("aave", self.now)]


async def _state(survey: RiskSurvey, chain: _Head) -> tuple[RiskState, tuple[Rule, ...]]:
    [judged] = await survey.judge(8453, chain, TOKEN, QUOTES, chain.now.at)  # type: ignore[arg-type]
    return judged.verdict.state, judged.verdict.rules


@pytest.mark.asyncio
async def test_a_tvl_drop_over_hours_shows_on_a_chain_read_only_at_its_head() -> None:
    store, chain = _Store(), _Head()
    survey = RiskSurvey(store, RiskSettings())
    for hour in range(6):  # a healthy pool read every ten minutes
        for minute in range(0, 60, 10):
            chain.now = _at(START + hour * 3_600 + minute * 60)
            assert await _state(survey, chain) == (RiskState.OK, ())
    assert store.saves <= 6 * 2 + 1  # a snapshot each half hour, not each reading
    # other suppliers withdraw 60% over the next three hours
    for hour, kept in ((6, 80), (7, 60), (8, 40)):
        chain.now = _at(START + hour * 3_600, TVL * kept // 100)
        state, rules = await _state(survey, chain)
    assert (state, rules) == (RiskState.EXIT, (Rule.TVL_DROP,))


@pytest.mark.asyncio
async def test_a_pause_between_two_judgements_counts_within_the_window() -> None:
    store, chain = _Store(), _Head()
    survey = RiskSurvey(store, RiskSettings())
    assert await _state(survey, chain) == (RiskState.OK, ())
    chain.now = replace(_at(START + 60), supply_paused=True)
    assert (await _state(survey, chain))[0] == RiskState.EXIT
    chain.now = _at(START + 120)  # supply reopened a minute later
    state, rules = await _state(survey, chain)
    assert (state, rules) == (RiskState.EXIT, (Rule.PAUSED,))
    chain.now = _at(START + DAY + 180)  # the pause left the window
    assert await _state(survey, chain) == (RiskState.OK, ())
