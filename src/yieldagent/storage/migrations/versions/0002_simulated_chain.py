"""The simulated chain: clock, pools, positions, balances, transactions.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from yieldagent.storage.types import TokenAmount

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "sim_clock",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("genesis", sa.BigInteger(), nullable=False),
        sa.Column("anchor", sa.BigInteger(), nullable=False),
        sa.Column("anchor_wall", sa.Float(), nullable=False),
        sa.Column("speed", sa.Float(), nullable=False),
        sa.Column("sequence", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "sim_pools",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("chain_id", sa.Integer(), nullable=False),
        sa.Column("protocol", sa.String(64), nullable=False),
        sa.Column("token", sa.String(42), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("fee", TokenAmount(), nullable=False),
        sa.Column("liquidity_index", TokenAmount(), nullable=False),
        sa.Column("scaled_supply", TokenAmount(), nullable=False),
        sa.Column("markets", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.Column("next_step", sa.BigInteger(), nullable=False),
        sa.Column("reward_token", sa.String(42), nullable=True),
        sa.Column("reward_rate", TokenAmount(), nullable=False),
        sa.Column("reward_index", TokenAmount(), nullable=False),
        sa.UniqueConstraint("chain_id", "protocol", "token"),
    )
    op.create_table(
        "sim_positions",
        sa.Column("pool_id", sa.Integer(), sa.ForeignKey("sim_pools.id"), primary_key=True),
        sa.Column("holder", sa.String(42), primary_key=True),
        sa.Column("scaled", TokenAmount(), nullable=False),
        sa.Column("reward_snapshot", TokenAmount(), nullable=False),
        sa.Column("rewards_owed", TokenAmount(), nullable=False),
    )
    op.create_table(
        "sim_balances",
        sa.Column("chain_id", sa.Integer(), primary_key=True),
        sa.Column("token", sa.String(42), primary_key=True),
        sa.Column("holder", sa.String(42), primary_key=True),
        sa.Column("amount", TokenAmount(), nullable=False),
    )
    op.create_table(
        "sim_transactions",
        sa.Column("tx_hash", sa.String(66), primary_key=True),
        sa.Column("chain_id", sa.Integer(), nullable=False),
        sa.Column("block_number", sa.BigInteger(), nullable=False),
        sa.Column("timestamp", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("token", sa.String(42), nullable=False),
        sa.Column("sender", sa.String(42), nullable=False),
        sa.Column("recipient", sa.String(42), nullable=False),
        sa.Column("amount", TokenAmount(), nullable=False),
        sa.Column("token_out", sa.String(42), nullable=True),
        sa.Column("amount_out", TokenAmount(), nullable=True),
    )
    op.create_index("ix_sim_transactions_chain_id", "sim_transactions", ["chain_id"])


def downgrade() -> None:
    for table in ("sim_transactions", "sim_balances", "sim_positions", "sim_pools", "sim_clock"):
        op.drop_table(table)
