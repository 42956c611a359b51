"""The per-wallet money call limit's log: ``wallet_money_calls``.

Each money call a partner made on a wallet in the last minute, by partner, chain and
wallet, with its wall-clock time; rows past the minute are deleted as calls come in.

Revision ID: 0034
Revises: 0033
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0034"
down_revision: str | None = "0033"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "wallet_money_calls",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("partner_id", sa.Integer(), nullable=False),
        sa.Column("chain_id", sa.Integer(), nullable=False),
        sa.Column("wallet", sa.String(length=42), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_wallet_money_calls_wallet",
        "wallet_money_calls",
        ["partner_id", "chain_id", "wallet", "at"],
    )
    op.create_index("ix_wallet_money_calls_at", "wallet_money_calls", ["at"])


def downgrade() -> None:
    op.drop_index("ix_wallet_money_calls_at", table_name="wallet_money_calls")
    op.drop_index("ix_wallet_money_calls_wallet", table_name="wallet_money_calls")
    op.drop_table("wallet_money_calls")
