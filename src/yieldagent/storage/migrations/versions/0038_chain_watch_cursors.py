"""How far each chain's fleet-wide log watches have read: ``chain_watch_cursors``.

One row per chain and watch (``module``: the Safes' ``EnabledModule``/``DisabledModule``
logs of the operator module), holding the first block not read yet.

Revision ID: 0038
Revises: 0035
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0038"
down_revision: str | None = "0035"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "chain_watch_cursors",
        sa.Column("chain_id", sa.Integer(), nullable=False),
        sa.Column("watch", sa.String(length=32), nullable=False),
        sa.Column("next_block", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("chain_id", "watch"),
    )


def downgrade() -> None:
    op.drop_table("chain_watch_cursors")
