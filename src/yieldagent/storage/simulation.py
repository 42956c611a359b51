"""Storage of the simulated chain: clock, pools, positions, balances and transactions.

A write unit starts by updating the clock row. On PostgreSQL that locks the row; on
SQLite it takes the database's write lock at once. Either way simulated writes from
every process run one at a time, and a unit never deadlocks halfway through.

One module, longer than the house's usual: every read and write of the simulated world goes
through one unit of work (``SimSession``), so that its locking rule holds in one place. The
two classes implement the simulated world's store port (``simulated_world.store``), which
the simulator is given by the composition root.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Column,
    ColumnElement,
    Engine,
    Select,
    String,
    Table,
    bindparam,
    cast,
    func,
    text,
    true,
)
from sqlalchemy import select as core_select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from yieldagent.domain.market.history import Snapshot
from yieldagent.simulated_world.clock import SimClock
from yieldagent.simulated_world.state import (
    MarketError,
    MarketState,
    MinedTx,
    PoolState,
    ScaledPosition,
    WorldClock,
)
from yieldagent.storage.bulk import insert_many, update_many
from yieldagent.storage.db import one_of
from yieldagent.storage.tables import (
    SimBalanceRow,
    SimClockRow,
    SimPoolRow,
    SimPositionRow,
    SimPriceRow,
    SimSequencerRow,
    SimTransactionRow,
)

CHUNK = 500
"""Holders per IN list of a bulk read (SQLite limits a statement's variables)."""

_pools = SimPoolRow.__table__  # type: ignore[attr-defined]
_positions = SimPositionRow.__table__  # type: ignore[attr-defined]
_balances = SimBalanceRow.__table__  # type: ignore[attr-defined]
_transactions = SimTransactionRow.__table__  # type: ignore[attr-defined]

_POOL_PROTOCOLS = core_select(_pools.c.id, _pools.c.protocol).where(
    _pools.c.chain_id == bindparam("chain_id"), _pools.c.token == bindparam("token")
)


def _by_holders(
    dialect: str, table: Table, columns: Sequence[Column[Any]], *where: ColumnElement[bool]
) -> Select[Any]:
    """The holder and ``columns`` of the rows of ``table`` that meet ``where``, for each
    holder of the parameter ``holders`` (a batch of up to ``CHUNK``).

    SQLite takes the holders as an IN list and finds each through the primary key.
    PostgreSQL takes them as one array and probes an index once per holder (``LATERAL``
    with ``OFFSET 0``, which the planner keeps as one probe per holder): asked for
    ``holder = ANY(list)`` it scanned every position or balance of the token once the fleet
    had a few thousand wallets, and planned each of the list's values, so the read grew with
    the fleet (``docs/performance.md``).
    """
    if dialect != "postgresql":
        listed = one_of(table.c.holder, "holders")
        return core_select(table.c.holder, *columns).where(listed, *where)
    holders = (
        func.unnest(cast(bindparam("holders"), ARRAY(String)))
        .table_valued("holder")
        .render_derived(name="h")
    )
    rows = core_select(*columns).where(table.c.holder == holders.c.holder, *where)
    found = rows.offset(0).lateral("found")
    return core_select(holders.c.holder, *found.c).select_from(holders.join(found, true()))


@dataclass(frozen=True, slots=True)
class _HolderReads:
    """The reads of a batch of holders (``_by_holders``), in the database's dialect."""

    scaled: Select[Any]
    """(holder, pool id, scaled) of the positions of ``holders`` in the pools
    ``pool_ids``."""
    positions: Select[Any]
    """(holder, pool id, scaled, reward snapshot, rewards owed) of the same."""
    balances: Select[Any]
    """(holder, token, amount) of the balances of ``holders`` in ``tokens`` on
    ``chain_id``."""

    @classmethod
    def of(cls, dialect: str) -> _HolderReads:
        p, b = _positions.c, _balances.c
        in_pools = one_of(p.pool_id, "pool_ids")
        return cls(
            _by_holders(dialect, _positions, [p.pool_id, p.scaled], in_pools),
            _by_holders(
                dialect,
                _positions,
                [p.pool_id, p.scaled, p.reward_snapshot, p.rewards_owed],
                in_pools,
            ),
            _by_holders(
                dialect,
                _balances,
                [b.token, b.amount],
                b.chain_id == bindparam("chain_id"),
                one_of(b.token, "tokens"),
            ),
        )


def _chunks(holders: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(holders), CHUNK):
        yield holders[start : start + CHUNK]


def _markets_json(markets: list[MarketState]) -> str:
    return json.dumps(
        [
            {
                "name": m.name,
                "supply": str(m.supply),
                "borrows": str(m.borrows),
                "rate_at_target": str(m.rate_at_target),
                "mean_utilization": m.mean_utilization,
                "target_utilization": m.target_utilization,
            }
            for m in markets
        ]
    )


def _markets(text_: str) -> list[MarketState]:
    return [
        MarketState(
            m["name"],
            int(m["supply"]),
            int(m["borrows"]),
            int(m["rate_at_target"]),
            m["mean_utilization"],
            m["target_utilization"],
        )
        for m in json.loads(text_)
    ]


def _history_json(history: Sequence[Snapshot]) -> str:
    return json.dumps(
        [[s.at, str(s.tvl), str(s.borrows), str(s.share_price), _switches(s)] for s in history]
    )


def _switches(state: Snapshot | PoolState) -> str:
    names = [("supply", state.supply_paused), ("withdraw", state.withdraw_paused)]
    return ",".join(name for name, on in names if on)


def _history(text_: str) -> tuple[Snapshot, ...]:
    return tuple(
        Snapshot(
            at,
            int(tvl),
            int(borrows),
            int(price),
            supply_paused="supply" in switches.split(","),
            withdraw_paused="withdraw" in switches.split(","),
        )
        for at, tvl, borrows, price, switches in json.loads(text_)
    )


def _pool(row: SimPoolRow) -> PoolState:
    switches = row.switches.split(",")
    return PoolState(
        chain_id=row.chain_id,
        protocol=row.protocol,
        token=row.token,
        kind=row.kind,
        fee=row.fee,
        liquidity_index=row.liquidity_index,
        scaled_supply=row.scaled_supply,
        markets=_markets(row.markets),
        updated_at=row.updated_at,
        next_step=row.next_step,
        reward_token=row.reward_token,
        reward_rate=row.reward_rate,
        reward_index=row.reward_index,
        supply_paused="supply" in switches,
        withdraw_paused="withdraw" in switches,
        history=_history(row.history),
    )


def _mined(row: SimTransactionRow) -> MinedTx:
    return MinedTx(
        row.tx_hash,
        row.chain_id,
        row.block_number,
        row.timestamp,
        row.sequence,
        row.kind,
        row.token,
        row.sender,
        row.recipient,
        row.amount,
        row.token_out,
        row.amount_out,
    )


def _columns(tx: MinedTx) -> dict[str, Any]:
    """A transaction as the column values of its row."""
    return {
        "tx_hash": tx.tx_hash,
        "chain_id": tx.chain_id,
        "block_number": tx.block_number,
        "timestamp": tx.timestamp,
        "sequence": tx.sequence,
        "kind": tx.kind,
        "token": tx.token,
        "sender": tx.sender,
        "recipient": tx.recipient,
        "amount": tx.amount,
        "token_out": tx.token_out,
        "amount_out": tx.amount_out,
    }


def _write_pool(row: SimPoolRow, pool: PoolState) -> None:
    row.liquidity_index = pool.liquidity_index
    row.scaled_supply = pool.scaled_supply
    row.markets = _markets_json(pool.markets)
    row.updated_at = pool.updated_at
    row.next_step = pool.next_step
    row.reward_index = pool.reward_index
    row.switches = _switches(pool)
    row.history = _history_json(pool.history)


class SimSession:
    """One unit of work on the simulated world."""

    def __init__(self, session: Session, reads: _HolderReads) -> None:
        self._session = session
        self._reads = reads
        self._pool_rows: dict[tuple[int, str, str], SimPoolRow] = {}

    # clock

    def clock(self) -> WorldClock | None:
        """The stored clock; None before genesis."""
        row = self._session.get(SimClockRow, 1)
        if row is None:
            return None
        clock = SimClock(row.anchor, row.anchor_wall, row.speed)
        return WorldClock(row.seed, row.genesis, clock, row.sequence)

    def set_clock(self, clock: SimClock) -> None:
        """Stores a re-anchored clock."""
        row = self._session.get(SimClockRow, 1)
        assert row is not None
        row.anchor, row.anchor_wall, row.speed = clock.anchor, clock.anchor_wall, clock.speed
        self._session.add(row)

    def next_sequence(self) -> int:
        """A new transaction number, unique in the simulated world."""
        row = self._session.get(SimClockRow, 1)
        assert row is not None
        row.sequence += 1
        self._session.add(row)
        return row.sequence

    def take_sequences(self, count: int) -> None:
        """Takes ``count`` transaction numbers at once: those after the stored sequence that
        ``clock`` read."""
        row = self._session.get(SimClockRow, 1)
        assert row is not None
        row.sequence += count
        self._session.add(row)

    # pools and positions

    def pools(self, chain_id: int | None = None, token: str | None = None) -> list[PoolState]:
        """Pools, optionally of one chain and token, in a stable order."""
        query = select(SimPoolRow).order_by(col(SimPoolRow.id))
        if chain_id is not None:
            query = query.where(SimPoolRow.chain_id == chain_id)
        if token is not None:
            query = query.where(SimPoolRow.token == token)
        pools = []
        for row in self._session.exec(query):
            self._pool_rows[(row.chain_id, row.protocol, row.token)] = row
            pools.append(_pool(row))
        return pools

    def save_pool(self, pool: PoolState) -> None:
        """Writes back a pool read through ``pools`` in this database session."""
        row = self._pool_rows[(pool.chain_id, pool.protocol, pool.token)]
        _write_pool(row, pool)
        self._session.add(row)

    def add_pool(self, pool: PoolState) -> None:
        """Records a new pool."""
        self._session.add(
            SimPoolRow(
                chain_id=pool.chain_id,
                protocol=pool.protocol,
                token=pool.token,
                kind=pool.kind,
                fee=pool.fee,
                liquidity_index=pool.liquidity_index,
                scaled_supply=pool.scaled_supply,
                markets=_markets_json(pool.markets),
                updated_at=pool.updated_at,
                next_step=pool.next_step,
                reward_token=pool.reward_token,
                reward_rate=pool.reward_rate,
                reward_index=pool.reward_index,
                switches=_switches(pool),
                history=_history_json(pool.history),
            )
        )

    # price feeds

    def prices(self, chain_id: int) -> dict[str, tuple[int, int]]:
        """Each price feed of ``chain_id`` set so far: (price, peg) by token symbol."""
        rows = self._session.exec(select(SimPriceRow).where(SimPriceRow.chain_id == chain_id))
        return {row.symbol: (row.price, row.peg) for row in rows}

    def set_price(self, chain_id: int, symbol: str, price: int, peg: int) -> None:
        """Sets a price feed."""
        row = self._session.get(SimPriceRow, (chain_id, symbol))
        if row is None:
            row = SimPriceRow(chain_id=chain_id, symbol=symbol, price=price, peg=peg)
        row.price, row.peg = price, peg
        self._session.add(row)

    def sequencer(self, chain_id: int) -> tuple[bool, int] | None:
        """The chain's sequencer uptime feed, (up, since when), once a scenario set it;
        None: the chain shows none."""
        row = self._session.get(SimSequencerRow, chain_id)
        return None if row is None else (row.up, row.since)

    def set_sequencer(self, chain_id: int, up: bool, since: int) -> None:
        """Sets the chain's sequencer uptime feed."""
        row = self._session.get(SimSequencerRow, chain_id)
        if row is None:
            row = SimSequencerRow(chain_id=chain_id, up=up, since=since)
        row.up, row.since = up, since
        self._session.add(row)

    def pool_id(self, pool: PoolState) -> int:
        """The stored id of a pool read through ``pools`` in this database session."""
        row = self._pool_rows[(pool.chain_id, pool.protocol, pool.token)]
        assert row.id is not None
        return row.id

    def position(self, pool: PoolState, holder: str) -> ScaledPosition:
        """``holder``'s position in ``pool`` (a zero one, not stored, if none is)."""
        pool_id = self.pool_id(pool)
        row = self._session.get(SimPositionRow, (pool_id, holder))
        if row is None:
            return ScaledPosition(pool_id, holder, 0, pool.reward_index, 0, stored=False)
        return ScaledPosition(pool_id, holder, row.scaled, row.reward_snapshot, row.rewards_owed)

    def scaled_positions(self, chain_id: int, token: str, holder: str) -> dict[str, int]:
        """``holder``'s scaled units per protocol, in the pools of ``token``; one query."""
        rows = self._session.exec(
            select(SimPoolRow.protocol, SimPositionRow.scaled)
            .join(SimPositionRow, col(SimPositionRow.pool_id) == col(SimPoolRow.id))
            .where(
                SimPoolRow.chain_id == chain_id,
                SimPoolRow.token == token,
                SimPositionRow.holder == holder,
            )
        )
        return {protocol: scaled for protocol, scaled in rows if scaled}

    def scaled_positions_of(
        self, chain_id: int, token: str, holders: Sequence[str]
    ) -> dict[str, dict[str, int]]:
        """Each of ``holders``' scaled units per protocol, in the pools of ``token``; one
        query per ``CHUNK`` holders after one for the pools (holders without a position are
        left out)."""
        connection = self._session.connection()
        protocols: dict[int, str] = dict(
            connection.execute(_POOL_PROTOCOLS, {"chain_id": chain_id, "token": token}).all()
        )
        held: dict[str, dict[str, int]] = {}
        if not protocols:
            return held
        for chunk in _chunks(holders):
            rows = connection.execute(
                self._reads.scaled, {"pool_ids": list(protocols), "holders": list(chunk)}
            )
            for holder, pool_id, scaled in rows:
                if scaled:
                    held.setdefault(holder, {})[protocols[pool_id]] = scaled
        return held

    def holders_of(self, pool: PoolState) -> dict[str, int]:
        """Every holder's scaled units in ``pool`` (read through ``pools``), by holder."""
        rows = self._session.exec(
            select(SimPositionRow).where(SimPositionRow.pool_id == self.pool_id(pool))
        )
        return {row.holder: row.scaled for row in rows if row.scaled > 0}

    def save_position(self, position: ScaledPosition) -> None:
        """Writes a position back (a stored one's row is in the session since
        ``position`` read it)."""
        key = (position.pool_id, position.holder)
        row = self._session.get(SimPositionRow, key) if position.stored else None
        if row is None:
            row = SimPositionRow(
                pool_id=position.pool_id,
                holder=position.holder,
                scaled=position.scaled,
                reward_snapshot=position.reward_snapshot,
                rewards_owed=position.rewards_owed,
            )
        else:
            row.scaled = position.scaled
            row.reward_snapshot = position.reward_snapshot
            row.rewards_owed = position.rewards_owed
        self._session.add(row)

    def holdings(
        self, pools: Sequence[PoolState], holders: Sequence[str]
    ) -> dict[tuple[int, str], ScaledPosition]:
        """The stored positions of ``holders`` in ``pools`` (read through ``pools`` in this
        session), by (pool id, holder); one query per ``CHUNK`` holders."""
        pool_ids = [self.pool_id(pool) for pool in pools]
        held: dict[tuple[int, str], ScaledPosition] = {}
        if not pool_ids:
            return held
        connection = self._session.connection()
        for chunk in _chunks(holders):
            rows = connection.execute(
                self._reads.positions, {"pool_ids": pool_ids, "holders": list(chunk)}
            )
            for holder, pool_id, scaled, snapshot, owed in rows:
                held[(pool_id, holder)] = ScaledPosition(pool_id, holder, scaled, snapshot, owed)
        return held

    def save_holdings(self, holdings: Iterable[ScaledPosition]) -> None:
        """Writes positions back: one statement for the new ones, one for the stored ones."""
        new: list[dict[str, Any]] = []
        stored: list[dict[str, Any]] = []
        for held in holdings:
            values = {
                "pool_id": held.pool_id,
                "holder": held.holder,
                "scaled": held.scaled,
                "reward_snapshot": held.reward_snapshot,
                "rewards_owed": held.rewards_owed,
            }
            (stored if held.stored else new).append(values)
        connection = self._session.connection()
        insert_many(connection, _positions, new)
        update_many(connection, _positions, ("pool_id", "holder"), stored)

    # balances and transactions

    def balance(self, chain_id: int, token: str, holder: str) -> int:
        """``holder``'s balance of ``token``."""
        row = self._session.get(SimBalanceRow, (chain_id, token, holder))
        return row.amount if row is not None else 0

    def balances(self, chain_id: int, token: str, holders: Sequence[str]) -> dict[str, int]:
        """Each of ``holders``' balance of ``token`` (absent: none); one query per ``CHUNK``
        holders."""
        return {
            holder: amount
            for (_, holder), amount in self.balances_of(chain_id, [token], holders).items()
        }

    def credit(self, chain_id: int, token: str, holder: str, delta: int) -> None:
        """Adds ``delta`` (negative: debits); MarketError if the balance would go negative."""
        row = self._session.get(SimBalanceRow, (chain_id, token, holder))
        current = row.amount if row is not None else 0
        if current + delta < 0:
            raise MarketError(f"insufficient balance: {holder} holds {current} of {token}")
        if row is None:
            row = SimBalanceRow(chain_id=chain_id, token=token, holder=holder, amount=0)
        row.amount = current + delta
        self._session.add(row)

    def balances_of(
        self, chain_id: int, tokens: Collection[str], holders: Sequence[str]
    ) -> dict[tuple[str, str], int]:
        """The stored balances of ``holders`` in ``tokens``, by (token, holder); one query
        per ``CHUNK`` holders."""
        connection = self._session.connection()
        found: dict[tuple[str, str], int] = {}
        for chunk in _chunks(holders):
            rows = connection.execute(
                self._reads.balances,
                {"chain_id": chain_id, "tokens": list(tokens), "holders": list(chunk)},
            )
            for holder, token, amount in rows:
                found[(token, holder)] = amount
        return found

    def save_balances(
        self,
        chain_id: int,
        amounts: Mapping[tuple[str, str], int],
        stored: Collection[tuple[str, str]],
    ) -> None:
        """Writes balances by (token, holder): inserts those not in ``stored`` (what
        ``balances_of`` found), updates the others; a statement each."""
        new: list[dict[str, Any]] = []
        old: list[dict[str, Any]] = []
        for (token, holder), amount in amounts.items():
            values = {"chain_id": chain_id, "token": token, "holder": holder, "amount": amount}
            (old if (token, holder) in stored else new).append(values)
        connection = self._session.connection()
        insert_many(connection, _balances, new)
        update_many(connection, _balances, ("chain_id", "token", "holder"), old)

    def record(self, transaction: MinedTx) -> None:
        """Records a mined transaction."""
        self._session.add(SimTransactionRow(**_columns(transaction)))

    def record_many(self, transactions: Sequence[MinedTx]) -> None:
        """Records mined transactions; one statement."""
        insert_many(self._session.connection(), _transactions, list(map(_columns, transactions)))

    def transactions_of(self, chain_id: int, holder: str, since_block: int) -> list[MinedTx]:
        """Transactions sending from or to ``holder`` from ``since_block`` on, in order."""
        return list(
            map(
                _mined,
                self._session.exec(
                    select(SimTransactionRow)
                    .where(
                        SimTransactionRow.chain_id == chain_id,
                        col(SimTransactionRow.block_number) >= since_block,
                        (col(SimTransactionRow.sender) == holder)
                        | (col(SimTransactionRow.recipient) == holder),
                    )
                    .order_by(col(SimTransactionRow.block_number), col(SimTransactionRow.sequence))
                ),
            )
        )

    def transactions_of_many(
        self, chain_id: int, holders: Sequence[str], since_block: int
    ) -> dict[str, list[MinedTx]]:
        """``transactions_of`` each of ``holders`` (each one a key); one query per
        ``CHUNK`` holders."""
        found: dict[str, list[MinedTx]] = {holder: [] for holder in holders}
        for chunk in _chunks(list(found)):
            wanted = set(chunk)
            rows = self._session.exec(
                select(SimTransactionRow)
                .where(
                    SimTransactionRow.chain_id == chain_id,
                    col(SimTransactionRow.block_number) >= since_block,
                    col(SimTransactionRow.sender).in_(chunk)
                    | col(SimTransactionRow.recipient).in_(chunk),
                )
                .order_by(col(SimTransactionRow.block_number), col(SimTransactionRow.sequence))
            )
            for row in rows:
                mined = _mined(row)
                for holder in {row.sender, row.recipient} & wanted:
                    found[holder].append(mined)
        return found

    def transaction(self, tx_hash: str) -> MinedTx | None:
        """The transaction with this hash, if any."""
        row = self._session.get(SimTransactionRow, tx_hash)
        return _mined(row) if row is not None else None


class SimulationStore:
    """Opens units of work on the simulated world."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._reads = _HolderReads.of(engine.dialect.name)

    @contextmanager
    def reading(self) -> Iterator[SimSession]:
        """A read-only unit: sees committed state, takes no lock."""
        with Session(self._engine) as session:
            yield SimSession(session, self._reads)

    @contextmanager
    def writing(self) -> Iterator[SimSession]:
        """A write unit, serialized with every other one; commits at the end."""
        with Session(self._engine) as session:
            session.execute(text("UPDATE sim_clock SET sequence = sequence WHERE id = 1"))
            yield SimSession(session, self._reads)
            session.commit()

    def create_world(
        self, seed: int, genesis: int, clock: SimClock, pools: list[PoolState]
    ) -> bool:
        """Records the world at genesis; False if another process already did."""
        with Session(self._engine) as session:
            session.add(
                SimClockRow(
                    id=1,
                    seed=seed,
                    genesis=genesis,
                    anchor=clock.anchor,
                    anchor_wall=clock.anchor_wall,
                    speed=clock.speed,
                )
            )
            try:
                session.flush()
            except IntegrityError:
                return False
            unit = SimSession(session, self._reads)
            for pool in pools:
                unit.add_pool(pool)
            session.commit()
        return True
