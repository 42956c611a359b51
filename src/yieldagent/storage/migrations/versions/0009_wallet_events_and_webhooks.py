"""Wallet events (an outbox written with the change that makes each one true), partners'
webhooks, and their deliveries.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from yieldagent.storage.types import TokenAmount

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "wallet_events",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("wallet_id", sa.Integer(), sa.ForeignKey("wallets.id"), nullable=False),
        sa.Column("partner_id", sa.Integer(), sa.ForeignKey("partners.id"), nullable=False),
        sa.Column("chain_id", sa.Integer(), nullable=False),
        sa.Column("wallet", sa.String(42), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("amount", TokenAmount(), nullable=True),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_wallet_events_wallet_id", "wallet_events", ["wallet_id", "id"])
    op.create_index("ix_wallet_events_partner_id", "wallet_events", ["partner_id"])
    op.create_table(
        "partner_webhooks",
        sa.Column("partner_id", sa.Integer(), sa.ForeignKey("partners.id"), primary_key=True),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("secret", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("event_id", sa.BigInteger(), sa.ForeignKey("wallet_events.id"), nullable=False),
        sa.Column("partner_id", sa.Integer(), sa.ForeignKey("partners.id"), nullable=False),
        sa.Column("wallet_id", sa.Integer(), sa.ForeignKey("wallets.id"), nullable=False),
        sa.Column("delivered", sa.Boolean(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.Float(), nullable=False),
        sa.Column("lease_owner", sa.String(64), nullable=True),
        sa.Column("lease_until", sa.Float(), nullable=True),
        sa.Column("last_status", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=False),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("event_id", "partner_id", name="uq_webhook_deliveries_event"),
    )
    op.create_index(
        "ix_webhook_deliveries_pending",
        "webhook_deliveries",
        ["delivered", "wallet_id", "event_id"],
    )
    op.create_index(
        "ix_webhook_deliveries_partner", "webhook_deliveries", ["partner_id", "event_id"]
    )


def downgrade() -> None:
    op.drop_table("webhook_deliveries")
    op.drop_table("partner_webhooks")
    op.drop_index("ix_wallet_events_partner_id", "wallet_events")
    op.drop_index("ix_wallet_events_wallet_id", "wallet_events")
    op.drop_table("wallet_events")
