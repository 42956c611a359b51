"""What a node's answer to ``eth_sendRawTransaction`` means for the transaction's nonce.

Nodes word the same refusal differently (geth, reth, erigon, nethermind, anvil), so the
answer is classified by the phrases they use. Anything not recognised is a refusal: the
transaction was not taken into the pool.
"""

from __future__ import annotations

import asyncio
import enum

import aiohttp
from web3.exceptions import (
    ProviderConnectionError,
    RequestTimedOut,
    TooManyRequests,
    Web3Exception,
    Web3RPCError,
)


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
