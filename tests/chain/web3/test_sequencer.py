"""The L2 sequencer uptime feed as the web3 adapter reads it: Chainlink's answer 0 is up,
1 down, ``startedAt`` since when; a feed that cannot be read vouches for nothing; a chain
without a feed (or a local devnet) reads none. Base's feed is in the composition's table."""

from __future__ import annotations

from typing import Any

from eth_utils.address import to_checksum_address

from yieldagent.chain.web3.abis import FEED_LATEST_ROUND_DATA, Fn
from yieldagent.chain.web3.adapter import Web3Chain
from yieldagent.chain.web3.config import Web3ChainConfig
from yieldagent.composition.chains import SEQUENCER_UPTIME_FEEDS
from yieldagent.domain.errors import NodeUnavailable
from yieldagent.domain.market.readings import SequencerStatus
from yieldagent.domain.ports.chain import Block

FEED = "0xBCF85224fc0756B9Fa45aA7892530B47e10b6433"
BLOCK = Block(number=1_000, timestamp=1_767_225_600)


class Answers:
    """A reader that answers the uptime feed's ``latestRoundData`` as set."""

    def __init__(self, answer: tuple[int, ...] | Exception) -> None:
        self.answer = answer
        self.calls: list[tuple[str, str, object]] = []

    async def call(self, to: str, fn: Fn, *args: Any, block: object = "latest") -> Any:
        self.calls.append((to, fn.signature, block))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def _chain(
    answer: tuple[int, ...] | Exception, feed: str | None = FEED
) -> tuple[Web3Chain, Answers]:
    config = Web3ChainConfig(
        chain_id=8453,
        token="0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        token_symbol="USDC",
        token_decimals=6,
        protocols=(),
        sequencer_feed=feed,
    )
    chain = Web3Chain(None, config, None)  # type: ignore[arg-type]  # reads only, below
    reader = Answers(answer)
    chain.reader = reader  # type: ignore[assignment]
    return chain, reader


async def test_answer_zero_is_up_since_started_at_and_one_is_down() -> None:
    started = BLOCK.timestamp - 600
    chain, reader = _chain((7, 0, started, BLOCK.timestamp, 7))
    assert await chain._sequencer(BLOCK) == SequencerStatus(up=True, since=started)
    assert reader.calls == [(FEED, FEED_LATEST_ROUND_DATA.signature, BLOCK.number)]
    chain, _ = _chain((8, 1, started, BLOCK.timestamp, 8))
    assert await chain._sequencer(BLOCK) == SequencerStatus(up=False, since=started)


async def test_an_unreadable_feed_vouches_for_nothing_and_no_feed_reads_nothing() -> None:
    chain, _ = _chain(NodeUnavailable("eth_call: ClientResponseError HTTP 429"))
    status = await chain._sequencer(BLOCK)
    assert status is not None and not status.readable
    assert status.distrust(BLOCK.timestamp, 3_600) == (
        "the chain's sequencer uptime feed cannot be read"
    )
    chain, reader = _chain((1, 0, 0, 0, 1), feed=None)
    assert await chain._sequencer(BLOCK) is None
    assert reader.calls == []


def test_bases_uptime_feed_is_listed_checksummed() -> None:
    assert SEQUENCER_UPTIME_FEEDS[8453] == to_checksum_address(FEED.lower())
