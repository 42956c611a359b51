"""Pages of history listings: checking the query, and the pagination object."""

from __future__ import annotations

from dataclasses import dataclass

from yieldagent.domain.errors import FieldViolation, InvalidInput

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
SORTS = ("date_desc", "date_asc")


@dataclass(frozen=True, slots=True)
class PageRequest:
    """A checked page request: ``page`` from 1, ``limit`` 1..100, newest first or not."""

    page: int
    limit: int
    newest_first: bool

    @property
    def offset(self) -> int:
        """How many items come before this page."""
        return (self.page - 1) * self.limit


def page_request(page: int | None, limit: int | None, sort: str) -> PageRequest:
    """Checks the query values; InvalidInput names every bad one."""
    page = 1 if page is None else page
    limit = DEFAULT_LIMIT if limit is None else limit
    sort = sort or SORTS[0]
    violations = []
    if page < 1:
        violations.append(
            FieldViolation(
                ("page",), "Input should be greater than or equal to 1", "greater_than_equal"
            )
        )
    if not 1 <= limit <= MAX_LIMIT:
        violations.append(
            FieldViolation(("limit",), f"Input should be between 1 and {MAX_LIMIT}", "value_error")
        )
    if sort not in SORTS:
        violations.append(
            FieldViolation(("sort",), "Input should be 'date_desc' or 'date_asc'", "literal_error")
        )
    if violations:
        raise InvalidInput(violations)
    return PageRequest(page, limit, sort == "date_desc")


@dataclass(frozen=True, slots=True)
class Pagination:
    """Where a page sits in the whole listing."""

    total_items: int
    total_pages: int
    current_page: int
    items_per_page: int


def pagination(request: PageRequest, total_items: int) -> Pagination:
    """The pagination object of ``request`` over ``total_items`` items.

    A page past the end is valid and empty; an empty listing has 0 pages.
    """
    total_pages = -(-total_items // request.limit)
    return Pagination(total_items, total_pages, request.page, request.limit)
