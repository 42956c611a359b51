"""The pools' recorded yields: ``pool_yields``.

One row per pool every recording interval of chain time (its supply, borrows and the
yearly yields of interest and rewards), kept for the retention the service is configured
with and pruned after it. The history endpoint and the catalog's 7- and 30-day averages
read it.

Revision ID: 0032
Revises: 0017
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from yieldagent.storage.types import TokenAmount

revision: str = "0032"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "pool_yields",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("chain_id", sa.Integer(), nullable=False),
        sa.Column("protocol", sa.String(64), nullable=False),
        sa.Column("token", sa.String(42), nullable=False),
        sa.Column("at", sa.BigInteger(), nullable=False),
        sa.Column("supply", TokenAmount(), nullable=False),
        sa.Column("borrows", TokenAmount(), nullable=False),
        sa.Column("apy_base", sa.Float(), nullable=False),
        sa.Column("apy_rewards", sa.Float(), nullable=True),
    )
    op.create_index(
        "ix_pool_yields_pool_at", "pool_yields", ["chain_id", "protocol", "token", "at"]
    )


def downgrade() -> None:
    op.drop_index("ix_pool_yields_pool_at", "pool_yields")
    op.drop_table("pool_yields")
