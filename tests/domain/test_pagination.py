"""History pages: checking the query, and where a page sits in the listing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from yieldagent.domain.errors import FieldViolation, InvalidInput
from yieldagent.domain.pagination import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    PageRequest,
    Pagination,
    page_request,
    pagination,
)

PAGE = FieldViolation(("page",), "Input should be greater than or equal to 1", "greater_than_equal")
LIMIT = FieldViolation(("limit",), "Input should be between 1 and 100", "value_error")
SORT = FieldViolation(("sort",), "Input should be 'date_desc' or 'date_asc'", "literal_error")


def _violations(page: int | None, limit: int | None, sort: str) -> tuple[FieldViolation, ...]:
    with pytest.raises(InvalidInput) as caught:
        page_request(page, limit, sort)
    return caught.value.violations


def test_defaults_are_page_one_twenty_items_newest_first() -> None:
    assert page_request(None, None, "") == PageRequest(1, 20, True)
    assert DEFAULT_LIMIT == 20
    assert MAX_LIMIT == 100


def test_given_values_are_kept() -> None:
    assert page_request(3, 7, "date_asc") == PageRequest(3, 7, False)
    assert page_request(2, None, "date_desc") == PageRequest(2, 20, True)


@pytest.mark.parametrize("limit", [1, 100])
def test_the_limit_bounds_are_inclusive(limit: int) -> None:
    assert page_request(1, limit, "").limit == limit


def test_a_page_far_past_the_end_is_accepted() -> None:
    assert page_request(10**9, 100, "").offset == (10**9 - 1) * 100


@pytest.mark.parametrize("page", [0, -1])
def test_page_below_one(page: int) -> None:
    assert _violations(page, None, "") == (PAGE,)


@pytest.mark.parametrize("limit", [0, -5, 101, 10**6])
def test_limit_out_of_range(limit: int) -> None:
    assert _violations(None, limit, "") == (LIMIT,)


@pytest.mark.parametrize("sort", ["newest", "DATE_DESC", "date", " date_asc"])
def test_unknown_sort(sort: str) -> None:
    assert _violations(None, None, sort) == (SORT,)


def test_every_violation_is_reported_at_once() -> None:
    with pytest.raises(InvalidInput) as caught:
        page_request(0, 101, "oldest")
    error = caught.value
    assert error.violations == (PAGE, LIMIT, SORT)
    assert error.detail.startswith("page: ")
    assert "limit: " in error.detail
    assert "sort: " in error.detail


@pytest.mark.parametrize(
    ("page", "limit", "offset"), [(1, 20, 0), (2, 20, 20), (5, 7, 28), (1, 100, 0)]
)
def test_offset_counts_the_items_before_the_page(page: int, limit: int, offset: int) -> None:
    assert PageRequest(page, limit, True).offset == offset


@pytest.mark.parametrize(
    ("total", "limit", "pages"),
    [
        (0, 20, 0),  # an empty listing has no pages
        (1, 20, 1),
        (20, 20, 1),  # an exact multiple
        (40, 20, 2),
        (41, 20, 3),  # a last partial page
        (99, 100, 1),
        (100, 1, 100),
    ],
)
def test_total_pages(total: int, limit: int, pages: int) -> None:
    assert pagination(PageRequest(1, limit, True), total) == Pagination(total, pages, 1, limit)


def test_a_page_past_the_end_keeps_its_number() -> None:
    assert pagination(PageRequest(9, 10, False), 25) == Pagination(25, 3, 9, 10)
    assert pagination(PageRequest(2, 20, True), 0) == Pagination(0, 0, 2, 20)


@given(
    page=st.integers(1, 10**6),
    limit=st.integers(1, MAX_LIMIT),
    total=st.integers(0, 10**9),
    newest=st.booleans(),
)
def test_pages_cover_the_listing_exactly(page: int, limit: int, total: int, newest: bool) -> None:
    request = page_request(page, limit, "date_desc" if newest else "date_asc")
    result = pagination(request, total)
    assert result.current_page == page
    assert result.items_per_page == limit
    assert result.total_items == total
    # enough pages for every item, and not one more
    assert (result.total_pages - 1) * limit < total <= result.total_pages * limit or (
        total == 0 and result.total_pages == 0
    )
