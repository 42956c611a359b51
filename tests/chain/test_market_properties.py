"""Properties of the simulated market under random actions (SQLite): funds are conserved
across supply, withdraw, swap and transfer; no balance goes negative; refusals change nothing.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from fractions import Fraction

import pytest
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from sqlmodel import Session, select

from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.genesis import REWARD_TOKENS
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.market.rate_models import RAY
from yieldagent.simulated_world.state import MarketError
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.simulation import SimulationStore
from yieldagent.storage.tables import (
    SimBalanceRow,
    SimClockRow,
    SimPoolRow,
    SimPositionRow,
    SimTransactionRow,
)

GENESIS_WALL = 1_767_225_600.0
BASE = 8453
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
WELL = REWARD_TOKENS[(BASE, "WELL")].address
MORPHO = REWARD_TOKENS[(BASE, "MORPHO")].address
TOKENS = (USDC, WELL, MORPHO)
PRICES = {USDC: (Fraction(1), 6), WELL: (Fraction(3, 100), 18)}
USER = "0x" + "ee" * 20
HOLDERS = ("0x" + "a1" * 20, "0x" + "b2" * 20, "0x" + "c3" * 20)
PROTOCOLS = ("aave", "compound", "moonwell", "morpho_gauntlet_usdc_prime")

holders = st.sampled_from(HOLDERS)
protocols = st.sampled_from(PROTOCOLS)
shares = st.integers(min_value=0, max_value=120)  # percent of what is there; > 100 overdraws


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _part(available: int, share: int) -> int:
    return max(available * share // 100, 1)


class MarketMachine(RuleBasedStateMachine):
    """Three holders depositing, supplying, withdrawing, swapping, sending and waiting."""

    def __init__(self) -> None:
        super().__init__()
        self.directory = tempfile.TemporaryDirectory()
        self.engine = create_db_engine(f"sqlite:///{self.directory.name}/market.db")
        migrate(self.engine)
        self.market = SimulatedMarket(
            SimulationStore(self.engine),
            load_catalog(),
            7,
            speed=0.0,
            wall=lambda: GENESIS_WALL,
        )
        self.market.start()

    def teardown(self) -> None:
        self.engine.dispose()
        self.directory.cleanup()

    # -- observations ---------------------------------------------------------------------

    def _wealth(self, holder: str) -> int:
        """USDC held plus USDC supplied, at the current simulated time."""
        supplied = sum(value for _, value in self.market.positions(BASE, USDC, holder))
        return self.market.balance(BASE, USDC, holder) + supplied

    def _wealths(self) -> dict[str, int]:
        return {holder: self._wealth(holder) for holder in HOLDERS}

    def _value(self, holder: str, protocol: str) -> int:
        return dict(self.market.positions(BASE, USDC, holder)).get(protocol, 0)

    def _pool(self, protocol: str) -> tuple[int, int]:
        """(liquidity index, cash) of a Base USDC pool now."""
        (pool,) = [p for p in self.market.pools_now(BASE, USDC) if p.protocol == protocol]
        return pool.liquidity_index, pool.cash()

    def _snapshot(self) -> tuple[object, ...]:
        with Session(self.engine) as session:
            clock = session.get(SimClockRow, 1)
            assert clock is not None
            return (
                (clock.anchor, clock.sequence),
                sorted(
                    (r.id or 0, r.liquidity_index, r.scaled_supply, r.markets, r.updated_at)
                    for r in session.exec(select(SimPoolRow))
                ),
                sorted(
                    (r.pool_id, r.holder, r.scaled, r.reward_snapshot, r.rewards_owed)
                    for r in session.exec(select(SimPositionRow))
                ),
                sorted((r.token, r.holder, r.amount) for r in session.exec(select(SimBalanceRow))),
                sorted(r.tx_hash for r in session.exec(select(SimTransactionRow))),
            )

    def _refused(self, name: str, action: Callable[[], object]) -> None:
        event(f"{name} refused")
        before = self._snapshot()
        with pytest.raises(MarketError):
            action()
        assert self._snapshot() == before

    def _unchanged_except(self, before: dict[str, int], holder: str) -> dict[str, int]:
        after = self._wealths()
        assert {h: w for h, w in after.items() if h != holder} == {
            h: w for h, w in before.items() if h != holder
        }
        return after

    # -- rules ----------------------------------------------------------------------------

    @initialize(amounts=st.lists(st.integers(1, 10**12), min_size=3, max_size=3))
    def fund(self, amounts: list[int]) -> None:
        for holder, amount in zip(HOLDERS, amounts, strict=True):
            self.market.deposit_from(BASE, USDC, USER, holder, amount)
            assert self._wealth(holder) == amount

    @rule(holder=holders, amount=st.integers(min_value=1, max_value=10**12))
    def deposit_from(self, holder: str, amount: int) -> None:
        before = self._wealths()
        self.market.deposit_from(BASE, USDC, USER, holder, amount)
        after = self._unchanged_except(before, holder)
        assert after[holder] == before[holder] + amount

    @rule(holder=holders, protocol=protocols, share=shares)
    def supply(self, holder: str, protocol: str, share: int) -> None:
        balance = self.market.balance(BASE, USDC, holder)
        amount = _part(balance, share)
        if amount > balance:
            self._refused(
                "supply", lambda: self.market.supply(BASE, holder, protocol, USDC, amount)
            )
            return
        index, _ = self._pool(protocol)
        before = self._wealths()
        value = self._value(holder, protocol)
        self.market.supply(BASE, holder, protocol, USDC, amount)
        event("supply ok")
        after = self._unchanged_except(before, holder)
        assert self.market.balance(BASE, USDC, holder) == balance - amount
        loss = before[holder] - after[holder]
        assert 0 <= loss <= _ceil_div(index, RAY)  # rounding favours the pool, by a scaled unit
        assert self._value(holder, protocol) == value + amount - loss

    @rule(holder=holders, pick=st.integers(min_value=0, max_value=7), share=shares)
    def withdraw(self, holder: str, pick: int, share: int) -> None:
        held = [protocol for protocol, _ in self.market.positions(BASE, USDC, holder)]
        # Mostly from a position the holder has; now and then from any pool.
        protocol = held[pick % len(held)] if held and pick < 6 else PROTOCOLS[pick % 4]
        value = self._value(holder, protocol)
        amount = _part(value, share)
        index, cash = self._pool(protocol)
        if amount > value or amount > cash:
            self._refused(
                "withdraw", lambda: self.market.withdraw(BASE, holder, protocol, USDC, amount)
            )
            return
        balance = self.market.balance(BASE, USDC, holder)
        before = self._wealths()
        self.market.withdraw(BASE, holder, protocol, USDC, amount)
        event("withdraw ok")
        after = self._unchanged_except(before, holder)
        assert self.market.balance(BASE, USDC, holder) == balance + amount
        assert 0 <= before[holder] - after[holder] <= _ceil_div(index, RAY)

    @rule(holder=holders, to_well=st.booleans(), share=shares, greedy=st.integers(0, 3))
    def swap(self, holder: str, to_well: bool, share: int, greedy: int) -> None:
        token_in, token_out = (USDC, WELL) if to_well else (WELL, USDC)
        balance_in = self.market.balance(BASE, token_in, holder)
        balance_out = self.market.balance(BASE, token_out, holder)
        amount = _part(balance_in, share)
        quote = self.market.quote_swap(BASE, token_in, token_out, amount)
        (price_in, decimals_in), (price_out, decimals_out) = PRICES[token_in], PRICES[token_out]
        fair = Fraction(amount * 10**decimals_out) * price_in / price_out / 10**decimals_in
        assert quote == int(fair * Fraction(997, 1000))  # the price, less the 0.3% fee
        min_out = quote + 1 if greedy == 0 else quote  # asks for more than the price gives
        if amount > balance_in or min_out > quote:
            self._refused(
                "swap", lambda: self.market.swap(BASE, holder, token_in, token_out, amount, min_out)
            )
            return
        tx = self.market.swap(BASE, holder, token_in, token_out, amount, min_out)
        event("swap ok")
        assert tx.amount_out == quote
        assert self.market.balance(BASE, token_in, holder) == balance_in - amount
        assert self.market.balance(BASE, token_out, holder) == balance_out + quote

    @rule(
        sender=holders, recipient=holders, token=st.sampled_from((USDC, USDC, WELL)), share=shares
    )
    def transfer(self, sender: str, recipient: str, token: str, share: int) -> None:
        balances = {h: self.market.balance(BASE, token, h) for h in HOLDERS}
        amount = _part(balances[sender], share)
        if amount > balances[sender]:
            self._refused(
                "transfer", lambda: self.market.transfer(BASE, token, sender, recipient, amount)
            )
            return
        before = self._wealths()
        self.market.transfer(BASE, token, sender, recipient, amount)
        event("transfer ok")
        after = {h: self.market.balance(BASE, token, h) for h in HOLDERS}
        assert sum(after.values()) == sum(balances.values())  # transfers conserve exactly
        if sender != recipient:
            assert after[sender] == balances[sender] - amount
            assert after[recipient] == balances[recipient] + amount
        assert sum(self._wealths().values()) == sum(before.values())

    @rule(holder=holders)
    def claim_rewards(self, holder: str) -> None:
        accrued = self.market.accrued_rewards(BASE, holder)
        balances = {token: self.market.balance(BASE, token, holder) for token in TOKENS}
        before = self._wealths()
        claims = self.market.claim_rewards(BASE, holder)
        assert {tx.token: tx.amount for tx in claims} == accrued
        for token in TOKENS:
            assert self.market.balance(BASE, token, holder) == balances[token] + accrued.get(
                token, 0
            )
        assert self.market.accrued_rewards(BASE, holder) == {}
        assert self._wealths() == before

    @rule(seconds=st.integers(min_value=1, max_value=3 * 86_400))
    def advance(self, seconds: int) -> None:
        now = self.market.now()
        balances = {(t, h): self.market.balance(BASE, t, h) for t in TOKENS for h in HOLDERS}
        before = self._wealths()
        assert self.market.advance(seconds) == now + seconds
        after = self._wealths()
        assert all(after[h] >= before[h] for h in HOLDERS)  # interest only adds
        assert {(t, h): self.market.balance(BASE, t, h) for t in TOKENS for h in HOLDERS} == (
            balances
        )

    # -- invariants -----------------------------------------------------------------------

    @invariant()
    def nothing_is_negative_and_scaled_units_add_up(self) -> None:
        with Session(self.engine) as session:
            assert all(row.amount >= 0 for row in session.exec(select(SimBalanceRow)))
            positions = list(session.exec(select(SimPositionRow)))
            assert all(p.scaled >= 0 and p.rewards_owed >= 0 for p in positions)
            for row in session.exec(select(SimPoolRow)):
                held = sum(p.scaled for p in positions if p.pool_id == row.id)
                assert held == row.scaled_supply
        for pool in self.market.pools_now(BASE, USDC):
            assert pool.liquidity_index >= RAY
            assert all(0 <= m.borrows <= m.supply for m in pool.markets)


MarketMachine.TestCase.settings = settings(max_examples=15, stateful_step_count=25, deadline=None)
TestMarketProperties = MarketMachine.TestCase
