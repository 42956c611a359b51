"""The books from the chain: operations (agent runs among them), ledger keys, sync cursors.

- ``agent_runs`` becomes ``operations``: every money operation stores its intent there
  before its first chain call. Runs keep their rows (kind ``run``); ``plan`` becomes
  ``steps``, each step marked with its transaction once mined.
- Deposits and withdrawals are keyed by the chain event that made them, (chain id, tx
  hash, log index), so an event is booked once; withdrawals gain a kind (``withdrawal``
  or ``external``). History entries gain the log index too.
- Simulated transactions keep their mining order (``sequence``), as a chain's transaction
  index does, so a holder's history lists one block's transactions in the order mined.
- Wallets gain ``synced_block`` (the ledger has booked the chain up to there) and
  ``status_reason`` (why a wallet waits, shown to partners).

Existing wallets start syncing after the last block their books mention, so transfers the
old books credited by balance (without a hash) are not booked a second time.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# SQLite's batch mode names the unnamed unique constraints of 0003 by this convention,
# so they can be dropped; PostgreSQL gave them its own names.
_CONVENTION = {"uq": "uq_%(table_name)s_%(column_0_N_name)s"}


def _drop_old_unique(table: str, columns: str) -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.drop_constraint(f"{table}_{columns}_key", table, type_="unique")


def upgrade() -> None:
    op.drop_index("ix_agent_runs_wallet_id", "agent_runs")
    op.drop_index("ix_agent_runs_status", "agent_runs")
    op.rename_table("agent_runs", "operations")
    with op.batch_alter_table("operations") as batch:
        batch.alter_column("plan", new_column_name="steps", existing_type=sa.Text())
        batch.drop_column("steps_done")
        batch.add_column(sa.Column("kind", sa.String(16), nullable=False, server_default="run"))
        batch.add_column(sa.Column("params", sa.Text(), nullable=False, server_default="{}"))
        batch.add_column(sa.Column("idempotency_key", sa.String(300), nullable=True))
        batch.add_column(sa.Column("result", sa.Text(), nullable=True))
        batch.add_column(sa.Column("retry_at", sa.Float(), nullable=True))
    op.create_index("ix_operations_wallet_id", "operations", ["wallet_id"])
    op.create_index("ix_operations_status", "operations", ["status"])
    op.create_index("ix_operations_idempotency_key", "operations", ["idempotency_key"], unique=True)

    with op.batch_alter_table("wallets") as batch:
        batch.add_column(
            sa.Column("synced_block", sa.BigInteger(), nullable=False, server_default="0")
        )
        batch.add_column(sa.Column("status_reason", sa.Text(), nullable=False, server_default=""))

    _drop_old_unique("wallet_deposits", "chain_id_tx_hash")
    with op.batch_alter_table("wallet_deposits", naming_convention=_CONVENTION) as batch:
        if op.get_bind().dialect.name == "sqlite":
            batch.drop_constraint("uq_wallet_deposits_chain_id_tx_hash", type_="unique")
        batch.add_column(sa.Column("log_index", sa.Integer(), nullable=False, server_default="0"))
        batch.create_unique_constraint(
            "uq_wallet_deposits_event", ["chain_id", "tx_hash", "log_index"]
        )

    with op.batch_alter_table("wallet_withdrawals") as batch:
        batch.add_column(sa.Column("chain_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("log_index", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(
            sa.Column("kind", sa.String(16), nullable=False, server_default="withdrawal")
        )
        batch.create_unique_constraint(
            "uq_wallet_withdrawals_event", ["chain_id", "tx_hash", "log_index"]
        )
    op.execute(
        "UPDATE wallet_withdrawals SET chain_id = "
        "(SELECT chain_id FROM wallets WHERE wallets.id = wallet_withdrawals.wallet_id)"
    )

    with op.batch_alter_table("sim_transactions") as batch:
        batch.add_column(sa.Column("sequence", sa.BigInteger(), nullable=False, server_default="0"))

    with op.batch_alter_table("wallet_transactions") as batch:
        batch.add_column(sa.Column("log_index", sa.Integer(), nullable=False, server_default="0"))

    op.execute(
        "UPDATE wallets SET synced_block = 1 + COALESCE("
        "(SELECT MAX(block_number) FROM wallet_transactions t WHERE t.wallet_id = wallets.id),"
        " 0)"
    )


def downgrade() -> None:
    raise NotImplementedError("0006 is not reversible: the old books cannot be rebuilt")
