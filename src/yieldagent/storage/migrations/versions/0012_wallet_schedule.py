"""The schedule apart from the wallet: ``wallet_schedule`` holds each wallet's next run and
whether it is activated, with the index of due wallets over it; the wallets table keeps the
lease, with room on its pages (PostgreSQL) for the lease's updates to stay there.

Every batch of the agent ends by setting its wallets' next run. On the wide wallets row,
whose ``next_run_at`` was indexed, each of those updates wrote a new entry in every one of
the table's six indexes; on PostgreSQL a claim's and a batch end's 500 rows took about 25 ms
each. The narrow row has two indexes, and the lease's updates on the wallets row touch no
indexed column, so with free room on the page PostgreSQL makes them without index entries
(HOT updates).

``active`` is true for activated wallets, as the old partial index's condition was; it is
backfilled from the status here and kept by every wallet commit from now on.

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

FILLFACTOR = 70


def upgrade() -> None:
    op.create_table(
        "wallet_schedule",
        sa.Column("wallet_id", sa.Integer(), sa.ForeignKey("wallets.id"), primary_key=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("next_run_at", sa.Float(), nullable=False),
    )
    op.create_index(
        "ix_wallet_schedule_due",
        "wallet_schedule",
        ["next_run_at", "wallet_id"],
        sqlite_where=sa.text("active"),
        postgresql_where=sa.text("active"),
    )
    op.execute(
        "INSERT INTO wallet_schedule (wallet_id, active, next_run_at) "
        "SELECT id, status = 'activated', next_run_at FROM wallets"
    )
    op.drop_index("ix_wallets_due", table_name="wallets")
    op.execute("ALTER TABLE wallets DROP COLUMN next_run_at")
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"ALTER TABLE wallets SET (fillfactor = {FILLFACTOR})")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE wallets RESET (fillfactor)")
    op.add_column(
        "wallets", sa.Column("next_run_at", sa.Float(), nullable=False, server_default="0")
    )
    op.execute(
        "UPDATE wallets SET next_run_at = (SELECT s.next_run_at FROM wallet_schedule s "
        "WHERE s.wallet_id = wallets.id) "
        "WHERE id IN (SELECT wallet_id FROM wallet_schedule)"
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
