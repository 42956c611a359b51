"""A pool's recorded history for its guards: ``pool_risks.history``.

A chain whose readings carry no history of their own (a real chain read at its head) has
the survey keep the pool's recent snapshots here, as a JSON list, bounded by the guards'
window and ``MAX_SNAPSHOTS``: what the TVL-drop, utilisation and past-pause guards compare
the present with. Existing rows start with none.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    column = sa.Column("history", sa.Text(), nullable=False, server_default="[]")
    op.add_column("pool_risks", column)


def downgrade() -> None:
    with op.batch_alter_table("pool_risks") as batch:
        batch.drop_column("history")
