"""The operator's nonces: one counter per (chain, address), and the nonces handed out.

Several replicas send from one operator key, so the nonce of each transaction is leased
from the database (``storage.nonces``) rather than read from the chain by each process.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "chain_nonces",
        sa.Column("chain_id", sa.Integer(), primary_key=True),
        sa.Column("address", sa.String(42), primary_key=True),
        sa.Column("next_nonce", sa.BigInteger(), nullable=False),
        sa.Column("holder", sa.String(64), nullable=True),
        sa.Column("held_until", sa.Float(), nullable=False),
    )
    op.create_table(
        "chain_nonce_leases",
        sa.Column("chain_id", sa.Integer(), primary_key=True),
        sa.Column("address", sa.String(42), primary_key=True),
        sa.Column("nonce", sa.BigInteger(), primary_key=True),
        sa.Column("holder", sa.String(64), nullable=True),
        sa.Column("held_until", sa.Float(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("chain_nonce_leases")
    op.drop_table("chain_nonces")
