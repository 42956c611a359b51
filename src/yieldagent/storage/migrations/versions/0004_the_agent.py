"""The agent: runs with their plans, protocol pauses, and when each wallet runs next.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from yieldagent.storage.types import UtcDateTime

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("wallets") as batch:
        batch.add_column(sa.Column("next_run_at", sa.Float(), nullable=False, server_default="0"))
    op.create_index("ix_wallets_next_run_at", "wallets", ["next_run_at"])
    op.create_table(
        "agent_runs",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("wallet_id", sa.Integer(), sa.ForeignKey("wallets.id"), nullable=False),
        sa.Column("chain_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("plan", sa.Text(), nullable=False),
        sa.Column("steps_done", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("start_block", sa.BigInteger(), nullable=False),
        sa.Column("owner", sa.String(64), nullable=False),
        sa.Column("started_at", UtcDateTime(), nullable=False),
        sa.Column("finished_at", UtcDateTime(), nullable=True),
    )
    op.create_index("ix_agent_runs_wallet_id", "agent_runs", ["wallet_id"])
    op.create_index("ix_agent_runs_status", "agent_runs", ["status"])
    op.create_table(
        "protocol_pauses",
        sa.Column("chain_id", sa.Integer(), primary_key=True),
        sa.Column("protocol", sa.String(64), primary_key=True),
        sa.Column("paused_at", UtcDateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("protocol_pauses")
    op.drop_table("agent_runs")
    op.drop_index("ix_wallets_next_run_at", "wallets")
    with op.batch_alter_table("wallets") as batch:
        batch.drop_column("next_run_at")
