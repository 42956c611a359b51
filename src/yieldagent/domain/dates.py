"""Dates as the API prints them: ISO 8601 in UTC with a Z suffix."""

from __future__ import annotations

from datetime import UTC, datetime

from yieldagent.domain.errors import InvalidInput, Location


def iso(moment: datetime) -> str:
    """``moment`` as ``2026-11-21T05:41:39Z`` (microseconds kept when present)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def utc_now() -> datetime:
    """The current time, timezone-aware in UTC."""
    return datetime.now(UTC)


def parse_iso(text: str, loc: Location) -> datetime:
    """An ISO 8601 datetime, with an offset or ``Z`` (UTC when it has neither), in UTC.

    A moment that only its offset keeps within years 1-9999 (``9999-12-31T23:59-05:00``)
    is refused like any malformed one: it has no UTC form.
    """
    try:
        moment = datetime.fromisoformat(text)
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
    except (ValueError, OverflowError):
        raise InvalidInput.field(
            loc, "Input should be an ISO 8601 datetime", "datetime_from_date_parsing"
        ) from None
