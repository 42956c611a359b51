"""Dead webhook deliveries: ``webhook_deliveries.dead_at``.

A delivery that fails once its event is older than the dead-letter time
(``YIELDAGENT_WEBHOOK_DEAD_AFTER_SECONDS``) gets ``dead_at`` and is never tried again; the
wallet's next delivery is then the one the job claims. Rows already there stay undead.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    column = sa.Column("dead_at", sa.DateTime(timezone=True), nullable=True)
    op.add_column("webhook_deliveries", column)


def downgrade() -> None:
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.drop_column("dead_at")
