"""Pages of history listings, between protobuf and the domain: one place for both servicers."""

from __future__ import annotations

from typing import Protocol

from yieldagent.domain.pagination import PageRequest, Pagination, page_request
from yieldagent.v1 import types_pb2


class PagedRequest(Protocol):
    """A listing request: optional page and limit, and a sort."""

    page: int
    limit: int
    sort: str

    def HasField(self, field_name: str) -> bool: ...


def requested_page(request: PagedRequest) -> PageRequest:
    """The checked page a listing request asks for (422 naming the bad query fields)."""
    return page_request(
        request.page if request.HasField("page") else None,
        request.limit if request.HasField("limit") else None,
        request.sort,
    )


def pagination_message(paging: Pagination) -> types_pb2.Pagination:
    """The protobuf pagination object."""
    return types_pb2.Pagination(
        total_items=paging.total_items,
        total_pages=paging.total_pages,
        current_page=paging.current_page,
        items_per_page=paging.items_per_page,
        page=paging.current_page,
    )
