"""What a wallet could withdraw at once, as of its last valuation: ``wallets.withdrawable``.

Its idle balance and each position within what the position's pool can pay out, written
with every valuation. Existing rows start without it (null) until their next valuation.

Revision ID: 0033
Revises: 0032
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from yieldagent.storage.types import TokenAmount

revision: str = "0033"
down_revision: str | None = "0032"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("wallets", sa.Column("withdrawable", TokenAmount(), nullable=True))


def downgrade() -> None:
    # A plain DROP COLUMN (SQLite 3.35+): a batch copy would drop and recreate ``wallets``,
    # which the foreign keys of the tables that reference it refuse once they hold rows.
    op.drop_column("wallets", "withdrawable")
