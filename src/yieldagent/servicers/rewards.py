"""RewardService: claiming rewards, their history, and auto-staking
(/api/v1/{chain_id}/wallets/{wallet}:claim-rewards and /api/v1/{chain_id}/rewards/{wallet})."""

from __future__ import annotations

from decimal import Decimal
from typing import TypeAlias

import grpc

from yieldagent.domain.addresses import parse_address
from yieldagent.domain.books.history import Reports
from yieldagent.domain.books.wallets import RewardRecord
from yieldagent.domain.dates import iso
from yieldagent.domain.errors import InvalidInput
from yieldagent.domain.money.lifecycle import Lifecycle
from yieldagent.servicers.auth import current_partner
from yieldagent.servicers.idempotency import current_idempotency_key
from yieldagent.servicers.paging import pagination_message, requested_page
from yieldagent.v1 import rewards_pb2, rewards_pb2_grpc

Context: TypeAlias = grpc.aio.ServicerContext


def _whole(record: RewardRecord) -> float:
    return float(Decimal(record.amount) / 10**record.decimals)


def _claim(record: RewardRecord) -> rewards_pb2.RewardClaim:
    """A reward claim as the production client reads it; what the books do not record
    (the user, the rates, the group, the accrual's start) stays null."""
    date = iso(record.date)
    amount = _whole(record)
    return rewards_pb2.RewardClaim(
        id=f"{record.tx_hash}:{record.token}",
        ticker=record.token_symbol,
        reward_amount=amount,
        transaction_hash=record.tx_hash,
        end_date=date,
        created_at=date,
        updated_at=date,
        date=date,
        token_symbol=record.token_symbol,
        amount=amount,
        dollar_value=record.dollar_value,
        is_staked=record.is_staked,
        amount_units=str(record.amount),
    )


class RewardServicer(rewards_pb2_grpc.RewardServiceServicer):
    """Translates RewardService calls to the wallet lifecycle and reports."""

    def __init__(self, lifecycle: Lifecycle, reports: Reports) -> None:
        self._lifecycle = lifecycle
        self._reports = reports

    async def ClaimRewards(
        self, request: rewards_pb2.ClaimRewardsRequest, context: Context
    ) -> rewards_pb2.ClaimRewardsResponse:
        address = parse_address(request.wallet, ("wallet",))
        claimed = await self._lifecycle.claim_rewards(
            current_partner().id, request.chain_id, address, current_idempotency_key()
        )
        return rewards_pb2.ClaimRewardsResponse(
            rewards=[
                rewards_pb2.ClaimedReward(
                    token=c.token,
                    amount=str(c.amount),
                    amount_float=c.amount_float,
                    current_price_in_underlying=c.price_in_underlying,
                )
                for c in claimed
            ]
        )

    async def ListRewardHistory(
        self, request: rewards_pb2.ListRewardHistoryRequest, context: Context
    ) -> rewards_pb2.ListRewardHistoryResponse:
        address = parse_address(request.wallet, ("wallet",))
        page = requested_page(request)
        items, paging = self._reports.rewards(current_partner().id, request.chain_id, address, page)
        return rewards_pb2.ListRewardHistoryResponse(
            rewards=[
                rewards_pb2.Reward(
                    date=iso(r.date),
                    token_symbol=r.token_symbol,
                    amount=_whole(r),
                    dollar_value=r.dollar_value,
                    transaction_hash=r.tx_hash,
                    is_staked=r.is_staked,
                )
                for r in items
            ],
            pagination=pagination_message(paging),
        )

    async def GetRewardStaking(
        self, request: rewards_pb2.GetRewardStakingRequest, context: Context
    ) -> rewards_pb2.GetRewardStakingResponse:
        address = parse_address(request.wallet, ("wallet",))
        page = requested_page(request)
        partner_id = current_partner().id
        staked = self._reports.reward_staking(partner_id, request.chain_id, address)
        items, paging = self._reports.rewards(partner_id, request.chain_id, address, page)
        return rewards_pb2.GetRewardStakingResponse(
            is_staked=staked,
            rewards=[_claim(r) for r in items],
            pagination=pagination_message(paging),
        )

    async def SetRewardStaking(
        self, request: rewards_pb2.SetRewardStakingRequest, context: Context
    ) -> rewards_pb2.SetRewardStakingResponse:
        address = parse_address(request.wallet, ("wallet",))
        if not request.HasField("is_staked"):
            raise InvalidInput.field(("is_staked",), "Field required", "missing")
        await self._lifecycle.set_reward_staking(
            current_partner().id, request.chain_id, address, request.is_staked
        )
        return rewards_pb2.SetRewardStakingResponse()
