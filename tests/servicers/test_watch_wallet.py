"""WatchWallet on a real grpc.aio server: replay after a cursor, live events (a pool's
changed guard state among them), and the interceptor's authentication and error mapping
around a server stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from sqlalchemy import Engine

from support.agent_setup import make_agent
from support.wallet_setup import (
    BASE,
    BASE_USDC,
    OTHER_EOA,
    USDC,
    activated,
    make_lifecycle,
    top_up_deposit,
)
from yieldagent.chain.signers.local import LocalKeySigner
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.chain.simulated.risk import Scenarios
from yieldagent.composition.compose import build_server
from yieldagent.composition.grpc_server import mark_serving
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.money.lifecycle import Lifecycle
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.domain.ports.credentials import Partner
from yieldagent.domain.risk.settings import RiskSettings
from yieldagent.domain.risk.survey import RiskSurvey
from yieldagent.observability.metrics import REGISTRY
from yieldagent.storage.events import EventStore
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.risk import RiskStore
from yieldagent.v1 import wallets_pb2, wallets_pb2_grpc

OPERATOR = LocalKeySigner("0x" + "0a" * 32)
PartnerKey = tuple[Partner, str]


@pytest.fixture
async def served(
    engine: Engine, chains: dict[int, MarketChain]
) -> AsyncIterator[tuple[Lifecycle, wallets_pb2_grpc.WalletServiceStub, EventStore]]:
    lifecycle = make_lifecycle(engine, chains)
    agent = make_agent(engine, lifecycle)
    events = EventStore(engine, poll_seconds=30)  # live events must come from the notice
    api = build_server(engine, OPERATOR, chains, lifecycle, agent, "127.0.0.1:0", events=events)
    await api.server.start()
    await mark_serving(api, True)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{api.port}")
    yield lifecycle, wallets_pb2_grpc.WalletServiceStub(channel), events
    events.close()
    await channel.close()
    await api.server.stop(0)


def credentials(partner: PartnerKey) -> tuple[tuple[str, str], ...]:
    return (("x-partner-name", partner[0].name), ("x-partner-api-key", partner[1]))


async def take(call: Any, count: int) -> list[wallets_pb2.WalletEvent]:
    received: list[wallets_pb2.WalletEvent] = []
    async for message in call:
        received.append(message)
        if len(received) == count:
            break
    call.cancel()
    return received


async def test_a_stream_replays_after_its_cursor_then_sends_new_events(
    served: Any, engine: Engine, market: SimulatedMarket, partner: PartnerKey
) -> None:
    lifecycle, stub, _ = served
    owner, _ = partner
    wallet = await activated(lifecycle, engine, market, owner.id, 200 * USDC)
    await lifecycle.update_protocols(owner.id, BASE, wallet.address, ("aave",))
    await make_agent(engine, lifecycle).run(BASE, wallet.address, owner.id)
    request = wallets_pb2.WatchWalletRequest(chain_id=BASE, wallet=wallet.address)

    everything = await take(stub.WatchWallet(request, metadata=credentials(partner)), 3)
    assert [e.type for e in everything] == ["deposit_credited", "activated", "run_completed"]
    assert [e.WhichOneof("data") for e in everything] == [e.type for e in everything]
    first, _, run = everything
    assert first.deposit_credited.amount == str(200 * USDC)
    assert first.wallet == wallet.address and first.chain_id == BASE
    assert run.run_completed.outcome == "completed"
    assert run.run_completed.moves[-1].to_protocol == "aave"
    assert run.run_completed.moves[-1].amount.isdigit()

    resumed = stub.WatchWallet(
        wallets_pb2.WatchWalletRequest(chain_id=BASE, wallet=wallet.address, cursor=first.id),
        metadata=credentials(partner),
    )
    receiving = asyncio.create_task(take(resumed, 3))
    await asyncio.sleep(0.2)  # the replay is sent; the stream now waits for news
    tx_hash = top_up_deposit(market, wallet.address, 5 * USDC)
    await lifecycle.top_up(owner.id, BASE, wallet.address, tx_hash)
    live = await asyncio.wait_for(receiving, timeout=10)

    assert [e.id for e in live[:2]] == [e.id for e in everything[1:]]
    assert live[2].type == "deposit_credited"
    assert live[2].deposit_credited.tx_hash == tx_hash
    assert live[2].id > everything[-1].id


async def test_another_partners_wallet_is_refused(
    served: Any, engine: Engine, market: SimulatedMarket, partner: PartnerKey
) -> None:
    lifecycle, stub, _ = served
    owner, _ = partner
    wallet = await activated(lifecycle, engine, market, owner.id, 10 * USDC)
    other = PartnerStore(engine).create("globex", PERMISSIONS)
    request = wallets_pb2.WatchWalletRequest(chain_id=BASE, wallet=wallet.address)

    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await take(stub.WatchWallet(request, metadata=credentials(other)), 1)
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED

    with pytest.raises(grpc.aio.AioRpcError) as anonymous:
        await take(stub.WatchWallet(request), 1)
    assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED


@pytest.mark.parametrize(
    ("wallet", "cursor", "code"),
    [
        ("0x12", 0, grpc.StatusCode.INVALID_ARGUMENT),
        (OTHER_EOA, 0, grpc.StatusCode.NOT_FOUND),
        (OTHER_EOA, -1, grpc.StatusCode.INVALID_ARGUMENT),
    ],
    ids=["malformed-address", "unknown-wallet", "negative-cursor"],
)
async def test_bad_requests_get_their_canonical_code(
    served: Any, partner: PartnerKey, wallet: str, cursor: int, code: grpc.StatusCode
) -> None:
    _, stub, _ = served
    request = wallets_pb2.WatchWalletRequest(chain_id=BASE, wallet=wallet, cursor=cursor)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await take(stub.WatchWallet(request, metadata=credentials(partner)), 1)
    assert refused.value.code() == code


async def test_closing_the_event_store_ends_open_streams_cleanly(
    served: Any, engine: Engine, market: SimulatedMarket, partner: PartnerKey
) -> None:
    lifecycle, stub, events = served
    owner, _ = partner
    wallet = await activated(lifecycle, engine, market, owner.id, 10 * USDC)
    call = stub.WatchWallet(
        wallets_pb2.WatchWalletRequest(chain_id=BASE, wallet=wallet.address),
        metadata=credentials(partner),
    )
    received = [await call.read(), await call.read()]
    events.close()

    assert await asyncio.wait_for(call.read(), timeout=10) is grpc.aio.EOF
    assert await call.code() == grpc.StatusCode.OK
    assert [e.type for e in received] == ["deposit_credited", "activated"]


def counted(code: str) -> float:
    labels = {"method": "/yieldagent.v1.WalletService/WatchWallet", "code": code}
    return REGISTRY.get_sample_value("yieldagent_grpc_requests_total", labels) or 0.0


async def test_a_stream_is_counted_by_its_final_code_and_gets_a_request_id(
    served: Any, engine: Engine, market: SimulatedMarket, partner: PartnerKey
) -> None:
    lifecycle, stub, events = served
    owner, _ = partner
    wallet = await activated(lifecycle, engine, market, owner.id, 10 * USDC)
    request = wallets_pb2.WatchWalletRequest(chain_id=BASE, wallet=wallet.address)
    before = {code: counted(code) for code in ("OK", "PERMISSION_DENIED")}
    other = PartnerStore(engine).create("initech", PERMISSIONS)

    refused = stub.WatchWallet(request, metadata=credentials(other))
    with pytest.raises(grpc.aio.AioRpcError):
        await refused.read()
    call = stub.WatchWallet(request, metadata=credentials(partner))
    await call.read()
    events.close()
    while await call.read() is not grpc.aio.EOF:
        pass
    made = dict(await call.trailing_metadata() or ())["x-request-id"]
    named = stub.WatchWallet(request, metadata=(*credentials(partner), ("x-request-id", "watch-1")))
    while await named.read() is not grpc.aio.EOF:  # the store is closed: it ends at once
        pass

    assert len(made) == 36 and made.count("-") == 4
    assert "x-request-id" not in dict(await named.trailing_metadata() or ())
    assert dict(await refused.trailing_metadata() or ()).get("x-request-id")
    after = {code: counted(code) for code in before}
    assert {code: after[code] - before[code] for code in before} == {
        "OK": 2,
        "PERMISSION_DENIED": 1,
    }


@pytest.fixture
async def guarded(
    engine: Engine, chains: dict[int, MarketChain]
) -> AsyncIterator[tuple[Lifecycle, wallets_pb2_grpc.WalletServiceStub]]:
    """A server whose streams' credentials are checked every 50 ms, two per partner."""
    lifecycle = make_lifecycle(engine, chains)
    agent = make_agent(engine, lifecycle)
    events = EventStore(engine, poll_seconds=0.05)
    api = build_server(
        engine,
        OPERATOR,
        chains,
        lifecycle,
        agent,
        "127.0.0.1:0",
        events=events,
        streams_per_partner=2,
    )
    await api.server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{api.port}")
    yield lifecycle, wallets_pb2_grpc.WalletServiceStub(channel)
    events.close()
    await channel.close()
    await api.server.stop(0)


async def _open(stub: Any, wallet: str, partner: PartnerKey) -> Any:
    call = stub.WatchWallet(
        wallets_pb2.WatchWalletRequest(chain_id=BASE, wallet=wallet), metadata=credentials(partner)
    )
    await call.read()  # the stream is open: its first event arrived
    return call


async def _status(call: Any) -> grpc.StatusCode:
    """How the stream ended, reading whatever it still sends."""

    async def drain() -> None:
        while await asyncio.wait_for(call.read(), timeout=20) is not grpc.aio.EOF:
            pass

    with pytest.raises(grpc.aio.AioRpcError) as ended:
        await drain()
    return ended.value.code()


async def test_a_partner_has_at_most_its_cap_of_open_streams(
    guarded: Any, engine: Engine, market: SimulatedMarket, partner: PartnerKey
) -> None:
    lifecycle, stub = guarded
    owner, _ = partner
    wallet = await activated(lifecycle, engine, market, owner.id, 10 * USDC)
    first = await _open(stub, wallet.address, partner)
    second = await _open(stub, wallet.address, partner)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _open(stub, wallet.address, partner)
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "at most 2 per partner" in (refused.value.details() or "")
    for call in (first, second):
        call.cancel()


async def test_a_stream_ends_when_its_partner_is_disabled(
    guarded: Any, engine: Engine, market: SimulatedMarket, partner: PartnerKey
) -> None:
    lifecycle, stub = guarded
    owner, _ = partner
    wallet = await activated(lifecycle, engine, market, owner.id, 10 * USDC)
    call = await _open(stub, wallet.address, partner)
    PartnerStore(engine).disable(owner.name)
    assert await _status(call) == grpc.StatusCode.PERMISSION_DENIED


async def test_a_stream_ends_when_its_key_stops_working(
    guarded: Any, engine: Engine, market: SimulatedMarket, partner: PartnerKey
) -> None:
    lifecycle, stub = guarded
    owner, _ = partner
    wallet = await activated(lifecycle, engine, market, owner.id, 10 * USDC)
    call = await _open(stub, wallet.address, partner)
    _, new_key = PartnerStore(engine).rotate(owner.name)  # no grace: the old key ends now
    assert await _status(call) == grpc.StatusCode.UNAUTHENTICATED
    renewed = await _open(stub, wallet.address, (owner, new_key))
    renewed.cancel()


async def test_a_pools_changed_guard_state_reaches_the_wallets_stream(
    served: Any, engine: Engine, market: SimulatedMarket, partner: PartnerKey
) -> None:
    lifecycle, stub, _ = served
    owner, _ = partner
    wallet = await activated(
        lifecycle, engine, market, owner.id, 200 * USDC, protocols=("compound",)
    )
    call = stub.WatchWallet(
        wallets_pb2.WatchWalletRequest(chain_id=BASE, wallet=wallet.address),
        metadata=credentials(partner),
    )
    receiving = asyncio.create_task(take(call, 3))
    Scenarios(market).pause(BASE, "compound", "supply")
    survey = RiskSurvey(RiskStore(engine), RiskSettings())
    chain = lifecycle.chain(BASE)
    quotes = {q.protocol: q for q in await chain.quotes(BASE_USDC, ["compound"])}
    for _ in range(2):  # judged twice, changed once
        await survey.judge(BASE, chain, BASE_USDC, quotes, (await chain.head()).timestamp)
    received = await asyncio.wait_for(receiving, timeout=10)

    assert [e.type for e in received] == [
        "deposit_credited",
        "activated",
        "protocol.risk_changed",
    ]
    changed = received[-1]
    assert changed.WhichOneof("data") == "protocol_risk_changed"
    assert changed.protocol_risk_changed.protocol == "compound"
    assert changed.protocol_risk_changed.token == BASE_USDC
    assert changed.protocol_risk_changed.previous_state == "ok"
    assert changed.protocol_risk_changed.state == "exit"
    assert list(changed.protocol_risk_changed.reasons) == ["supply is paused"]
    kinds = [e.kind for e in EventStore(engine).after(wallet.id, 0, 100)]
    assert kinds.count("protocol.risk_changed") == 1
