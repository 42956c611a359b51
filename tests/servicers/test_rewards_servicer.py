"""RewardService through grpc_testing: the staking read carries a page of the wallet's
reward claims beside ``is_staked``, in the production client's names."""

from __future__ import annotations

import asyncio

import grpc
from sqlalchemy import Engine

from support.grpc_testing_harness import call, serve
from support.wallet_setup import BASE, USDC, activated, make_lifecycle, make_reports
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.ports.credentials import Partner
from yieldagent.servicers.rewards import RewardServicer
from yieldagent.v1 import rewards_pb2

SERVICE = rewards_pb2.DESCRIPTOR.services_by_name["RewardService"]
METHODS = SERVICE.methods_by_name
MONTH = 30 * 86_400


def test_the_staking_read_pages_the_claims_beside_the_setting(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: tuple[Partner, str],
) -> None:
    owner, _ = partner
    lifecycle = make_lifecycle(engine, chains)
    wallet = asyncio.run(
        activated(lifecycle, engine, market, owner.id, 2_000 * USDC, protocols=("moonwell",))
    )
    market.advance(MONTH)
    [claimed] = asyncio.run(lifecycle.claim_rewards(owner.id, BASE, wallet.address))
    server = serve(RewardServicer(lifecycle, make_reports(engine, chains)), SERVICE, owner)
    request = rewards_pb2.GetRewardStakingRequest(chain_id=BASE, wallet=wallet.address)
    reply, _, code, _ = call(server, METHODS["GetRewardStaking"], request)
    assert code is grpc.StatusCode.OK
    history, _, _, _ = call(
        server,
        METHODS["ListRewardHistory"],
        rewards_pb2.ListRewardHistoryRequest(chain_id=BASE, wallet=wallet.address),
    )
    [item] = reply.rewards
    [record] = history.rewards
    assert reply.is_staked == wallet.is_staked
    assert item.id == f"{record.transaction_hash}:{claimed.token}"
    assert (item.ticker, item.reward_amount) == (record.token_symbol, record.amount)
    assert (item.date, item.token_symbol, item.amount) == (
        record.date,
        record.token_symbol,
        record.amount,
    )
    assert (item.dollar_value, item.is_staked) == (record.dollar_value, record.is_staked)
    assert int(item.amount_units) == claimed.amount
    assert item.created_at == item.updated_at == item.end_date == record.date
    for unknown in ("user_id", "base_apr", "extra_apr", "group", "start_date"):
        assert not item.HasField(unknown), unknown
    assert reply.pagination == history.pagination
    request.page = 0
    _, _, code, _ = call(server, METHODS["GetRewardStaking"], request)
    assert code is grpc.StatusCode.INVALID_ARGUMENT
