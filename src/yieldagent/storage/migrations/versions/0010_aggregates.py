"""Chain totals: what the statistics and the catalog's token balances read, kept with
every wallet commit (``domain.books.aggregates``), backfilled here from the ledger.

The backfill is the books' recomputation as it stood when this revision was written,
copied here over the tables of this revision, so that what the migration does never
changes with the domain: each wallet that is not deactivated holds its idle funds and
its allocation (and counts, when active, with its APR); every deposit adds to its
token; the wallet's earliest deposit (by date, then as booked) and its transactions
count under its token. Each wallet adds to stripe ``id % 8`` of its chain.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23
"""

import json
import math
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

import sqlalchemy as sa
from alembic import op

from yieldagent.storage.types import TokenAmount

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_STRIPES = 8
_APR_BITS = 128
_ACTIVE = {"activating", "activated", "running"}
_TOKEN_FIGURES = (
    "wallets",
    "amount",
    "active_wallets",
    "apr_units",
    "deposited",
    "first_wallets",
    "first_deposited",
    "transactions",
)

_wallets = sa.table(
    "wallets",
    sa.column("id", sa.Integer()),
    sa.column("chain_id", sa.Integer()),
    sa.column("status", sa.String()),
    sa.column("token", sa.String()),
    sa.column("idle", TokenAmount()),
    sa.column("allocation", sa.Text()),
    sa.column("current_apr", sa.Float()),
)
_deposits = sa.table(
    "wallet_deposits",
    sa.column("id", sa.Integer()),
    sa.column("wallet_id", sa.Integer()),
    sa.column("token", sa.String()),
    sa.column("amount", TokenAmount()),
    sa.column("date", sa.DateTime(timezone=True)),
)
_transactions = sa.table("wallet_transactions", sa.column("wallet_id", sa.Integer()))


def _apr_units(apr: float) -> int:
    """``apr`` in units of ``2**-128`` percent (0 when not finite)."""
    if not math.isfinite(apr):
        return 0
    numerator, denominator = apr.as_integer_ratio()
    return round(Fraction(numerator << _APR_BITS, denominator))


def _totals(bind: sa.Connection) -> list[dict[str, Any]]:
    """The rows of every chain's totals, recomputed from the ledger."""
    counts: dict[int, int] = dict(
        bind.execute(
            sa.select(_transactions.c.wallet_id, sa.func.count()).group_by(
                _transactions.c.wallet_id
            )
        ).all()
    )
    deposits: dict[int, list[tuple[str, int, datetime]]] = defaultdict(list)
    for row in bind.execute(
        sa.select(
            _deposits.c.wallet_id, _deposits.c.token, _deposits.c.amount, _deposits.c.date
        ).order_by(_deposits.c.wallet_id, _deposits.c.date, _deposits.c.id)
    ):
        date = row.date if row.date.tzinfo else row.date.replace(tzinfo=UTC)
        deposits[row.wallet_id].append((row.token, row.amount, date))
    # (chain id, stripe, token, protocol) -> figures; protocol "" is the token's own row
    figures: dict[tuple[int, int, str, str], dict[str, int]] = {}

    def key(chain_id: int, stripe: int, token: str, protocol: str = "") -> dict[str, int]:
        found = figures.get((chain_id, stripe, token, protocol))
        if found is None:
            found = figures[(chain_id, stripe, token, protocol)] = dict.fromkeys(_TOKEN_FIGURES, 0)
        return found

    for wallet in bind.execute(sa.select(_wallets)):
        stripe = wallet.id % _STRIPES
        if wallet.status != "deactivated":
            allocation = {k: int(v) for k, v in json.loads(wallet.allocation).items()}
            token = key(wallet.chain_id, stripe, wallet.token)
            token["wallets"] += 1
            token["amount"] += wallet.idle + sum(allocation.values())
            if wallet.status in _ACTIVE:
                token["active_wallets"] += 1
                token["apr_units"] += _apr_units(wallet.current_apr)
            for protocol, amount in allocation.items():
                placed = key(wallet.chain_id, stripe, wallet.token, protocol)
                placed["wallets"] += 1
                placed["amount"] += amount
        first: tuple[str, int, datetime] | None = None
        for deposit in deposits.get(wallet.id, []):
            key(wallet.chain_id, stripe, deposit[0])["deposited"] += deposit[1]
            if first is None or deposit[2] < first[2]:  # a later one counts only if earlier
                first = deposit
        if first is not None:
            counted = key(wallet.chain_id, stripe, first[0])
            counted["first_wallets"] += 1
            counted["first_deposited"] += first[1]
        if counts.get(wallet.id, 0):
            key(wallet.chain_id, stripe, wallet.token)["transactions"] += counts[wallet.id]
    return [
        {"chain_id": chain_id, "token": token, "protocol": protocol, "stripe": stripe} | values
        for (chain_id, stripe, token, protocol), values in sorted(figures.items())
        if any(values.values())
    ]


def upgrade() -> None:
    totals = op.create_table(
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
    rows = _totals(op.get_bind())
    if rows:
        op.bulk_insert(totals, rows)


def downgrade() -> None:
    op.drop_table("chain_totals")
