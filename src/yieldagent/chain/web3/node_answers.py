"""What a node's answers mean: for a transaction's nonce, and for what may be told.

Nodes word the same refusal differently (geth, reth, erigon, nethermind, anvil), so an
answer to ``eth_sendRawTransaction`` is classified by the phrases they use. Anything not
recognised is a refusal: the transaction was not taken into the pool.

Neither the node's words nor its URL go further than this module: a provider's URL holds
its API key, aiohttp's ``ClientResponseError`` prints it, and nodes quote URLs, addresses
and their own state in their messages. What is told of a node's answer (``Told``) is a
category from a fixed vocabulary (``refusal_kind``, ``read_kind``), the error's class, its
HTTP status and its JSON-RPC code. A failed call becomes ``node_unavailable``: that much
goes to one log line; callers get ``NodeUnavailable``'s fixed sentence. A revert reason
decoded from a revert's return data (``reverts``) is the contract's words, not the node's,
and is told as it is.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from typing import NewType

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


Told = NewType("Told", str)
"""What may be told of a node's answer, in a log line or an error: a category of a fixed
vocabulary, an error's class, an HTTP status, a JSON-RPC code. Never the node's words."""

OTHER = "other"
"""The category of words no phrase of the vocabulary matches."""

# Broadcast refusals, first match wins: "insufficient funds for gas * price + value" is
# about funds, "max fee per gas less than block base fee" about the fee cap.
_REFUSAL_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("already known", _KNOWN),
    ("nonce", (*_NONCE_USED, "nonce too high", "nonce")),
    ("underpriced", (*_UNDERPRICED, "underpriced", "fee too low")),
    ("insufficient funds", ("insufficient funds", "insufficient balance", "insufficientfunds")),
    (
        "fee cap below base fee",
        ("less than block base fee", "base fee", "basefee", "feecaptoolow", "fee cap"),
    ),
    ("gas limit", ("gas limit", "gaslimit", "intrinsic gas", "gas too low", "gas too high")),
)
_READ_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("reverted", ("revert",)),
    ("rate limited", ("rate limit", "too many requests", "limit exceeded", "throttl")),
)


def _kind(said: str, kinds: tuple[tuple[str, tuple[str, ...]], ...]) -> str:
    words = said.lower()
    for kind, phrases in kinds:
        if any(phrase in words for phrase in phrases):
            return kind
    return OTHER


def refusal_kind(said: str) -> str:
    """What a node's words refusing a broadcast are about: already known, nonce,
    underpriced, insufficient funds, fee cap below base fee, gas limit, or other."""
    return _kind(said, _REFUSAL_KINDS)


def read_kind(said: str) -> str:
    """What a node's words failing a read are about: reverted, rate limited, or other."""
    return _kind(said, _READ_KINDS)


def _answer_code(error: Web3RPCError) -> int | None:
    answer = error.rpc_response.get("error") if isinstance(error.rpc_response, dict) else None
    code = answer.get("code") if isinstance(answer, dict) else None
    return code if isinstance(code, int) else None


def told_answer(kind: str, code: int | None) -> Told:
    """An error answer told by its category and its JSON-RPC code."""
    return Told(kind if code is None else f"{kind} (code {code})")


def refusal(error: Web3RPCError) -> Told:
    """A broadcast's error answer told by its category and its JSON-RPC code."""
    return told_answer(refusal_kind(node_message(error)), _answer_code(error))


def redacted(error: BaseException) -> Told:
    """``error`` told without its text: its class, its HTTP status (an HTTP error answer),
    and the JSON-RPC code and category (``read_kind``) of an error answer of the node."""
    parts = [type(error).__name__]
    status = getattr(error, "status", None)
    if isinstance(status, int):
        parts.append(f"HTTP {status}")
    if isinstance(error, Web3RPCError):
        code = _answer_code(error)
        if code is not None:
            parts.append(f"code {code}")
        parts.append(f"({read_kind(node_message(error))})")
    return Told(" ".join(parts))


def node_unavailable(call: str, error: BaseException | Told) -> NodeUnavailable:
    """The error a failed ``call`` becomes (``error``: what failed, or what is told of the
    node's answer), logged once here without the node's words or URL."""
    cause = error if isinstance(error, str) else redacted(error)
    log.warning("node call failed", extra={"call": call, "cause": cause})
    return NodeUnavailable(f"{call}: {cause}")
