"""HistoryService: a pool's recorded yield (/api/v1/{chain_id}/protocols/{protocol}/history)
and a wallet's numbers over time from its books (performance, APR by token, earnings)."""

from __future__ import annotations

import math
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeAlias, TypeVar

import grpc

from yieldagent.domain.addresses import parse_address
from yieldagent.domain.books.valuation import moment_of
from yieldagent.domain.catalog import Catalog
from yieldagent.domain.dates import iso, parse_iso
from yieldagent.domain.errors import InvalidInput
from yieldagent.domain.market.yields import Interval, PoolYields
from yieldagent.v1 import history_pb2, history_pb2_grpc

Context: TypeAlias = grpc.aio.ServicerContext
Choice = TypeVar("Choice", bound=StrEnum)


def _date(request: Any, name: str) -> datetime | None:
    """The ISO 8601 date of the optional field ``name``; None when unset."""
    if not request.HasField(name):
        return None
    return parse_iso(getattr(request, name), (name,))


def _choice(request: Any, name: str, kind: type[Choice], default: Choice | None) -> Choice | None:
    """The value of the optional field ``name`` among ``kind``'s; ``default`` when unset."""
    if not request.HasField(name):
        return default
    raw = getattr(request, name)
    try:
        return kind(raw)
    except ValueError:
        allowed = " or ".join(repr(str(c)) for c in kind)
        raise InvalidInput.field((name,), f"Input should be {allowed}", "enum") from None


def _seconds(moment: datetime | None) -> int | None:
    return None if moment is None else math.floor(moment.timestamp())


def _whole(amount: int, decimals: int) -> float:
    scale: int = 10**decimals
    return amount / scale


class HistoryServicer(history_pb2_grpc.HistoryServiceServicer):
    """Translates HistoryService calls to the pool yields and the wallet numbers."""

    def __init__(self, yields: PoolYields, catalog: Catalog) -> None:
        self._yields = yields
        self._catalog = catalog

    async def GetProtocolHistory(
        self, request: history_pb2.GetProtocolHistoryRequest, context: Context
    ) -> history_pb2.GetProtocolHistoryResponse:
        start, end = _date(request, "from"), _date(request, "to")
        if start and end and end < start:
            raise InvalidInput.field(("to",), "to must not be before from")
        interval = _choice(request, "interval", Interval, None)
        token = parse_address(request.token, ("token",)) if request.HasField("token") else None
        points = self._yields.history(
            request.chain_id, request.protocol, token, _seconds(start), _seconds(end), interval
        )
        info = self._catalog.token(request.chain_id, points[0].token) if points else None
        reply = history_pb2.GetProtocolHistoryResponse()
        for point in points:
            assert info is not None
            item = reply.points.add(
                time=iso(moment_of(point.at)),
                apy_base=point.apy_base,
                tvl=_whole(point.supply, info.decimals) * info.price_usd,
                utilization=point.utilization,
            )
            if point.apy_rewards is not None:
                item.apy_rewards = point.apy_rewards
        return reply
