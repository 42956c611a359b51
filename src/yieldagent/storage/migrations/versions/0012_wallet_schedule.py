"""The schedule apart from the wallet: ``wallet_schedule`` holds each wallet's lease, its
next run, whether it is activated and how its last run ended, with the index of due wallets
over it.

The agent writes a wallet's lease and next run several times an hour (claim, renewals,
batch end) while its state changes rarely. On the wide wallets row, with six indexes and
``next_run_at`` among the indexed columns, each of those writes added an entry to every
index, and on PostgreSQL a claim's or a batch end's 500 rows paid for all of them. The
narrow row has two indexes; with room left on its pages (fillfactor 50, PostgreSQL) the
lease's updates, which touch no indexed column, stay on their page (HOT updates).

``active`` is true for activated wallets, as the old partial index's condition was; it is
backfilled from the status here and kept by every wallet commit from now on.

A run that moves nothing leaves its outcome here (``runs``, ``last_run_at``,
``last_outcome``, ``last_reason``), no longer a row of ``operations`` each: at 100,000
wallets run hourly those rows grew by 2.4 million a day, and their insert was the largest
cost of a batch's end. The operations of such runs already stored stay as they are.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MOVED = ("next_run_at", "lease_owner", "lease_until")


def upgrade() -> None:
    op.create_table(
        "wallet_schedule",
        sa.Column("wallet_id", sa.Integer(), sa.ForeignKey("wallets.id"), primary_key=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("next_run_at", sa.Float(), nullable=False),
        sa.Column("lease_owner", sa.String(64), nullable=True),
        sa.Column("lease_until", sa.Float(), nullable=True),
        sa.Column("runs", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("last_run_at", sa.Float(), nullable=True),
        sa.Column("last_outcome", sa.String(16), nullable=False, server_default=""),
        sa.Column("last_reason", sa.Text(), nullable=False, server_default=""),
        postgresql_with={"fillfactor": 50},
    )
    op.create_index(
        "ix_wallet_schedule_due",
        "wallet_schedule",
        ["next_run_at", "wallet_id"],
        sqlite_where=sa.text("active"),
        postgresql_where=sa.text("active"),
    )
    op.execute(
        "INSERT INTO wallet_schedule (wallet_id, active, next_run_at, lease_owner, lease_until) "
        "SELECT id, status = 'activated', next_run_at, lease_owner, lease_until FROM wallets"
    )
    op.drop_index("ix_wallets_due", table_name="wallets")
    for column in MOVED:
        op.execute(f"ALTER TABLE wallets DROP COLUMN {column}")


def downgrade() -> None:
    op.add_column(
        "wallets", sa.Column("next_run_at", sa.Float(), nullable=False, server_default="0")
    )
    op.add_column("wallets", sa.Column("lease_owner", sa.String(64), nullable=True))
    op.add_column("wallets", sa.Column("lease_until", sa.Float(), nullable=True))
    for column in MOVED:
        op.execute(
            f"UPDATE wallets SET {column} = (SELECT s.{column} FROM wallet_schedule s "  # noqa: S608
            "WHERE s.wallet_id = wallets.id) WHERE id IN (SELECT wallet_id FROM wallet_schedule)"
        )
    op.create_index(
        "ix_wallets_due",
        "wallets",
        ["next_run_at", "id"],
        sqlite_where=sa.text("status = 'activated'"),
        postgresql_where=sa.text("status = 'activated'"),
    )
    op.drop_index("ix_wallet_schedule_due", table_name="wallet_schedule")
    op.drop_table("wallet_schedule")
