"""A simulated chain's L2 sequencer uptime feed: ``sim_sequencers``.

One row per chain whose sequencer a scenario switched: up or down, and since when (the
feed's ``startedAt``). A chain without a row shows no sequencer feed.

Revision ID: 0035
Revises: 0034
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0035"
down_revision: str | None = "0034"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "sim_sequencers",
        sa.Column("chain_id", sa.Integer(), nullable=False),
        sa.Column("up", sa.Boolean(), nullable=False),
        sa.Column("since", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("chain_id"),
    )


def downgrade() -> None:
    op.drop_table("sim_sequencers")
