"""The operator module's admin changes and how far their logs are read.

``module_changes`` keeps each ``ChangeProposed`` log (by chain, block and log index) with
what it proposes and from when it can apply, and whether a later log applied or cancelled
it; ``module_change_cursors`` the first block of each chain not read yet.

Revision ID: 0020
Revises: 0017
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from yieldagent.storage.types import UtcDateTime

revision: str = "0020"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "module_changes",
        sa.Column("chain_id", sa.Integer(), nullable=False),
        sa.Column("block", sa.BigInteger(), nullable=False),
        sa.Column("log_index", sa.Integer(), nullable=False),
        sa.Column("module", sa.String(length=42), nullable=False),
        sa.Column("change_id", sa.String(length=66), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("subject", sa.String(length=42), nullable=False),
        sa.Column("selector", sa.String(length=10), nullable=False),
        sa.Column("new_value", sa.String(length=42), nullable=False),
        sa.Column("proposed_at", UtcDateTime(), nullable=False),
        sa.Column("effective_at", UtcDateTime(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("resolved_block", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("chain_id", "block", "log_index"),
    )
    op.create_index(
        "ix_module_changes_pending", "module_changes", ["chain_id", "state", "change_id"]
    )
    op.create_table(
        "module_change_cursors",
        sa.Column("chain_id", sa.Integer(), nullable=False),
        sa.Column("next_block", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("chain_id"),
    )


def downgrade() -> None:
    op.drop_table("module_change_cursors")
    op.drop_index("ix_module_changes_pending", table_name="module_changes")
    op.drop_table("module_changes")
