"""Request datetimes: malformed or out of range, each is a 422 naming the field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from yieldagent.domain.dates import parse_iso
from yieldagent.domain.errors import InvalidInput


def test_an_offset_is_kept_as_the_same_moment_in_utc() -> None:
    moment = parse_iso("2026-01-01T05:00:00+05:00", ("start_date",))
    assert moment == datetime(2026, 1, 1, tzinfo=UTC)
    assert moment.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    "text",
    [
        "9999-12-31T23:59:59-23:59",  # only its offset keeps it before year 10000
        "0001-01-01T00:00:00+23:59",
        "２０２６-01-01",
        "2026-01-01T00:00:00.٣",
        "",
    ],
)
def test_moments_without_a_utc_form_are_refused(text: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_iso(text, ("start_date",))
    assert [v.loc for v in caught.value.violations] == [("start_date",)]


@given(st.text(max_size=40))
def test_any_text_is_a_utc_moment_or_an_invalid_input(text: str) -> None:
    try:
        moment = parse_iso(text, ("end_date",))
    except InvalidInput:
        return
    assert moment.utcoffset() == timedelta(0)
