"""The risk guards' state: ``pool_risks`` keeps each pool's loss exclusion (until an
operator clears it) and the state and reasons it last showed; ``wallet_schedule`` notes
when a wallet last moved funds, for the minimum wait between yield-only moves. The
simulated market gains what the guards read: each pool's switches and recent history
(``sim_pools``), and price feeds (``sim_prices``).

Revision ID: 0015
Revises: 0013
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from yieldagent.storage.types import TokenAmount

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "pool_risks",
        sa.Column("chain_id", sa.Integer(), primary_key=True),
        sa.Column("protocol", sa.String(length=64), primary_key=True),
        sa.Column("token", sa.String(length=42), primary_key=True),
        sa.Column("loss_excluded", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("cleared_at", sa.BigInteger(), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False, server_default="ok"),
        sa.Column("reasons", sa.Text(), nullable=False, server_default="[]"),
        sa.Column("peak_share_price", TokenAmount(), nullable=False, server_default="0"),
    )
    # a nullable column: added in place on both backends (a batch copy would rebuild the
    # schedule and its partial index)
    op.add_column("wallet_schedule", sa.Column("last_moved_at", sa.Float(), nullable=True))
    op.add_column(
        "sim_pools", sa.Column("switches", sa.String(length=32), nullable=False, server_default="")
    )
    op.add_column("sim_pools", sa.Column("history", sa.Text(), nullable=False, server_default="[]"))
    op.create_table(
        "sim_prices",
        sa.Column("chain_id", sa.Integer(), primary_key=True),
        sa.Column("symbol", sa.String(length=32), primary_key=True),
        sa.Column("price", TokenAmount(), nullable=False),
        sa.Column("peg", TokenAmount(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("sim_prices")
    op.drop_column("sim_pools", "history")
    op.drop_column("sim_pools", "switches")
    op.drop_column("wallet_schedule", "last_moved_at")
    op.drop_table("pool_risks")
