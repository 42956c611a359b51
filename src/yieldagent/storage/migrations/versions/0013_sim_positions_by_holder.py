"""The simulated chain's positions by holder: an index on ``sim_positions.holder``.

The agent values a batch of wallets by reading their positions in every pool of a token
(``SimSession.scaled_positions_of``). The primary key is ``(pool_id, holder)``; PostgreSQL
would not probe it with a list of holders, and scanned every position of the token's pools
for each batch, so a batch's read grew with the fleet. With this index each holder is one
probe.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_sim_positions_holder", "sim_positions", ["holder"])


def downgrade() -> None:
    op.drop_index("ix_sim_positions_holder", table_name="sim_positions")
