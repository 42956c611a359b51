"""Concurrent withdrawals from one wallet: 50 at once, from 5 replicas of the service.

Each replica is a ``Lifecycle`` on an engine of its own, running in a thread with its own
event loop, so only the wallet's lease in the database serializes the replicas; within a
replica, the calls interleave at every chain call (``YieldingChain`` yields to the event
loop there, as a real chain's network round trips do), so they queue on its local lock.
No simulated time passes during the burst, so the chain must account for every unit.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest
from sqlalchemy import Engine

from support.wallet_setup import (
    BASE,
    BASE_USDC,
    DAY,
    EOA,
    FEE,
    FEE_BPS,
    GENESIS_WALL,
    SEED,
    USDC,
    activated,
    all_transactions,
    chain_value,
    make_lifecycle,
    policy,
    stored,
)
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.composition.chains import simulated_chains
from yieldagent.composition.clock import SYSTEM_CLOCK
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.books.wallets import Journal, WithdrawalRecord
from yieldagent.domain.errors import InvalidRequest
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.market.quotes import PoolQuote
from yieldagent.domain.money.lifecycle import Lifecycle
from yieldagent.domain.ports.accounts import SmartAccount
from yieldagent.domain.ports.chain import (
    Block,
    ChainTx,
    ClaimReceipt,
    ContractCall,
    GasCost,
    Position,
    RewardAmount,
    SwapReceipt,
    Transfer,
    TxReceipt,
)
from yieldagent.domain.ports.credentials import Partner
from yieldagent.storage.db import create_db_engine
from yieldagent.storage.operations import OperationStore
from yieldagent.storage.simulation import SimulationStore
from yieldagent.storage.wallets import WalletStore

pytestmark = pytest.mark.usefixtures("books_balance_after")

PartnerKey = tuple[Partner, str]

REPLICAS = 5
WITHDRAWALS = 50
AMOUNT = 30 * USDC
ROUNDING = 2
"""Units a pool may keep per withdrawal from it: its rounding favours the pool."""


class YieldingChain:
    """A chain port that yields to the event loop before each call, like network I/O."""

    def __init__(self, inner: MarketChain) -> None:
        self._inner = inner
        self.chain_id = inner.chain_id

    async def head(self) -> Block:
        await asyncio.sleep(0)
        return await self._inner.head()

    async def token_balance(self, token: str, holder: str) -> int:
        await asyncio.sleep(0)
        return await self._inner.token_balance(token, holder)

    async def positions(self, holder: str, token: str) -> list[Position]:
        await asyncio.sleep(0)
        return await self._inner.positions(holder, token)

    async def quote_swap(self, token_in: str, token_out: str, amount_in: int) -> int:
        await asyncio.sleep(0)
        return await self._inner.quote_swap(token_in, token_out, amount_in)

    async def history(self, holder: str, since_block: int) -> list[ChainTx]:
        await asyncio.sleep(0)
        return await self._inner.history(holder, since_block)

    async def find_transfer(self, tx_hash: str) -> Transfer | None:
        await asyncio.sleep(0)
        return await self._inner.find_transfer(tx_hash)

    async def quotes(self, token: str, protocols: Sequence[str]) -> list[PoolQuote]:
        await asyncio.sleep(0)
        return await self._inner.quotes(token, protocols)

    async def plan_calls(
        self, holder: str, action: str, protocol: str, token: str, amount: int
    ) -> list[ContractCall]:
        return await self._inner.plan_calls(holder, action, protocol, token, amount)

    async def check_account(self, account: SmartAccount) -> None:
        await self._inner.check_account(account)

    async def prepare_account(self, account: SmartAccount) -> None:
        await asyncio.sleep(0)
        await self._inner.prepare_account(account)

    async def revocation(self, holder: str) -> str | None:
        return await self._inner.revocation(holder)

    async def supply(self, holder: str, protocol: str, token: str, amount: int) -> TxReceipt:
        await asyncio.sleep(0)
        return await self._inner.supply(holder, protocol, token, amount)

    async def withdraw(
        self, holder: str, protocol: str, token: str, amount: int, whole: bool = False
    ) -> TxReceipt:
        await asyncio.sleep(0)
        return await self._inner.withdraw(holder, protocol, token, amount, whole)

    async def swap(
        self, holder: str, token_in: str, token_out: str, amount_in: int, min_out: int
    ) -> SwapReceipt:
        await asyncio.sleep(0)
        return await self._inner.swap(holder, token_in, token_out, amount_in, min_out)

    async def transfer(self, token: str, sender: str, recipient: str, amount: int) -> TxReceipt:
        await asyncio.sleep(0)
        return await self._inner.transfer(token, sender, recipient, amount)

    async def pay(
        self, token: str, holder: str, owner: str, amount: int, collector: str, fee: int
    ) -> tuple[TxReceipt, TxReceipt | None]:
        await asyncio.sleep(0)
        return await self._inner.pay(token, holder, owner, amount, collector, fee)

    async def accrued_rewards(self, holder: str) -> list[RewardAmount]:
        await asyncio.sleep(0)
        return await self._inner.accrued_rewards(holder)

    async def claim_rewards(self, holder: str) -> ClaimReceipt:
        await asyncio.sleep(0)
        return await self._inner.claim_rewards(holder)

    async def gas_cost(self, action: str) -> GasCost:
        await asyncio.sleep(0)
        return await self._inner.gas_cost(action)


@dataclass(frozen=True, slots=True)
class Replica:
    """One service replica: its own engine, simulated-chain view and lifecycle."""

    engine: Engine
    lifecycle: Lifecycle


def replica(database_url: str) -> Replica:
    """A replica on its own engine, waiting up to a minute for a wallet's lease."""
    engine = create_db_engine(database_url)
    market = SimulatedMarket(
        SimulationStore(engine), load_catalog(), SEED, speed=0.0, wall=lambda: GENESIS_WALL
    )
    market.start()
    chains: dict[int, MarketChain] = {
        chain_id: YieldingChain(port)
        for chain_id, port in simulated_chains(market, load_catalog()).items()
    }
    return Replica(engine, make_lifecycle(engine, chains, policy(lease_wait_seconds=60)))


async def burst(
    lifecycle: Lifecycle, partner_id: int, address: str, count: int
) -> list[WithdrawalRecord | BaseException]:
    """``count`` concurrent withdrawals of ``AMOUNT`` through one replica."""
    return await asyncio.gather(
        *(lifecycle.withdraw(partner_id, BASE, address, AMOUNT) for _ in range(count)),
        return_exceptions=True,
    )


async def test_concurrent_withdrawals_never_overdraw_and_the_ledger_agrees(
    engine: Engine,
    database_url: str,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: PartnerKey,
) -> None:
    owner, _ = partner
    wallet = await activated(make_lifecycle(engine, chains), engine, market, owner.id, 1000 * USDC)
    market.advance(30 * DAY)  # some yield, so that withdrawals pay fees
    initial = chain_value(market, wallet.address)
    principal = stored(engine, wallet.address).principal
    assert initial > principal == 1000 * USDC
    replicas = [replica(database_url) for _ in range(REPLICAS)]
    try:
        batches = await asyncio.gather(
            *(
                asyncio.to_thread(
                    asyncio.run,
                    burst(r.lifecycle, owner.id, wallet.address, WITHDRAWALS // REPLICAS),
                )
                for r in replicas
            )
        )
    finally:
        for r in replicas:
            r.engine.dispose()
    outcomes = [outcome for batch in batches for outcome in batch]
    assert len(outcomes) == WITHDRAWALS

    successes = [o for o in outcomes if isinstance(o, WithdrawalRecord)]
    failures = [o for o in outcomes if not isinstance(o, WithdrawalRecord)]
    assert [type(f) for f in failures] == [InvalidRequest] * len(failures), failures
    assert all("exceeds the withdrawable balance" in str(f) for f in failures)
    withdrawn = sum(s.split.amount for s in successes)
    assert len(successes) * AMOUNT == withdrawn <= initial
    assert len(successes) == initial // AMOUNT  # every withdrawal that fitted went through
    assert failures

    for s in successes:
        assert s.split.principal + s.split.yield_ == AMOUNT
        assert s.split.yield_ > 0
        assert s.split.fee == s.split.yield_ * FEE_BPS // 10_000
    paid = sum(s.split.to_user for s in successes)
    fees = sum(s.split.fee for s in successes)
    assert paid + fees == withdrawn
    assert market.balance(BASE, BASE_USDC, EOA) == paid
    assert market.balance(BASE, BASE_USDC, FEE) == fees

    store = WalletStore(engine)
    saved = stored(engine, wallet.address)
    records = store.withdrawals(saved.id)
    assert len(records) == len(successes)
    assert Counter((r.amount, r.principal, r.yield_, r.fee, r.tx_hash) for r in records) == Counter(
        (s.split.amount, s.split.principal, s.split.yield_, s.split.fee, s.tx_hash)
        for s in successes
    )
    assert saved.principal == principal - sum(r.principal for r in records)
    assert saved.status == WalletStatus.ACTIVATED

    history = all_transactions(engine, saved.id)
    pool_withdrawals = [t for t in history if t.action == "withdraw"]
    assert sum(t.amount for t in pool_withdrawals) == withdrawn
    assert sum(t.amount for t in history if t.action == "transfer") == paid
    assert sum(t.amount for t in history if t.action == "fee_transfer") == fees
    assert len({t.correlation_id for t in pool_withdrawals}) == len(successes)

    left = chain_value(market, wallet.address)
    kept_by_pools = initial - withdrawn - left
    assert 0 <= kept_by_pools <= ROUNDING * len(pool_withdrawals)
    assert saved.idle + sum(saved.positions.values()) == left
    flows = [p.flow for p in store.points(saved.id)]
    assert flows == [1000 * USDC] + [-AMOUNT] * len(successes)

    now = time.time()
    assert store.acquire_lease(saved.id, "probe", now + 5, now)  # no lease was left behind
    store.release_lease(saved.id, "probe")


# -- rule changes racing a withdrawal --------------------------------------------------------


class PausedBeforeCommit(WalletStore):
    """A wallet store whose commits wait until told to go on: a request that has read the
    wallet and is descheduled before it writes."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.reached = threading.Event()
        self.go_on = threading.Event()

    def commit(self, journal: Journal, expected: WalletStatus | None = None) -> None:
        self.reached.set()
        assert self.go_on.wait(10)
        super().commit(journal, expected)


def _set_reward_staking(lifecycle: Lifecycle, partner_id: int, address: str) -> None:
    asyncio.run(lifecycle.set_reward_staking(partner_id, BASE, address, True))


def _update_protocols(lifecycle: Lifecycle, partner_id: int, address: str) -> None:
    asyncio.run(lifecycle.update_protocols(partner_id, BASE, address, ["aave", "compound"]))


@pytest.mark.parametrize("change", [_set_reward_staking, _update_protocols])
async def test_a_rule_change_racing_a_withdrawal_keeps_the_withdrawals_bookkeeping(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: PartnerKey,
    change: Callable[[Lifecycle, int, str], None],
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = await activated(lifecycle, engine, market, owner.id, 1000 * USDC)
    market.advance(30 * DAY)
    paused = PausedBeforeCommit(engine)
    slow = Lifecycle(paused, OperationStore(engine), chains, load_catalog(), policy(), SYSTEM_CLOCK)
    racing = asyncio.ensure_future(asyncio.to_thread(change, slow, owner.id, wallet.address))
    assert await asyncio.to_thread(paused.reached.wait, 10)

    # The rule change holds the wallet's lease while it is paused: the withdrawal waits
    # for it rather than interleaving, and then sees the rule change's write.
    withdrawal = asyncio.ensure_future(
        lifecycle.withdraw(owner.id, BASE, wallet.address, 100 * USDC)
    )
    await asyncio.sleep(0.1)
    assert not withdrawal.done()
    paused.go_on.set()
    await racing
    result = await withdrawal

    saved = stored(engine, wallet.address)
    assert saved.principal == 1000 * USDC - result.split.principal
    assert saved.idle + sum(saved.positions.values()) == chain_value(market, wallet.address)
