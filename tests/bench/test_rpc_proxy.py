"""The benchmarks' JSON-RPC proxy against a real anvil: it forwards, counts what a provider
bills, waits its round trip, and refuses requests as hosted nodes do."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest
from eth_abi.abi import encode
from eth_utils.crypto import keccak

from benchmarks.rpc_proxy import Failure, RpcProxy, inner_calls, proxied
from yieldagent.devnet.anvil import Anvil, free_port
from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.multicall import MULTICALL3, deploy_multicall3

pytestmark = pytest.mark.evm

AGGREGATE3 = keccak(text="aggregate3((address,bool,bytes)[])")[:4]
TRY_AGGREGATE = keccak(text="tryAggregate(bool,(address,bytes)[])")[:4]
BLOCK_NUMBER = keccak(text="getBlockNumber()")[:4]
CHAIN_ID = keccak(text="getChainId()")[:4]


@pytest.fixture(scope="module")
def anvil() -> Iterator[Anvil]:
    """An anvil with Multicall3 at its canonical address."""
    with Anvil.start(free_port()) as node:
        deploy_multicall3(Deployer(node.url))
        yield node


@pytest.fixture
def proxy(anvil: Anvil) -> Iterator[RpcProxy]:
    """A proxy without a round trip in front of the anvil."""
    with proxied(anvil.url, round_trip=0.0, seed=3) as running:
        yield running


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


def _call(method: str, params: list[Any], id_: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


async def _post(session: aiohttp.ClientSession, url: str, body: Any) -> tuple[int, Any]:
    async with session.post(url, json=body) as answer:
        return answer.status, await answer.json(content_type=None)


def _aggregate3(*targets: tuple[str, bytes]) -> dict[str, str]:
    calls = [(to, False, data) for to, data in targets]
    data = AGGREGATE3 + encode(["(address,bool,bytes)[]"], [calls])
    return {"to": MULTICALL3, "data": "0x" + data.hex()}


async def test_a_batch_is_one_request_of_many_calls(
    proxy: RpcProxy, session: aiohttp.ClientSession
) -> None:
    status, single = await _post(session, proxy.url, _call("eth_blockNumber", []))
    assert status == 200 and int(single["result"], 16) >= 1
    batch = [
        _call("eth_chainId", [], 1),
        _call("eth_call", [{"to": MULTICALL3, "data": "0x" + CHAIN_ID.hex()}, "latest"], 2),
        _call("eth_getBlockByNumber", ["latest", False], 3),
    ]
    status, answers = await _post(session, proxy.url, batch)
    assert status == 200 and [a["id"] for a in answers] == [1, 2, 3]
    assert int(answers[1]["result"], 16) == 8453
    counts = proxy.counts()
    assert counts.requests == 2 and counts.calls == 4 and counts.eth_calls == 1
    assert counts.methods == {
        "eth_blockNumber": 1,
        "eth_call": 1,
        "eth_chainId": 1,
        "eth_getBlockByNumber": 1,
    }
    assert counts.multicalls == 0 and counts.reads == 1  # a plain call to Multicall3's getter


async def test_multicall3_aggregates_count_the_calls_inside(
    proxy: RpcProxy, session: aiohttp.ClientSession
) -> None:
    read = _aggregate3((MULTICALL3, BLOCK_NUMBER), (MULTICALL3, CHAIN_ID), (MULTICALL3, CHAIN_ID))
    status, answer = await _post(session, proxy.url, _call("eth_call", [read, "latest"]))
    assert status == 200 and "result" in answer
    before = proxy.counts()
    assert (before.requests, before.eth_calls, before.multicalls, before.inner_calls) == (
        1,
        1,
        1,
        3,
    )
    assert before.reads == 3
    proxy.reset()
    assert proxy.counts().requests == 0


def test_each_multicall3_batching_function_is_counted() -> None:
    calls = [(MULTICALL3, CHAIN_ID)] * 5
    tried = TRY_AGGREGATE + encode(["bool", "(address,bytes)[]"], [False, calls])
    assert inner_calls([{"to": MULTICALL3.lower(), "data": "0x" + tried.hex()}]) == 5
    assert inner_calls([_aggregate3(*calls[:2]), "latest"]) == 2
    other = {"to": "0x" + "11" * 20, "data": _aggregate3(*calls)["data"]}
    assert inner_calls([other]) is None  # the same selector to another contract
    assert inner_calls([{"to": MULTICALL3, "data": "0x" + CHAIN_ID.hex()}]) is None
    assert inner_calls([{"to": MULTICALL3, "data": "0x82ad56cb00"}]) is None  # truncated


async def test_each_request_waits_its_round_trip(
    anvil: Anvil, session: aiohttp.ClientSession
) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    with proxied(anvil.url, round_trip=0.05, sleep=sleep) as slow:
        await _post(session, slow.url, _call("eth_blockNumber", []))
        await _post(session, slow.url, [_call("eth_chainId", []), _call("eth_chainId", [], 2)])
    assert waits == [0.025] * 4  # half on the way there, half on the way back, per request


async def test_rate_limited_with_retry_after_then_healed(
    proxy: RpcProxy, session: aiohttp.ClientSession
) -> None:
    proxy.fail(Failure.RATE_LIMITED, 1.0, 60, retry_after=3)
    async with session.post(proxy.url, json=_call("eth_blockNumber", [])) as answer:
        assert answer.status == 429 and answer.headers["Retry-After"] == "3"
        body = await answer.json()
    assert body["error"]["code"] == 429
    proxy.heal()
    status, _ = await _post(session, proxy.url, _call("eth_blockNumber", []))
    assert status == 200
    assert proxy.counts().failures == {"429": 1}


async def test_unavailable_and_error_bodies(
    proxy: RpcProxy, session: aiohttp.ClientSession
) -> None:
    proxy.fail("5xx", 1.0, 60)
    async with session.post(proxy.url, json=_call("eth_blockNumber", [])) as answer:
        assert answer.status == 503 and "Service Unavailable" in await answer.text()
    proxy.heal()
    proxy.fail(Failure.ERROR_BODY, 1.0, 60)
    batch = [_call("eth_chainId", [], 7), _call("eth_blockNumber", [], 8)]
    status, answers = await _post(session, proxy.url, batch)
    assert status == 200 and [a["id"] for a in answers] == [7, 8]
    assert all(a["error"]["code"] == -32603 and "result" not in a for a in answers)
    status, single = await _post(session, proxy.url, _call("eth_chainId", [], 9))
    assert single["id"] == 9 and "error" in single
    assert proxy.counts().failures == {"5xx": 1, "error": 2}


async def test_dropped_and_timed_out_connections(
    proxy: RpcProxy, session: aiohttp.ClientSession
) -> None:
    proxy.fail(Failure.DROPPED, 1.0, 60)
    with pytest.raises(aiohttp.ClientConnectionError):
        await _post(session, proxy.url, _call("eth_blockNumber", []))
    proxy.heal()
    proxy.fail(Failure.TIMEOUT, 1.0, 60, hang_seconds=5)
    with pytest.raises(asyncio.TimeoutError):
        async with session.post(
            proxy.url,
            json=_call("eth_blockNumber", []),
            timeout=aiohttp.ClientTimeout(total=0.3),
        ):
            pass
    proxy.heal()
    status, _ = await _post(session, proxy.url, _call("eth_blockNumber", []))
    assert status == 200
    assert proxy.counts().failures == {"drop": 1, "timeout": 1}


async def test_a_share_of_the_requests_fails_and_the_rest_pass(
    proxy: RpcProxy, session: aiohttp.ClientSession
) -> None:
    proxy.fail(Failure.RATE_LIMITED, 0.3, 60)
    statuses = [
        (await _post(session, proxy.url, _call("eth_blockNumber", [], i)))[0] for i in range(200)
    ]
    refused = statuses.count(429)
    assert statuses.count(200) + refused == 200
    assert 30 < refused < 90  # a third, drawn from a seeded generator
    assert proxy.counts().failures == {"429": refused}


async def test_an_ended_window_refuses_nothing(
    proxy: RpcProxy, session: aiohttp.ClientSession
) -> None:
    proxy.fail(Failure.UNAVAILABLE, 1.0, 0)
    status, _ = await _post(session, proxy.url, _call("eth_blockNumber", []))
    assert status == 200 and proxy.counts().failures == {}
    with pytest.raises(ValueError, match="share"):
        proxy.fail(Failure.UNAVAILABLE, 1.5, 1)
