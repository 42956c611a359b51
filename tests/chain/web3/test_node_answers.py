"""A failed node call is told without the node's URL or words."""

from __future__ import annotations

import aiohttp
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from yieldagent.chain.web3.node_answers import node_unavailable, redacted, scrubbed
from yieldagent.domain.errors import NODE_DID_NOT_ANSWER

NODE = URL("https://base.example/v2/secret-api-key?key=other-secret")


def _http_error(status: int) -> aiohttp.ClientResponseError:
    headers = CIMultiDictProxy(CIMultiDict[str]())
    info = aiohttp.RequestInfo(NODE, "POST", headers, NODE)
    return aiohttp.ClientResponseError(info, (), status=status, message="Too Many Requests")


def test_an_http_error_is_told_by_its_class_and_status_only() -> None:
    error = _http_error(429)
    assert "secret-api-key" in str(error)  # what aiohttp's own text would have leaked
    assert redacted(error) == "ClientResponseError HTTP 429"


def test_a_failed_call_says_one_sentence_and_keeps_its_cause_for_the_logs() -> None:
    failure = node_unavailable("eth_call", _http_error(500))
    assert str(failure) == failure.detail == NODE_DID_NOT_ANSWER
    assert failure.cause == "eth_call: ClientResponseError HTTP 500"


def test_a_nodes_words_lose_every_url() -> None:
    said = scrubbed(f"rate limited at {NODE}, see https://docs.example/limits")
    assert "secret" not in said
    assert said == "rate limited at <url> see <url>"
