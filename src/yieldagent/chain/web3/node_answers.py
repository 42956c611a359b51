"""What a node's answers mean: for a transaction's nonce, and for what may be told.

Nodes word the same refusal differently (geth, reth, erigon, nethermind, anvil), so an
answer to ``eth_sendRawTransaction`` is classified by the phrases they use. Anything not
recognised is a refusal: the transaction was not taken into the pool.

A failed call becomes ``node_unavailable``: the text of the node's errors and of its HTTP
client's (aiohttp's ``ClientResponseError`` prints the request's URL, and a provider's URL
holds its API key) stays here. The error's class, HTTP status and JSON-RPC code go to one
log line; callers get ``NodeUnavailable``'s fixed sentence.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import re

import aiohttp
from web3.exceptions import (
    ProviderConnectionError,
    RequestTimedOut,
    TooManyRequests,
    Web3Exception,
    Web3RPCError,
)

from yieldagent.domain.errors import NodeUnavailable

log = logging.getLogger("yieldagent.chain")


class Broadcast(enum.Enum):
    """The outcome of handing a signed transaction to the node."""

    SENT = "sent"
    """In the node's pool (or mined): the nonce is in use."""
    NONCE_USED = "nonce_used"
    """The chain already has a transaction with this nonce."""
    UNDERPRICED = "underpriced"
    """Another transaction with this nonce is in the pool, and ours did not outbid it."""
    REFUSED = "refused"
    """Refused outright (funds, fees, gas limit…): the transaction went nowhere."""
    UNKNOWN = "unknown"
    """The node could not be reached or did not answer: it may have the transaction."""


_KNOWN = (
    "already known",
    "already imported",
    "known transaction",
    "alreadyknown",
    "already exists",
)
_NONCE_USED = ("nonce too low", "oldnonce", "nonce has already been used", "invalid nonce")
_UNDERPRICED = (
    "replacement transaction underpriced",
    "replacement underpriced",
    "replacement fee too low",
    "feetoolowtocompete",
    "could not replace existing tx",
)

TRANSPORT_ERRORS: tuple[type[Exception], ...] = (
    aiohttp.ClientError,
    asyncio.TimeoutError,
    OSError,
    ProviderConnectionError,
    RequestTimedOut,
    TooManyRequests,
)
"""Failures to reach the node: nothing can be known of what it did."""

CHAIN_ERRORS: tuple[type[Exception], ...] = (Web3Exception, *TRANSPORT_ERRORS)
"""Every failure of a call to the node: an error answer, or no answer."""


def node_message(error: Web3RPCError) -> str:
    """The node's own words in an error answer (web3 keeps the whole error object)."""
    answer = error.rpc_response.get("error") if error.rpc_response else None
    if isinstance(answer, dict) and answer.get("message"):
        return str(answer["message"])
    return str(error.message)


def classify_refusal(error: Web3RPCError) -> Broadcast:
    """What the node's error answer to a broadcast means."""
    message = node_message(error).lower()
    if any(phrase in message for phrase in _KNOWN):
        return Broadcast.SENT
    if any(phrase in message for phrase in _NONCE_USED):
        return Broadcast.NONCE_USED
    if any(phrase in message for phrase in _UNDERPRICED):
        return Broadcast.UNDERPRICED
    return Broadcast.REFUSED


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S*")
_MAX_SAID = 200


def scrubbed(text: str) -> str:
    """A node's words for the logs: every URL in them replaced, cut to 200 characters."""
    return _URL.sub("<url>", text)[:_MAX_SAID]


def redacted(error: BaseException) -> str:
    """``error`` told without its text: its class, its HTTP status (an HTTP error answer)
    and its JSON-RPC code (an error answer of the node)."""
    parts = [type(error).__name__]
    status = getattr(error, "status", None)
    if isinstance(status, int):
        parts.append(f"HTTP {status}")
    if isinstance(error, Web3RPCError) and isinstance(error.rpc_response, dict):
        answer = error.rpc_response.get("error")
        if isinstance(answer, dict) and isinstance(answer.get("code"), int):
            parts.append(f"code {answer['code']}")
    return " ".join(parts)


def node_unavailable(call: str, error: BaseException | str) -> NodeUnavailable:
    """The error a failed ``call`` becomes (``error``: what failed, or the node's words),
    logged once here without the node's URL."""
    cause = scrubbed(error) if isinstance(error, str) else redacted(error)
    log.warning("node call failed", extra={"call": call, "cause": cause})
    return NodeUnavailable(f"{call}: {cause}")
