"""Dates as the API prints them: ISO 8601 in UTC with a Z suffix."""

from __future__ import annotations

from datetime import UTC, datetime


def iso(moment: datetime) -> str:
    """``moment`` as ``2026-11-21T05:41:39Z`` (microseconds kept when present)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def utc_now() -> datetime:
    """The current time, timezone-aware in UTC."""
    return datetime.now(UTC)
