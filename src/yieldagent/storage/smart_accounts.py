"""Smart accounts recorded for partners' users."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, bindparam
from sqlalchemy import select as core_select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from yieldagent.domain.ports.accounts import Provider, SmartAccount
from yieldagent.storage.tables import SmartAccountRow

_accounts = SmartAccountRow.__table__  # type: ignore[attr-defined]
_COLUMNS = (
    _accounts.c.chain_id,
    _accounts.c.eoa,
    _accounts.c.agent_id,
    _accounts.c.address,
    _accounts.c.partner_id,
    _accounts.c.provider,
    _accounts.c.fee_collector,
)
_BY_KEY = core_select(*_COLUMNS).where(
    _accounts.c.chain_id == bindparam("chain_id"),
    _accounts.c.eoa == bindparam("eoa"),
    _accounts.c.agent_id == bindparam("agent_id"),
    _accounts.c.provider == bindparam("provider"),
)


def account_of(row: Any) -> SmartAccount:
    """The account a row of ``_COLUMNS`` (or a ``SmartAccountRow``) holds."""
    return SmartAccount(
        row.chain_id,
        row.eoa,
        row.agent_id,
        row.address,
        row.partner_id,
        Provider(row.provider),
        row.fee_collector,
    )


class SmartAccountStore:
    """Reads and records smart accounts."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def get(
        self, chain_id: int, eoa: str, agent_id: str, provider: Provider = Provider.ZERODEV
    ) -> SmartAccount | None:
        """The ``provider`` account recorded for this chain, EOA and agent id, if any."""
        key = {"chain_id": chain_id, "eoa": eoa, "agent_id": agent_id, "provider": provider}
        with self._engine.connect() as connection:
            row = connection.execute(_BY_KEY, key).first()
        return account_of(row) if row is not None else None

    def record(self, account: SmartAccount) -> SmartAccount:
        """Records ``account`` unless one exists for its key; returns the stored one.

        Concurrent calls for the same key all return the single stored row.
        """
        existing = self.get(account.chain_id, account.eoa, account.agent_id, account.provider)
        if existing is not None:
            return existing
        row = SmartAccountRow(
            chain_id=account.chain_id,
            eoa=account.eoa,
            agent_id=account.agent_id,
            address=account.address,
            partner_id=account.partner_id,
            provider=account.provider,
            fee_collector=account.fee_collector,
            created_at=datetime.now(UTC),
        )
        with Session(self._engine) as session:
            session.add(row)
            try:
                session.commit()
            except IntegrityError:
                session.rollback()
                stored = self.get(account.chain_id, account.eoa, account.agent_id, account.provider)
                if stored is None:  # not a lost race: another constraint failed
                    raise
                return stored
        return account
