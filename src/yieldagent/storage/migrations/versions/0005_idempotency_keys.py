"""Idempotency keys: each partner's keys, the request each was first sent with, its outcome.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from yieldagent.storage.types import UtcDateTime

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("partner_id", sa.Integer(), sa.ForeignKey("partners.id"), primary_key=True),
        sa.Column("key", sa.String(255), primary_key=True),
        sa.Column("method", sa.String(255), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("owner", sa.String(64), nullable=False),
        sa.Column("lease_until", sa.Float(), nullable=False),
        sa.Column("response", sa.LargeBinary(), nullable=True),
        sa.Column("error_code", sa.Integer(), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("error_details", sa.LargeBinary(), nullable=True),
        sa.Column("rest_status", sa.Integer(), nullable=True),
        sa.Column("rest_body", sa.Text(), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
    )
    op.create_index("ix_idempotency_keys_created_at", "idempotency_keys", ["created_at"])


def downgrade() -> None:
    op.drop_table("idempotency_keys")
