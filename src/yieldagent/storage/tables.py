"""The tables, as SQLModel classes. Migrations in ``migrations/versions`` create them.

Token amounts are stored as ``NUMERIC(78, 0)``: exact integers up to 2**256.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Column, DateTime, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from yieldagent.storage.types import TokenAmount


def utc_column() -> Column[datetime]:
    """A timezone-aware timestamp column."""
    return Column(DateTime(timezone=True), nullable=False)


class PartnerRow(SQLModel, table=True):
    """A partner that integrates the API; its key is kept only as a digest."""

    __tablename__ = "partners"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=63, unique=True, index=True)
    api_key_digest: str = Field(max_length=64)
    active: bool = True
    permissions: str = Field(max_length=255, description="comma-separated permission names")
    created_at: datetime = Field(sa_column=utc_column())
    updated_at: datetime = Field(sa_column=utc_column())


class SmartAccountRow(SQLModel, table=True):
    """A smart account created for a user's EOA, owned by the partner that created it."""

    __tablename__ = "smart_accounts"
    __table_args__ = (UniqueConstraint("chain_id", "eoa", "agent_id"),)

    id: int | None = Field(default=None, primary_key=True)
    chain_id: int = Field(index=True)
    eoa: str = Field(max_length=42)
    agent_id: str = Field(max_length=128)
    address: str = Field(max_length=42, index=True)
    partner_id: int = Field(foreign_key="partners.id", index=True)
    created_at: datetime = Field(sa_column=utc_column())


# -- the simulated chain -------------------------------------------------------


class SimClockRow(SQLModel, table=True):
    """The simulated clock (one row): where simulated time stands and how fast it runs."""

    __tablename__ = "sim_clock"

    id: int = Field(default=1, primary_key=True)
    seed: int
    genesis: int = Field(sa_type=BigInteger, description="simulated unix time of block 0")
    anchor: int = Field(sa_type=BigInteger, description="simulated unix time at anchor_wall")
    anchor_wall: float = Field(description="wall-clock unix time of the anchor")
    speed: float = Field(description="simulated seconds per wall-clock second")
    sequence: int = Field(default=0, sa_type=BigInteger, description="transactions so far")


class SimPoolRow(SQLModel, table=True):
    """A simulated pool and its markets (as JSON)."""

    __tablename__ = "sim_pools"
    __table_args__ = (UniqueConstraint("chain_id", "protocol", "token"),)

    id: int | None = Field(default=None, primary_key=True)
    chain_id: int
    protocol: str = Field(max_length=64)
    token: str = Field(max_length=42)
    kind: str = Field(max_length=32)
    fee: int = Field(sa_type=TokenAmount)
    liquidity_index: int = Field(sa_type=TokenAmount)
    scaled_supply: int = Field(sa_type=TokenAmount)
    markets: str = Field(sa_type=Text, description="JSON list of markets, amounts as strings")
    updated_at: int = Field(sa_type=BigInteger)
    next_step: int = Field(sa_type=BigInteger)
    reward_token: str | None = Field(default=None, max_length=42)
    reward_rate: int = Field(sa_type=TokenAmount)
    reward_index: int = Field(sa_type=TokenAmount)


class SimPositionRow(SQLModel, table=True):
    """What one holder has supplied to one simulated pool."""

    __tablename__ = "sim_positions"

    pool_id: int = Field(foreign_key="sim_pools.id", primary_key=True)
    holder: str = Field(max_length=42, primary_key=True)
    scaled: int = Field(sa_type=TokenAmount)
    reward_snapshot: int = Field(sa_type=TokenAmount)
    rewards_owed: int = Field(sa_type=TokenAmount)


class SimBalanceRow(SQLModel, table=True):
    """One holder's balance of one token on one simulated chain."""

    __tablename__ = "sim_balances"

    chain_id: int = Field(primary_key=True)
    token: str = Field(max_length=42, primary_key=True)
    holder: str = Field(max_length=42, primary_key=True)
    amount: int = Field(sa_type=TokenAmount)


class SimTransactionRow(SQLModel, table=True):
    """A mined simulated transaction: mints, transfers, supplies, withdrawals, swaps, claims."""

    __tablename__ = "sim_transactions"

    tx_hash: str = Field(max_length=66, primary_key=True)
    chain_id: int = Field(index=True)
    block_number: int = Field(sa_type=BigInteger)
    timestamp: int = Field(sa_type=BigInteger)
    kind: str = Field(max_length=16)
    token: str = Field(max_length=42)
    sender: str = Field(max_length=42)
    recipient: str = Field(max_length=42)
    amount: int = Field(sa_type=TokenAmount)
    token_out: str | None = Field(default=None, max_length=42)
    amount_out: int | None = Field(default=None, sa_type=TokenAmount)
