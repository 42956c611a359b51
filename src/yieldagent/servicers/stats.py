"""StatsService: a chain's aggregate figures (GET /api/v1/{chain_id}/stats)."""

from __future__ import annotations

import grpc

from yieldagent.domain.books.history import Reports, Share
from yieldagent.v1 import stats_pb2, stats_pb2_grpc, types_pb2


def _amounts(shares: list[Share]) -> list[types_pb2.TokenAmount]:
    return [
        types_pb2.TokenAmount(token=s.token, amount=s.amount, percentage=s.percentage)
        for s in shares
    ]


class StatsServicer(stats_pb2_grpc.StatsServiceServicer):
    """Serves the statistics of a chain."""

    def __init__(self, reports: Reports) -> None:
        self._reports = reports

    async def GetStats(
        self, request: stats_pb2.GetStatsRequest, context: grpc.aio.ServicerContext
    ) -> stats_pb2.GetStatsResponse:
        stats = self._reports.statistics(request.chain_id)
        return stats_pb2.GetStatsResponse(
            total_balance=stats.total_balance_usd,
            total_deposits=stats.total_deposits_usd,
            total_users=stats.total_users,
            total_transactions=stats.total_transactions,
            total_apr=stats.total_apr,
            liquidity_distribution=stats_pb2.LiquidityDistribution(
                initial_deposits=_amounts(stats.initial_deposits),
                current_tokens=_amounts(stats.current_tokens),
                protocols=[
                    stats_pb2.ProtocolBalances(
                        protocol=p.protocol, balances=_amounts(p.balances), percentage=p.percentage
                    )
                    for p in stats.protocols
                ],
            ),
        )
