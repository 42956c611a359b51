"""Safe accounts: a smart account's provider and the fee collector fixed at its set-up.

``provider`` (``zerodev`` or ``safe``) joins the account's key, so one EOA and agent id may
have an account of each kind; ``fee_collector`` is the collector a Safe account registers
with its operator module (part of its address), empty for Kernel accounts.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# SQLite's batch mode names 0001's unnamed unique constraint by this convention, so it can
# be dropped. PostgreSQL named it itself at 0001 (``..._key``); a database brought down
# through this revision and up again has the convention's name instead.
_CONVENTION = {"uq": "uq_%(table_name)s_%(column_0_N_name)s"}
_OLD = "chain_id_eoa_agent_id"


def _drop_old_unique() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for name in (f"smart_accounts_{_OLD}_key", f"uq_smart_accounts_{_OLD}"):
            op.execute(f"ALTER TABLE smart_accounts DROP CONSTRAINT IF EXISTS {name}")


def upgrade() -> None:
    _drop_old_unique()
    with op.batch_alter_table("smart_accounts", naming_convention=_CONVENTION) as batch:
        if op.get_bind().dialect.name == "sqlite":
            batch.drop_constraint(f"uq_smart_accounts_{_OLD}", type_="unique")
        batch.add_column(
            sa.Column("provider", sa.String(16), nullable=False, server_default="zerodev")
        )
        batch.add_column(
            sa.Column("fee_collector", sa.String(42), nullable=False, server_default="")
        )
        batch.create_unique_constraint(
            "uq_smart_accounts_key", ["chain_id", "eoa", "agent_id", "provider"]
        )


def downgrade() -> None:
    op.execute("DELETE FROM smart_accounts WHERE provider != 'zerodev'")
    with op.batch_alter_table("smart_accounts", naming_convention=_CONVENTION) as batch:
        batch.drop_constraint("uq_smart_accounts_key", type_="unique")
        batch.drop_column("fee_collector")
        batch.drop_column("provider")
        batch.create_unique_constraint(f"uq_smart_accounts_{_OLD}", ["chain_id", "eoa", "agent_id"])
