"""Wallets and their history: deposits, withdrawals, transactions, rewards, performance.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from yieldagent.storage.types import TokenAmount

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "wallets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("chain_id", sa.Integer(), nullable=False),
        sa.Column("address", sa.String(42), nullable=False),
        sa.Column("eoa", sa.String(42), nullable=False),
        sa.Column("partner_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("token", sa.String(42), nullable=False),
        sa.Column("selected_protocols", sa.Text(), nullable=False),
        sa.Column("constraints", sa.Text(), nullable=False),
        sa.Column("principal", TokenAmount(), nullable=False),
        sa.Column("allocation", sa.Text(), nullable=False),
        sa.Column("idle", TokenAmount(), nullable=False),
        sa.Column("current_apr", sa.Float(), nullable=False),
        sa.Column("valued_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("is_staked", sa.Boolean(), nullable=False),
        sa.Column("activation_date", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_deactivation_date", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_reactivation_date", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lease_owner", sa.String(64), nullable=True),
        sa.Column("lease_until", sa.Float(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["partner_id"],
            ["partners.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("chain_id", "address"),
    )
    op.create_index("ix_wallets_eoa", "wallets", ["eoa"])
    op.create_index("ix_wallets_partner_id", "wallets", ["partner_id"])
    op.create_index("ix_wallets_status", "wallets", ["status"])

    op.create_table(
        "performance_points",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("wallet_id", sa.Integer(), nullable=False),
        sa.Column("value", TokenAmount(), nullable=False),
        sa.Column("flow", TokenAmount(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["wallet_id"],
            ["wallets.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_performance_points_wallet_at", "performance_points", ["wallet_id", "at"])

    op.create_table(
        "wallet_deposits",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("wallet_id", sa.Integer(), nullable=False),
        sa.Column("chain_id", sa.Integer(), nullable=False),
        sa.Column("token", sa.String(42), nullable=False),
        sa.Column("amount", TokenAmount(), nullable=False),
        sa.Column("tx_hash", sa.String(66), nullable=True),
        sa.Column("block_number", sa.BigInteger(), nullable=True),
        sa.Column("date", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["wallet_id"],
            ["wallets.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("chain_id", "tx_hash"),
    )
    op.create_index("ix_wallet_deposits_wallet_id", "wallet_deposits", ["wallet_id"])

    op.create_table(
        "wallet_rewards",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("wallet_id", sa.Integer(), nullable=False),
        sa.Column("token", sa.String(42), nullable=False),
        sa.Column("token_symbol", sa.String(16), nullable=False),
        sa.Column("amount", TokenAmount(), nullable=False),
        sa.Column("decimals", sa.Integer(), nullable=False),
        sa.Column("dollar_value", sa.Float(), nullable=False),
        sa.Column("tx_hash", sa.String(66), nullable=False),
        sa.Column("is_staked", sa.Boolean(), nullable=False),
        sa.Column("date", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["wallet_id"],
            ["wallets.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_wallet_rewards_wallet_date", "wallet_rewards", ["wallet_id", "date"])

    op.create_table(
        "wallet_transactions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("wallet_id", sa.Integer(), nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("token", sa.String(42), nullable=False),
        sa.Column("amount", TokenAmount(), nullable=False),
        sa.Column("tx_hash", sa.String(66), nullable=False),
        sa.Column("protocol", sa.String(64), nullable=False),
        sa.Column("new_token", sa.String(42), nullable=True),
        sa.Column("amount_out", TokenAmount(), nullable=True),
        sa.Column("apr", sa.Float(), nullable=True),
        sa.Column("block_number", sa.BigInteger(), nullable=True),
        sa.Column("correlation_id", sa.String(36), nullable=True),
        sa.Column("date", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["wallet_id"],
            ["wallets.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_wallet_transactions_wallet_date", "wallet_transactions", ["wallet_id", "date"]
    )

    op.create_table(
        "wallet_withdrawals",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("wallet_id", sa.Integer(), nullable=False),
        sa.Column("token", sa.String(42), nullable=False),
        sa.Column("amount", TokenAmount(), nullable=False),
        sa.Column("principal", TokenAmount(), nullable=False),
        sa.Column("yield", TokenAmount(), nullable=False),
        sa.Column("fee", TokenAmount(), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("value_in_usd", sa.Float(), nullable=False),
        sa.Column("tx_hash", sa.String(66), nullable=True),
        sa.Column("block_number", sa.BigInteger(), nullable=True),
        sa.Column("date", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["wallet_id"],
            ["wallets.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_wallet_withdrawals_wallet_id", "wallet_withdrawals", ["wallet_id"])


def downgrade() -> None:
    for table in (
        "wallet_withdrawals",
        "wallet_transactions",
        "wallet_rewards",
        "wallet_deposits",
        "performance_points",
        "wallets",
    ):
        op.drop_table(table)
