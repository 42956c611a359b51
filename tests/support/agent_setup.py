"""The agent built the way the service builds it, plus what its tests need to watch and
disturb a run: a chain that can look at (or fail) each move, and reads of the schedule
and run rows the stores do not expose."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from sqlalchemy import Engine
from sqlmodel import Session

from support.wallet_setup import (
    BASE,
    USDC,
    activated,
    all_transactions,
    make_lifecycle,
    positions,
    stored,
)
from yieldagent.chain.simulated.chain import SimulatedChain
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.agent.runs import Agent
from yieldagent.domain.agent.scheduler import AgentSettings
from yieldagent.domain.books.operations import Operation, OperationKind
from yieldagent.domain.books.wallets import TransactionRecord, Wallet
from yieldagent.domain.constraints import Thresholds
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.money.lifecycle import Lifecycle
from yieldagent.domain.ports.chain import Send, TxReceipt
from yieldagent.domain.ports.credentials import Partner
from yieldagent.storage.operations import OperationStore
from yieldagent.storage.runs import RunStore
from yieldagent.storage.tables import OperationRow, WalletScheduleRow
from yieldagent.storage.wallets import WalletStore

INTERVAL = 3600.0
"""Seconds between two scheduled runs of a wallet in these tests."""

MoveHook = Callable[[str, str, int], Awaitable[None]]
"""Called with (action, protocol, amount) before a move reaches the chain."""

PartnerKey = tuple[Partner, str]
"""A partner and its API key, as the ``partner`` fixture gives them."""

AMOUNT = 250_000 * USDC
"""What most wallets here hold: enough that the first allocation spreads over two pools."""


def make_agent(
    engine: Engine,
    lifecycle: Lifecycle,
    thresholds: Thresholds | None = None,
    interval: float = INTERVAL,
) -> Agent:
    """The agent on ``engine``, running through ``lifecycle``'s chains."""
    return Agent(
        lifecycle,
        WalletStore(engine),
        RunStore(engine),
        AgentSettings(interval_seconds=interval, thresholds=thresholds or Thresholds()),
    )


class WatchedChain(SimulatedChain):
    """The simulated Base chain, calling ``hook`` before every supply and withdrawal.

    The hook may look at the database, wait, or raise to make the chain refuse the move.
    """

    def __init__(self, market: SimulatedMarket, hook: MoveHook) -> None:
        super().__init__(market, BASE)
        self._hook = hook
        self.moves: list[tuple[str, str, int]] = []

    async def supply(self, holder: str, protocol: str, token: str, amount: int) -> TxReceipt:
        await self._hook("supply", protocol, amount)
        receipt = await super().supply(holder, protocol, token, amount)
        self.moves.append(("supply", protocol, amount))
        return receipt

    async def withdraw(
        self, holder: str, protocol: str, token: str, amount: int, whole: bool = False
    ) -> TxReceipt:
        await self._hook("withdraw", protocol, amount)
        receipt = await super().withdraw(holder, protocol, token, amount, whole)
        self.moves.append(("withdraw", protocol, amount))
        return receipt

    async def send_many(self, sends: Sequence[Send]) -> list[TxReceipt | Exception]:
        """One at a time, so that the hook sees every move."""
        return await one_by_one(self, sends)


async def one_by_one(chain: MarketChain, sends: Sequence[Send]) -> list[TxReceipt | Exception]:
    """``sends`` through the chain's single ``supply`` and ``withdraw``, in order: what
    ``BatchWrites.send_many`` answers for them (a refusal is its exception)."""
    done: list[TxReceipt | Exception] = []
    for send in sends:
        try:
            if send.action == "supply":
                done.append(await chain.supply(send.holder, send.protocol, send.token, send.amount))
            else:
                done.append(
                    await chain.withdraw(
                        send.holder, send.protocol, send.token, send.amount, send.whole
                    )
                )
        except Exception as refused:
            done.append(refused)
    return done


def run_row(engine: Engine, run_id: str) -> OperationRow:
    """The stored row of a run, reason and finish time included."""
    with Session(engine) as session:
        row = session.get(OperationRow, run_id)
        assert row is not None, f"no run {run_id} stored"
        session.expunge(row)
        return row


def schedule_row(engine: Engine, wallet_id: int) -> WalletScheduleRow:
    """The wallet's row in the schedule: its lease and next run."""
    with Session(engine) as session:
        row = session.get(WalletScheduleRow, wallet_id)
        assert row is not None, f"wallet {wallet_id} is not in the schedule"
        session.expunge(row)
        return row


def run_transactions(engine: Engine, wallet_id: int, run_id: str) -> list[TransactionRecord]:
    """The wallet's transactions that carry the correlation id of run ``run_id``."""
    return [t for t in all_transactions(engine, wallet_id) if t.correlation_id == run_id]


async def rebalancing_wallet(
    lifecycle: Lifecycle,
    engine: Engine,
    market: SimulatedMarket,
    owner: Partner,
    protocols: tuple[str, ...] = ("aave",),
    agent_id: str = "yield-agent",
) -> Wallet:
    """An activated wallet whose protocol list was just changed to ``protocols``: its
    next run has to move every unit held elsewhere."""
    wallet = await activated(lifecycle, engine, market, owner.id, AMOUNT, agent_id=agent_id)
    assert not set(wallet.positions) & set(protocols), "the move must be required"
    await lifecycle.update_protocols(owner.id, BASE, wallet.address, protocols)
    return stored(engine, wallet.address)


async def rebalancing_wallets(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    owner: Partner,
    name: str,
) -> list[Wallet]:
    """Three wallets whose next run has to move everything into Aave."""
    lifecycle = make_lifecycle(engine, chains)
    return [
        await rebalancing_wallet(lifecycle, engine, market, owner, agent_id=f"{name}-{n}")
        for n in range(3)
    ]


def assert_each_ran_once_into_aave(
    engine: Engine, market: SimulatedMarket, wallets: list[Wallet]
) -> None:
    """Each wallet ran exactly once, and that run moved it all into Aave."""
    for wallet in wallets:
        assert [r.status for r in runs_of(engine, wallet.id)] == ["completed"]
        assert set(positions(market, wallet.address)) == {"aave"}


def runs_of(engine: Engine, wallet_id: int) -> list[Operation]:
    """A wallet's runs that moved funds (its run operations), oldest first."""
    return [
        operation
        for operation in OperationStore(engine).of_wallet(wallet_id)
        if operation.kind == OperationKind.RUN
    ]
