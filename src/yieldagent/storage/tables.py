"""The tables, as SQLModel classes. Migrations in ``migrations/versions`` create them.

Token amounts are stored as ``NUMERIC(78, 0)``: exact integers up to 2**256.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, DateTime, UniqueConstraint
from sqlmodel import Field, SQLModel


def utc_column() -> Column[datetime]:
    """A timezone-aware timestamp column."""
    return Column(DateTime(timezone=True), nullable=False)


class PartnerRow(SQLModel, table=True):
    """A partner that integrates the API; its key is kept only as a digest."""

    __tablename__ = "partners"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=63, unique=True, index=True)
    api_key_digest: str = Field(max_length=64)
    active: bool = True
    permissions: str = Field(max_length=255, description="comma-separated permission names")
    created_at: datetime = Field(sa_column=utc_column())
    updated_at: datetime = Field(sa_column=utc_column())


class SmartAccountRow(SQLModel, table=True):
    """A smart account created for a user's EOA, owned by the partner that created it."""

    __tablename__ = "smart_accounts"
    __table_args__ = (UniqueConstraint("chain_id", "eoa", "agent_id"),)

    id: int | None = Field(default=None, primary_key=True)
    chain_id: int = Field(index=True)
    eoa: str = Field(max_length=42)
    agent_id: str = Field(max_length=128)
    address: str = Field(max_length=42, index=True)
    partner_id: int = Field(foreign_key="partners.id", index=True)
    created_at: datetime = Field(sa_column=utc_column())
