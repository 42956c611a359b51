"""Column types: exact token amounts of any size, and moments in UTC.

PostgreSQL stores them as ``NUMERIC(78, 0)`` (every uint256 fits). SQLite would turn
an integer beyond 64 bits into a float, so there they are kept as decimal text.
Either way Python sees an ``int``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import DateTime, Dialect, Numeric, String
from sqlalchemy.types import TypeDecorator, TypeEngine


class UtcDateTime(TypeDecorator[datetime]):
    """A moment, stored in UTC and read back timezone-aware (SQLite keeps no offset)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("datetimes must be timezone-aware")
        return value.astimezone(UTC)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        moment: datetime = value
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class TokenAmount(TypeDecorator[int]):
    """An exact, arbitrary-precision integer amount."""

    impl = Numeric(78, 0)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String(80))
        return dialect.type_descriptor(Numeric(78, 0, asdecimal=True))

    def process_bind_param(self, value: int | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"token amounts are int, got {type(value).__name__}")
        return str(value) if dialect.name == "sqlite" else Decimal(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> int | None:
        return None if value is None else int(value)
