"""HistoryService: a pool's recorded yield (/api/v1/{chain_id}/protocols/{protocol}/history)
and a wallet's numbers over time from its books (performance, APR by token, earnings)."""

from __future__ import annotations

import math
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeAlias, TypeVar

import grpc

from yieldagent.domain.addresses import parse_address
from yieldagent.domain.books.numbers import (
    Allocation,
    EarningsInterval,
    Period,
    RewardHolding,
    WalletNumbers,
)
from yieldagent.domain.books.valuation import moment_of
from yieldagent.domain.catalog import Catalog, TokenInfo
from yieldagent.domain.dates import iso, parse_iso
from yieldagent.domain.errors import InvalidInput
from yieldagent.domain.market.yields import Interval, PoolYields
from yieldagent.servicers.auth import current_partner
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


def _allocation(allocation: Allocation, token: TokenInfo) -> history_pb2.AllocatedValue:
    held = _whole(allocation.amount, token.decimals)
    message = history_pb2.AllocatedValue(
        value=held, value_in_usd=held * token.price_usd, base_apr=allocation.apr
    )
    parts = allocation.parts
    if parts.rewards is not None:
        message.total_apr = allocation.apr + parts.rewards
    for name, figure in {
        "apy_base": parts.base,
        "apy_rewards": parts.rewards,
        "apy_total": parts.total,
        "apy_net": parts.net,
    }.items():
        if figure is not None:
            setattr(message, name, figure)
    return message


def _rewards(holding: RewardHolding, token: TokenInfo) -> history_pb2.AccruedRewards:
    unlocked = _whole(holding.unlocked, holding.decimals)
    unlocked_usd = unlocked * holding.price_usd
    to_token = 1 / token.price_usd if token.price_usd else 0.0
    return history_pb2.AccruedRewards(
        locked=0.0,
        unlocked=unlocked,
        locked_value=0.0,
        locked_value_usd=0.0,
        unlocked_value=unlocked_usd * to_token,
        unlocked_value_usd=unlocked_usd,
        claimed=_whole(holding.claimed, holding.decimals),
        claimed_value=holding.claimed_usd * to_token,
        claimed_value_usd=holding.claimed_usd,
    )


class HistoryServicer(history_pb2_grpc.HistoryServiceServicer):
    """Translates HistoryService calls to the pool yields and the wallet numbers."""

    def __init__(self, yields: PoolYields, numbers: WalletNumbers, catalog: Catalog) -> None:
        self._yields = yields
        self._numbers = numbers
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

    async def GetWalletPerformance(
        self, request: history_pb2.GetWalletPerformanceRequest, context: Context
    ) -> history_pb2.GetWalletPerformanceResponse:
        address = parse_address(request.wallet, ("wallet",))
        start = _date(request, "from_date")
        view = await self._numbers.performance(
            current_partner().id, request.chain_id, address, start
        )
        token = view.token
        reply = history_pb2.GetWalletPerformanceResponse()
        for point in view.points:
            held = _whole(point.value, token.decimals)
            reply.performance.add(
                date=iso(point.at), value=held, value_in_usd=held * token.price_usd
            )
        now = reply.performance[-1]
        for protocol, allocation in view.portfolio.items():
            now.portfolio[protocol].CopyFrom(_allocation(allocation, token))
        for holding in view.rewards:
            now.accrued_rewards[holding.symbol].CopyFrom(_rewards(holding, token))
        return reply

    async def ListWalletTokenAprs(
        self, request: history_pb2.ListWalletTokenAprsRequest, context: Context
    ) -> history_pb2.ListWalletTokenAprsResponse:
        address = parse_address(request.wallet, ("wallet",))
        if not (math.isfinite(request.token_price) and request.token_price > 0):
            raise InvalidInput.field(
                ("token_price",), "Input should be greater than 0", "greater_than"
            )
        period = _choice(request, "period", Period, Period.ALL)
        assert period is not None
        found = await self._numbers.token_aprs(
            current_partner().id, request.chain_id, address, period
        )
        reply = history_pb2.ListWalletTokenAprsResponse()
        for item in found:
            held = _whole(item.amount, item.token.decimals)
            reply.items.add(value=held, value_in_usd=held * request.token_price, total_apr=item.apr)
        return reply

    async def GetWalletEarnings(
        self, request: history_pb2.GetWalletEarningsRequest, context: Context
    ) -> history_pb2.GetWalletEarningsResponse:
        address = parse_address(request.wallet, ("wallet",))
        start, end = _date(request, "from"), _date(request, "to")
        interval = _choice(request, "interval", EarningsInterval, EarningsInterval.DAY)
        assert interval is not None
        found = self._numbers.earnings(
            current_partner().id, request.chain_id, address, start, end, interval
        )
        return history_pb2.GetWalletEarningsResponse(
            earnings=[
                history_pb2.Earning(
                    date=iso(e.date), yield_amount=str(e.yield_amount), fee_amount=str(e.fee_amount)
                )
                for e in found.items
            ],
            total_yield_amount=str(found.total_yield),
            total_fee_amount=str(found.total_fee),
        )
