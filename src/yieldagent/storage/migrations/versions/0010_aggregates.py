"""Chain totals: what the statistics and the catalog's token balances read, kept with
every wallet commit (``domain.books.aggregates``), backfilled here from the ledger.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# The backfill is the books' own recomputation, over the facts storage reads.
from yieldagent.domain.books.effects import recompute
from yieldagent.storage.aggregates import replace_totals, wallet_facts
from yieldagent.storage.types import TokenAmount

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "chain_totals",
        sa.Column("chain_id", sa.Integer(), primary_key=True),
        sa.Column("token", sa.String(42), primary_key=True),
        sa.Column("protocol", sa.String(64), primary_key=True),
        sa.Column("stripe", sa.Integer(), primary_key=True),
        sa.Column("wallets", sa.BigInteger(), nullable=False),
        sa.Column("amount", TokenAmount(), nullable=False),
        sa.Column("active_wallets", sa.BigInteger(), nullable=False),
        sa.Column("apr_units", TokenAmount(), nullable=False),
        sa.Column("deposited", TokenAmount(), nullable=False),
        sa.Column("first_wallets", sa.BigInteger(), nullable=False),
        sa.Column("first_deposited", TokenAmount(), nullable=False),
        sa.Column("transactions", sa.BigInteger(), nullable=False),
    )
    bind = op.get_bind()
    replace_totals(bind, recompute(wallet_facts(bind)))


def downgrade() -> None:
    op.drop_table("chain_totals")
