"""A world for the agent's process-level tests.

A migrated database whose simulated chain stands still (speed 0), a partner, activated
wallets on Base USDC (many at once in bulk, or a few through the domain), and the
``yieldagent agent cycle`` command run in processes of its own, which the tests wait for
or kill. Also the checks that the ledger agrees with the chain.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path

from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from sqlalchemy import Engine, update
from sqlmodel import Session, col, select

from support.books import book_disagreements
from support.wallet_setup import BASE, BASE_USDC, PROTOCOLS
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import FAUCET, SimulatedMarket
from yieldagent.chain.simulated.pools import advance, deposit, quote_of, value_of
from yieldagent.domain.books.effects import derive, recompute
from yieldagent.domain.books.valuation import moment_of
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.books.wallets import DepositRecord, Journal, TransactionRecord, Wallet
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.market.curves import Candidate
from yieldagent.domain.optimizer.search import allocate
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.domain.partners.smart_accounts import DEFAULT_AGENT_ID, smart_account_address
from yieldagent.simulated_world.state import MinedTx, PoolState, ScaledPosition
from yieldagent.storage.aggregates import replace_totals, wallet_facts
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.events import record_events
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.simulation import SimulationStore
from yieldagent.storage.tables import (
    DepositRow,
    OperationRow,
    PerformancePointRow,
    SimPoolRow,
    SimTransactionRow,
    SmartAccountRow,
    TransactionRow,
    WalletRow,
    WalletScheduleRow,
)
from yieldagent.storage.wallets import WalletStore

OPERATOR_KEY = "0x" + "5e" * 32
"""A development operator key: spares every process generating and encrypting a keystore."""
SEED = 7


@dataclass(frozen=True, slots=True)
class AgentWorld:
    """A migrated database, its simulated market (time standing still) and a partner."""

    url: str
    engine: Engine
    market: SimulatedMarket
    partner_id: int


def open_world(url: str) -> AgentWorld:
    """Migrates the database at ``url`` and creates its simulated world and a partner."""
    engine = create_db_engine(url)
    migrate(engine)
    market = SimulatedMarket(SimulationStore(engine), load_catalog(), SEED, speed=0.0)
    market.start()
    partner, _ = PartnerStore(engine).create("agents", PERMISSIONS)
    return AgentWorld(url, engine, market, partner.id)


def user_eoa(index: int) -> str:
    """The EOA of the ``index``-th user of a test."""
    return str(to_checksum_address(keccak(text=f"agent-world-user:{index}")[-20:]))


# -- wallets in bulk ---------------------------------------------------------------------


@dataclass(slots=True)
class _Placed:
    """One bulk wallet's chain side: its deposit and the supplies of its first allocation."""

    eoa: str
    address: str
    amount: int
    transfer: str
    supplies: list[TransactionRecord]
    scaled: dict[str, int]
    idle: int


def bulk_activated(
    world: AgentWorld, amounts: Sequence[int], protocols: tuple[str, ...] = PROTOCOLS
) -> list[Wallet]:
    """Activated wallets, one per amount, as activation leaves them, but made in three
    database transactions instead of the domain's dozens of statements per wallet.

    On the simulated chain (one write unit): each user's deposit is mined (a faucet mint
    and a transfer to the smart account), then the wallet's best allocation, our own rate
    impact included, wallet after wallet, is supplied to the pools. In the service's
    tables (one transaction): the smart account, and the wallet, ``activated``, with that
    allocation, its deposit, its transactions and its first performance point; then the
    events activation records (``domain.books.events.derive``: deposit credited, activated).
    """
    eoas = [user_eoa(i) for i in range(len(amounts))]
    addresses = [smart_account_address(eoa, DEFAULT_AGENT_ID) for eoa in eoas]
    with Session(world.engine) as session:
        pool_ids = {
            row.protocol: row.id
            for row in session.exec(
                select(SimPoolRow).where(SimPoolRow.chain_id == BASE, SimPoolRow.token == BASE_USDC)
            )
            if row.id is not None
        }
    placed: list[_Placed] = []
    with world.market.store.writing() as unit:
        clock = unit.clock()
        assert clock is not None
        now = clock.clock.now(time.time())
        block = world.market.block_number(BASE, now, clock.genesis)
        moment = moment_of(now)
        pools = {pool.protocol: pool for pool in unit.pools(BASE, BASE_USDC)}
        for pool in pools.values():
            advance(pool, now, clock.seed)

        def mine(kind: str, sender: str, recipient: str, amount: int) -> str:
            sequence = unit.next_sequence()
            tx_hash = "0x" + keccak(text=f"agent-world:{clock.seed}:{sequence}").hex()
            unit.record(
                MinedTx(
                    tx_hash=tx_hash,
                    chain_id=BASE,
                    block_number=block,
                    timestamp=now,
                    sequence=sequence,
                    kind=kind,
                    token=BASE_USDC,
                    sender=sender,
                    recipient=recipient,
                    amount=amount,
                )
            )
            return tx_hash

        for eoa, address, amount in zip(eoas, addresses, amounts, strict=True):
            mine("mint", FAUCET, eoa, amount)
            quotes = {p: quote_of(pools[p]) for p in protocols}
            target = allocate(amount, [Candidate(p, q) for p, q in quotes.items()], Constraints())
            wallet = _Placed(
                eoa,
                address,
                amount,
                mine("transfer", eoa, address, amount),
                [],
                {},
                amount - sum(target.values()),
            )
            correlation = str(uuid.uuid4())
            for protocol, part in sorted(target.items()):
                if part <= 0:
                    continue
                apr = quotes[protocol].apr(part)
                pool = pools[protocol]
                wallet.scaled[protocol] = deposit(pool, part)
                unit.save_position(  # a new holder: no position to read first
                    ScaledPosition(
                        pool_id=pool_ids[protocol],
                        holder=address,
                        scaled=wallet.scaled[protocol],
                        reward_snapshot=pool.reward_index,
                        rewards_owed=0,
                        stored=False,
                    )
                )
                wallet.supplies.append(
                    TransactionRecord(
                        "deposit",
                        BASE_USDC,
                        part,
                        mine("supply", address, protocol, part),
                        moment,
                        protocol=protocol,
                        apr=apr,
                        block_number=block,
                        correlation_id=correlation,
                    )
                )
            if wallet.idle:
                unit.credit(BASE, BASE_USDC, address, wallet.idle)
            placed.append(wallet)
        for pool in pools.values():
            unit.save_pool(pool)
    created = datetime.now(UTC)
    rows = []
    with Session(world.engine) as session:
        for item in placed:
            session.add(
                SmartAccountRow(
                    chain_id=BASE,
                    eoa=item.eoa,
                    agent_id=DEFAULT_AGENT_ID,
                    address=item.address,
                    partner_id=world.partner_id,
                    created_at=created,
                )
            )
            allocation = {p: value_of(pools[p], scaled) for p, scaled in item.scaled.items()}
            earning = sum(quote_apr(pools[p]) * a for p, a in allocation.items())
            row = WalletRow(
                chain_id=BASE,
                address=item.address,
                eoa=item.eoa,
                partner_id=world.partner_id,
                status=str(WalletStatus.ACTIVATED),
                token=BASE_USDC,
                selected_protocols=json.dumps(list(protocols)),
                constraints=Constraints().to_json(),
                principal=item.amount,
                allocation=json.dumps({p: str(a) for p, a in allocation.items()}),
                idle=item.idle,
                current_apr=earning / item.amount,
                valued_at=moment,
                is_staked=False,
                activation_date=moment,
                created_at=created,
                updated_at=created,
            )
            session.add(row)
            rows.append(row)
        session.flush()
        for item, row in zip(placed, rows, strict=True):
            assert row.id is not None
            session.add(WalletScheduleRow(wallet_id=row.id, active=True, next_run_at=0.0))
            session.add(
                DepositRow(
                    wallet_id=row.id,
                    chain_id=BASE,
                    token=BASE_USDC,
                    amount=item.amount,
                    tx_hash=item.transfer,
                    block_number=block,
                    date=moment,
                )
            )
            deposit_record = TransactionRecord(
                "deposit", BASE_USDC, item.amount, item.transfer, moment, block_number=block
            )
            for record in (deposit_record, *item.supplies):
                session.add(
                    TransactionRow(
                        wallet_id=row.id,
                        action=record.action,
                        status=record.status,
                        token=record.token,
                        amount=record.amount,
                        tx_hash=record.tx_hash,
                        protocol=record.protocol,
                        apr=record.apr,
                        block_number=record.block_number,
                        correlation_id=record.correlation_id,
                        date=record.date,
                    )
                )
            session.add(PerformancePointRow(wallet_id=row.id, value=0, flow=item.amount, at=moment))
        session.flush()
        # the chain totals, as the ledger's commits keep them
        replace_totals(session.connection(), recompute(wallet_facts(session.connection())))
        session.commit()
        ids = [row.id for row in rows]
    store = WalletStore(world.engine)
    found = [store.get_by_id(wallet_id) for wallet_id in ids if wallet_id is not None]
    wallets = [w for w in found if w is not None]
    assert len(wallets) == len(placed)
    with Session(world.engine) as session:  # the events that activation would have recorded
        for made, item in zip(wallets, placed, strict=True):
            credited = DepositRecord(item.amount, BASE_USDC, item.transfer, block, moment)
            journal = Journal(made, deposits=[credited])
            record_events(session, derive(journal, WalletStatus.ACTIVATING, None))
        session.commit()
    return wallets


def quote_apr(pool: PoolState) -> float:
    """The pool's supply APR in percent now."""
    return quote_of(pool).apr()


# -- the agent cycle in a process of its own -----------------------------------------------


def cycle_env(url: str, data_dir: Path, **settings: str) -> dict[str, str]:
    """The environment of an ``agent cycle`` process on ``url``: simulated time standing
    still, plus ``settings`` (YIELDAGENT_* names and values)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("YIELDAGENT_")}
    env.update(
        YIELDAGENT_DATABASE_URL=url,
        YIELDAGENT_DATA_DIR=str(data_dir),
        YIELDAGENT_SIM_SPEED="0",
        YIELDAGENT_OPERATOR_PRIVATE_KEY=OPERATOR_KEY,
        YIELDAGENT_LOG_LEVEL="INFO",
        YIELDAGENT_LOG_FORMAT="json",
        YIELDAGENT_METRICS_PORT="0",  # replicas and restarts side by side: no fixed port
        YIELDAGENT_PARTNER_RATE_LIMIT="0",
        # The crash loops make twenty money calls on one wallet in seconds.
        YIELDAGENT_WALLET_MONEY_CALLS_PER_MINUTE="0",
    )
    env.update(settings)
    return env


@dataclass(frozen=True, slots=True)
class CycleResult:
    """What ``yieldagent agent cycle`` printed."""

    recovered: int
    ran: int


class CycleProcess:
    """``python -m yieldagent agent cycle`` in a process of its own; its JSON log lines are
    read as they come, so that a test can act on them (kill it after the n-th run)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "yieldagent", "agent", "cycle"],
            env=dict(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._changed = threading.Condition()
        self._messages: Counter[str] = Counter()
        self._stderr: list[str] = []
        self._ended = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self._changed:
                self._stderr.append(line)
                try:
                    message = json.loads(line).get("message", "")
                except ValueError:
                    message = ""
                self._messages[message] += 1
                self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def wait_for(self, message: str, count: int, timeout: float) -> bool:
        """Waits until the process logged ``message`` ``count`` times; False if it ended
        (or ``timeout`` passed) first."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._messages[message] < count:
                left = deadline - time.monotonic()
                if self._ended or left <= 0:
                    return False
                self._changed.wait(left)
            return True

    def wait_ended(self, timeout: float) -> bool:
        """Waits until the process ended on its own; False if ``timeout`` passed first."""
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def kill(self) -> bool:
        """SIGKILLs the process; True if it was still running."""
        running = self.process.poll() is None
        if running:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self._reader.join(timeout=30)
        self._close()
        return running

    def _close(self) -> None:
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()

    def result(self, timeout: float = 120) -> CycleResult:
        """Waits for the process to end on its own; fails unless it printed its result."""
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise
        self._reader.join(timeout=30)
        assert self.process.stdout is not None
        out = self.process.stdout.read()
        self._close()
        assert self.process.returncode == 0, f"agent cycle failed: {self.stderr()}"
        printed = json.loads(out)
        return CycleResult(printed["recovered"], printed["ran"])

    def stderr(self) -> str:
        """The log lines so far."""
        with self._changed:
            return "".join(self._stderr)


# -- what the database says --------------------------------------------------------------


def expire_leases(engine: Engine) -> int:
    """Lets every lease run out, as it would ``lease_seconds`` after its process died;
    returns how many there were. Only for when no process of the world runs."""
    with Session(engine) as session:
        result = session.execute(
            update(WalletScheduleRow)
            .where(col(WalletScheduleRow.lease_owner).is_not(None))
            .values(lease_until=0.0)
        )
        session.commit()
        return int(result.rowcount)  # type: ignore[attr-defined]


def make_due(engine: Engine) -> None:
    """Makes every wallet's run due now."""
    with Session(engine) as session:
        session.execute(update(WalletScheduleRow).values(next_run_at=0.0))
        session.commit()


def wallet_rows(engine: Engine) -> list[WalletRow]:
    """Every wallet row, by id."""
    with Session(engine) as session:
        return list(session.exec(select(WalletRow).order_by(col(WalletRow.id))))


def schedule_rows(engine: Engine) -> list[WalletScheduleRow]:
    """Every wallet's row in the schedule (its lease and next run), by wallet id."""
    with Session(engine) as session:
        return list(
            session.exec(select(WalletScheduleRow).order_by(col(WalletScheduleRow.wallet_id)))
        )


def run_rows(engine: Engine) -> list[OperationRow]:
    """Every agent run, oldest first."""
    with Session(engine) as session:
        return list(
            session.exec(
                select(OperationRow).order_by(col(OperationRow.started_at), col(OperationRow.id))
            )
        )


def index_growth(market: SimulatedMarket, since: Mapping[str, int]) -> Fraction:
    """The most any Base USDC pool's liquidity index grew since the indexes ``since``:
    no holding can have grown faster."""
    now = {pool.protocol: pool.liquidity_index for pool in market.pools_now(BASE, BASE_USDC)}
    return max(Fraction(now[p], since[p]) for p in since)


def liquidity_indexes(market: SimulatedMarket) -> dict[str, int]:
    """Each Base USDC pool's liquidity index now."""
    return {pool.protocol: pool.liquidity_index for pool in market.pools_now(BASE, BASE_USDC)}


ROUNDING_PER_MOVE = 3
"""Units a supply or a withdrawal may lose to rounding (always in the pool's favour)."""


def ledger_disagreements(
    world: AgentWorld, wallets: Iterable[Wallet], growth: Fraction
) -> list[str]:
    """Every way the stored wallets disagree with the chain; empty when none does.

    The one conservation check (``support.books``) comes first. Then, for the agent's
    moves, for each wallet: it is ``activated`` with no live lease; its stored allocation and idle
    funds are what the chain holds; every supply and withdrawal the chain mined for it is
    in its history exactly once, with the chain's amount and protocol, and its history has
    no supply or withdrawal the chain did not mine; its value on chain is at most what
    was deposited grown by ``growth`` (no funds created), and at least what was deposited
    less rounding (no funds lost).
    """
    wallets = list(wallets)
    problems = book_disagreements(world.engine, world.market, wallets)  # the books first
    store = WalletStore(world.engine)
    market = world.market
    with Session(world.engine) as session:
        for wallet in wallets:
            row = session.get(WalletRow, wallet.id)
            lease = session.get(WalletScheduleRow, wallet.id)
            assert row is not None and lease is not None
            stored = store.get_by_id(wallet.id)
            assert stored is not None
            name = f"wallet {wallet.id}"
            held = lease.lease_owner is not None and (lease.lease_until or 0.0) >= time.time()
            if row.status != WalletStatus.ACTIVATED or held:
                problems.append(f"{name} is {row.status}, leased by {lease.lease_owner}")
            positions = dict(market.positions(BASE, BASE_USDC, wallet.address))
            idle = market.balance(BASE, BASE_USDC, wallet.address)
            stored_positions = {p: a for p, a in stored.positions.items() if a}
            if stored_positions != positions or stored.idle != idle:
                problems.append(
                    f"{name} stores {stored_positions} + {stored.idle} idle, "
                    f"the chain holds {positions} + {idle} idle"
                )
            chain = session.exec(
                select(SimTransactionRow).where(
                    SimTransactionRow.chain_id == BASE,
                    col(SimTransactionRow.kind).in_(("supply", "withdraw")),
                    (col(SimTransactionRow.sender) == wallet.address)
                    | (col(SimTransactionRow.recipient) == wallet.address),
                )
            ).all()
            history = session.exec(
                select(TransactionRow).where(TransactionRow.wallet_id == wallet.id)
            ).all()
            recorded = Counter(t.tx_hash for t in history)
            by_hash = {t.tx_hash: t for t in history}
            for tx in chain:
                times = recorded[tx.tx_hash]
                if times != 1:
                    problems.append(f"{name}: chain {tx.kind} {tx.tx_hash} recorded {times} times")
                    continue
                mine = by_hash[tx.tx_hash]
                protocol = tx.recipient if tx.kind == "supply" else tx.sender
                action = "deposit" if tx.kind == "supply" else "withdraw"
                if (mine.action, mine.amount, mine.protocol) != (action, tx.amount, protocol):
                    problems.append(
                        f"{name}: {tx.tx_hash} is a {tx.kind} of {tx.amount} on {protocol}, "
                        f"recorded as {mine.action} of {mine.amount} on {mine.protocol!r}"
                    )
            mined = {tx.tx_hash for tx in chain}
            phantom = [t.tx_hash for t in history if t.protocol and t.tx_hash not in mined]
            if phantom:
                problems.append(f"{name}: history has moves the chain never mined: {phantom}")
            deposited = sum(d.amount for d in store.deposits(wallet.id))
            worth = idle + sum(positions.values())
            if worth > deposited * growth:
                problems.append(
                    f"{name} is worth {worth} on chain, more than {deposited} deposited "
                    f"grown by at most {float(growth)}"
                )
            if worth < deposited - ROUNDING_PER_MOVE * len(chain):
                problems.append(
                    f"{name} is worth {worth} on chain after {len(chain)} moves: "
                    f"{deposited} were deposited"
                )
    return problems
