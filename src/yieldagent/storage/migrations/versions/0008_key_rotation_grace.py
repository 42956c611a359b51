"""Key rotation with a grace period: a partner's previous key digest and when it expires.

``yieldagent partner rotate NAME --grace SECONDS`` keeps the old key valid until the
expiry (wall-clock unix seconds, as the schedule's times); both columns are empty when
no previous key is valid.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("partners", sa.Column("previous_key_digest", sa.String(64), nullable=True))
    op.add_column("partners", sa.Column("previous_key_expires_at", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("partners") as batch:
        batch.drop_column("previous_key_expires_at")
        batch.drop_column("previous_key_digest")
