"""The index of due wallets: ``(next_run_at, id)`` over activated wallets only.

It replaces the index on ``next_run_at``. A claim (``RunStore.claim_due``) reads the due
activated wallets in the order of this index and stops at its batch, on SQLite and on
PostgreSQL alike; with the old index PostgreSQL scanned and sorted every wallet on each
claim, so a cycle grew with the square of the fleet.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ACTIVATED_ONLY = "status = 'activated'"


def upgrade() -> None:
    op.create_index(
        "ix_wallets_due",
        "wallets",
        ["next_run_at", "id"],
        sqlite_where=sa.text(ACTIVATED_ONLY),
        postgresql_where=sa.text(ACTIVATED_ONLY),
    )
    op.drop_index("ix_wallets_next_run_at", table_name="wallets")


def downgrade() -> None:
    op.create_index("ix_wallets_next_run_at", "wallets", ["next_run_at"])
    op.drop_index("ix_wallets_due", table_name="wallets")
