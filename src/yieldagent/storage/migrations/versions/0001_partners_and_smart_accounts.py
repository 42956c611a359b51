"""Partners and smart accounts.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "partners",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(63), nullable=False),
        sa.Column("api_key_digest", sa.String(64), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("permissions", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_partners_name", "partners", ["name"], unique=True)
    op.create_table(
        "smart_accounts",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("chain_id", sa.Integer(), nullable=False),
        sa.Column("eoa", sa.String(42), nullable=False),
        sa.Column("agent_id", sa.String(128), nullable=False),
        sa.Column("address", sa.String(42), nullable=False),
        sa.Column("partner_id", sa.Integer(), sa.ForeignKey("partners.id"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("chain_id", "eoa", "agent_id"),
    )
    op.create_index("ix_smart_accounts_chain_id", "smart_accounts", ["chain_id"])
    op.create_index("ix_smart_accounts_address", "smart_accounts", ["address"])
    op.create_index("ix_smart_accounts_partner_id", "smart_accounts", ["partner_id"])


def downgrade() -> None:
    op.drop_table("smart_accounts")
    op.drop_table("partners")
