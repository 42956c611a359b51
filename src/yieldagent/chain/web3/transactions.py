"""Sending the operator's transactions: fees, nonce, signature, broadcast, receipt.

``TransactionSender.send`` makes one transaction happen, or says why it did not:

1. Gas: the node's estimate plus a margin (20%), unless the caller gives it. An estimate
   that reverts raises ``ChainRejected`` with the decoded reason; nothing is signed.
2. Fees: EIP-1559, from the fee history (``fees``).
3. Nonce: leased from the nonce source (``storage.nonces``), so that replicas sending
   from the one operator key never collide.
4. Signature: by ``signer``, the signer port (``domain.ports.signer``); the key stays
   with it and never reaches this module.
5. Broadcast, then the receipt is awaited. A transaction not mined within the receipt
   timeout is signed again with the SAME nonce and fees raised by 12.5%, and sent again,
   up to ``max_replacements`` times. Every hash sent is watched: whichever is mined wins.
6. A mined transaction that reverted (status 0) is replayed with ``eth_call`` at its
   block to read its revert reason, and raises ``ChainRejected``.

The nonce is settled on every path: consumed once a transaction with it is mined (or the
chain shows it used), given back when nothing was broadcast (the node refused it, or
signing failed), and otherwise left to its lease, which lapses after the whole wait. A
nonce another transaction took (the node says "nonce too low", or a stranger was mined
with it while we waited) is consumed, and the transaction is sent again with a new nonce.

``TransactionSender.send_many`` sends many transactions pipelined: at most
``max_in_flight`` at once, each window's nonces reserved together (consecutive after any
gaps), every transaction signed and broadcast before any receipt is awaited, and the
window's receipts awaited together (one read of the mined nonce count per look). Its
transactions are replaced, settled and sent again by the same rules as ``send``'s; a
nonce whose transaction went nowhere is filled with a transfer of nothing to the
operator, so that the transactions after it can be mined. A node may also drop a
transaction it accepted, leaving a hole that every later nonce waits behind: when the
chain's next nonce is a window's and stays unmined for ``resend_after_seconds``, the node
is asked for that transaction, and if it no longer holds it, the window's unmined
transactions go out again, the same bytes (a minute sooner than their replacement).

A node that fails for a moment (``retries.RetryPolicy``: a 429, a 5xx, a timeout, a
dropped connection, a JSON-RPC error that is no verdict) is asked again. Every read is
(the estimate, the fees, the nonce counts, receipts, blocks, the replay of a revert), and
so is a broadcast, always with the same signed bytes: the node keeps one transaction per
hash. Once an attempt may have reached the node, its later "nonce too low" may mean that
very transaction was mined, so it never counts as the nonce taken by another: the hash is
watched until the chain shows ours mined or, on a second look, a stranger's. A call for
one intent is signed at a new nonce only then, so a retry never moves money twice.

What still fails raises ``ChainUnavailable`` (the node's failures as ``NodeUnavailable``).
A transaction still unmined after its last replacement raises it too, though one of its
versions may be mined later: the caller settles such a step from the chain's history
(``Books.recover_steps``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from eth_typing import ChecksumAddress, HexStr
from eth_utils.address import to_checksum_address
from hexbytes import HexBytes
from web3 import AsyncWeb3
from web3.exceptions import ContractLogicError, TransactionNotFound, Web3RPCError
from web3.types import TxParams, TxReceipt

from yieldagent.chain.web3.fees import Fees, FeeSettings, bumped, suggest_fees
from yieldagent.chain.web3.node_answers import (
    CHAIN_ERRORS,
    TRANSPORT_ERRORS,
    Broadcast,
    Told,
    classify_refusal,
    node_message,
    node_unavailable,
    redacted,
    refusal,
)
from yieldagent.chain.web3.retries import (
    RetryPolicy,
    busy_answer,
    only_the_policy_retries,
    rpc_code,
)
from yieldagent.chain.web3.reverts import revert_data, revert_reason
from yieldagent.domain.errors import ChainRejected, ChainUnavailable, YieldAgentError
from yieldagent.domain.ports.nonces import NonceSource
from yieldagent.domain.ports.signer import Signer

log = logging.getLogger(__name__)

T = TypeVar("T")

FIRST_POLL_SECONDS = 0.02
"""How soon a sent transaction's receipt is first looked for; each later look waits twice
as long, up to ``SendSettings.poll_seconds``."""


@dataclass(frozen=True, slots=True)
class Log:
    """One log of a mined transaction."""

    address: str
    topics: tuple[str, ...]
    data: str
    log_index: int


@dataclass(frozen=True, slots=True)
class Receipt:
    """A mined, successful transaction."""

    tx_hash: str
    block_number: int
    timestamp: int
    logs: tuple[Log, ...]
    gas_used: int


@dataclass(frozen=True, slots=True)
class SendSettings:
    """How transactions are sent and awaited."""

    confirmations: int = 1
    """Blocks that must hold the transaction (1: mined) before it counts."""
    receipt_timeout_seconds: float = 60.0
    """How long a broadcast waits to be mined before it is replaced."""
    max_replacements: int = 3
    poll_seconds: float = 1.0
    gas_margin_percent: int = 20
    max_nonce_attempts: int = 3
    """How many nonces one send may use up when other transactions take them."""
    max_in_flight: int = 256
    """Most transactions of this sender broadcast and not yet settled at once; more wait."""
    resend_after_seconds: float = 6.0
    """How long a batch's lowest unmined nonce may go unmined before the node is asked
    whether it still holds that transaction; if it does not, the batch's unmined ones go
    out again, the same bytes."""
    fees: FeeSettings = field(default_factory=FeeSettings)

    def __post_init__(self) -> None:
        if self.confirmations < 1 or self.max_replacements < 0 or self.max_nonce_attempts < 1:
            raise ValueError("confirmations >= 1, max_replacements >= 0, max_nonce_attempts >= 1")
        if self.max_in_flight < 1:
            raise ValueError("at least one transaction may be in flight")
        if self.receipt_timeout_seconds <= 0 or self.poll_seconds <= 0:
            raise ValueError("the receipt timeout and the poll interval are positive")
        if self.resend_after_seconds <= 0:
            raise ValueError("the wait before a lost transaction is sent again is positive")

    @property
    def wait_seconds(self) -> float:
        """The longest a send waits: a timeout per version sent, and one per confirmation."""
        return self.receipt_timeout_seconds * (self.max_replacements + 1 + self.confirmations)

    @property
    def hold_seconds(self) -> float:
        """How long a nonce is leased: the whole wait, and a margin."""
        return self.wait_seconds + 120.0


@dataclass(slots=True)
class _Sent:
    """One nonce's transaction and every signed version of it that went out."""

    tx: dict[str, Any]
    fees: Fees
    hashes: list[str] = field(default_factory=list)
    raw: bytes = b""
    """The bytes of the version sent last: what goes out again if the node loses it."""


class _NonceTaken(Exception):
    """Another transaction took the nonce: send again with a new one."""


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One transaction of a pipelined batch (``TransactionSender.send_many``): a call of
    ``data`` to ``to`` with the gas limit ``gas``."""

    to: str
    data: bytes | str
    gas: int
    value: int = 0


@dataclass(slots=True)
class _Watched:
    """A broadcast transaction of a batch, awaited with the others: which outgoing it is
    (None: a filler of a nonce whose own transaction went nowhere), its versions sent,
    when it is next replaced, and what the chain showed of it so far."""

    index: int | None
    sent: _Sent
    deadline: float
    replacements: int = 0
    stranger_seen: bool = False
    mined: TxReceipt | None = None


_FILLER_GAS = 21_000
"""A transfer of nothing to the operator itself: what fills a nonce whose transaction went
nowhere, so that those after it in the batch can be mined."""


class _InFlight:
    """The sender's cap on transactions in flight: a batch takes room for its window at
    once, or waits; single sends take one."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.used = 0
        self._changed = asyncio.Condition()

    @contextlib.asynccontextmanager
    async def room(self, count: int) -> Any:
        count = min(count, self.cap)
        async with self._changed:
            await self._changed.wait_for(lambda: self.used + count <= self.cap)
            self.used += count
        try:
            yield
        finally:
            async with self._changed:
                self.used -= count
                self._changed.notify_all()


class TransactionSender:
    """Sends the operator's transactions on one chain (see the module's docstring)."""

    def __init__(
        self,
        w3: AsyncWeb3[Any],
        chain_id: int,
        signer: Signer,
        nonces: NonceSource,
        settings: SendSettings | None = None,
        *,
        address: str | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        retry: RetryPolicy | None = None,
    ) -> None:
        self._w3 = w3
        only_the_policy_retries(w3)
        self.chain_id = chain_id
        self._signer = signer
        self._nonces = nonces
        self.settings = settings or SendSettings()
        self._address = to_checksum_address(address) if address else None
        self._sleep = sleep
        self._monotonic = monotonic
        self._retry = retry or RetryPolicy(sleep=sleep)
        self._in_flight = _InFlight(self.settings.max_in_flight)

    @property
    def address(self) -> ChecksumAddress:
        """The operator's address, the sender of every transaction."""
        if self._address is None:
            self._address = to_checksum_address(self._signer.address)
        return self._address

    async def send(
        self, to: str, data: bytes | str, *, gas: int | None = None, value: int = 0
    ) -> Receipt:
        """Sends a call of ``data`` to ``to`` and returns its receipt once it is mined and
        confirmed. Raises ChainRejected if it reverts (when estimated or once mined), and
        ChainUnavailable if the node fails or the transaction is not mined in time."""
        call: dict[str, Any] = {
            "from": self.address,
            "to": to_checksum_address(to),
            "data": HexBytes(data).to_0x_hex(),
            "value": value,
        }
        if gas is None:
            gas = await self._estimate(call)
        async with self._in_flight.room(1):
            return await self._send_with_nonces(call, gas)

    async def _send_with_nonces(self, call: dict[str, Any], gas: int) -> Receipt:
        for _ in range(self.settings.max_nonce_attempts):
            try:
                return await self._send_with_a_nonce(call, gas)
            except _NonceTaken:
                continue
        raise ChainUnavailable(
            f"other transactions took {self.settings.max_nonce_attempts} nonces in a row "
            f"from {self.address}: is the operator key used outside this service?"
        )

    # -- a pipelined batch ---------------------------------------------------------------

    async def send_many(self, outgoing: Sequence[Outgoing]) -> list[Receipt | YieldAgentError]:
        """Sends every transaction of ``outgoing`` at once, at consecutive nonces
        reserved together, and awaits their receipts together; for each, its receipt or
        the error ``send`` would have raised for it (ChainRejected, ChainUnavailable).

        The batch goes out in windows of at most ``max_in_flight`` transactions, each
        window one fee reading, one nonce reading and one reservation. A transaction
        that another one outbid or whose nonce the chain already has is sent again on
        its own (``send``'s rules) once its window is settled. One the node refuses
        leaves its nonce to a filler (nothing sent to the operator itself), so that the
        window's later transactions can be mined."""
        results: list[Receipt | YieldAgentError | None] = [None] * len(outgoing)
        cap = self.settings.max_in_flight
        windows = [range(at, min(at + cap, len(outgoing))) for at in range(0, len(outgoing), cap)]
        await asyncio.gather(*(self._send_window(outgoing, w, results) for w in windows))
        done: list[Receipt | YieldAgentError] = []
        for result in results:
            if result is None:  # not reachable: every window settles each of its own
                result = ChainUnavailable("the transaction was not sent")
            done.append(result)
        return done

    def _call_of(self, outgoing: Outgoing) -> dict[str, Any]:
        return {
            "from": self.address,
            "to": to_checksum_address(outgoing.to),
            "data": HexBytes(outgoing.data).to_0x_hex(),
            "value": outgoing.value,
        }

    async def _send_window(
        self,
        outgoing: Sequence[Outgoing],
        window: range,
        results: list[Receipt | YieldAgentError | None],
    ) -> None:
        again: list[int] = []
        async with self._in_flight.room(len(window)):
            try:
                await self._pipeline(outgoing, window, results, again)
            except YieldAgentError as error:
                for index in window:
                    if results[index] is None and index not in again:
                        results[index] = error
        if again:  # outbid, or the nonce was used elsewhere: each on its own
            sent = await asyncio.gather(
                *(self._send_again(outgoing[index]) for index in again),
                return_exceptions=True,
            )
            for index, result in zip(again, sent, strict=True):
                results[index] = _as_result(result)

    async def _send_again(self, outgoing: Outgoing) -> Receipt:
        async with self._in_flight.room(1):
            return await self._send_with_nonces(self._call_of(outgoing), outgoing.gas)

    async def _pipeline(
        self,
        outgoing: Sequence[Outgoing],
        window: range,
        results: list[Receipt | YieldAgentError | None],
        again: list[int],
    ) -> None:
        settings = self.settings
        fees, pending = await self._fees_and_nonce()
        nonces = self._nonces.reserve_many(
            self.chain_id, self.address, pending, len(window), settings.hold_seconds
        )
        calls = {index: self._call_of(outgoing[index]) for index in window}
        sents = {
            nonce: _Sent(
                {
                    "type": 2,
                    "chainId": self.chain_id,
                    "nonce": nonce,
                    "to": calls[index]["to"],
                    "value": calls[index]["value"],
                    "data": calls[index]["data"],
                    "gas": outgoing[index].gas,
                },
                fees,
            )
            for index, nonce in zip(window, nonces, strict=True)
        }
        signed = await asyncio.gather(
            *(self._sign(sent.tx, fees) for sent in sents.values()), return_exceptions=True
        )
        out = [
            (index, nonce, got)
            for index, nonce, got in zip(window, sents, signed, strict=True)
            if not isinstance(got, BaseException)
        ]
        answers = await asyncio.gather(*(self._broadcast(raw) for _, _, (raw, _) in out))
        deadline = self._monotonic() + settings.receipt_timeout_seconds
        watched: dict[int, _Watched] = {}
        holes: list[int] = []
        for index, nonce, got in zip(window, sents, signed, strict=True):
            if isinstance(got, BaseException):
                results[index] = _as_result(got)
                holes.append(nonce)
        for (index, nonce, (raw, tx_hash)), (answer, detail) in zip(out, answers, strict=True):
            if answer is Broadcast.NONCE_USED or answer is Broadcast.UNDERPRICED:
                if answer is Broadcast.NONCE_USED:
                    self._settle(self._nonces.consume, nonce)
                log.warning("nonce taken by another transaction", extra={"nonce": nonce})
                again.append(index)
            elif answer is Broadcast.REFUSED:
                results[index] = node_unavailable("eth_sendRawTransaction", detail)
                holes.append(nonce)
            else:  # SENT, or UNKNOWN: it may have arrived, so watch it
                sents[nonce].hashes.append(tx_hash)
                sents[nonce].raw = raw
                watched[nonce] = _Watched(index, sents[nonce], deadline)
        for nonce in holes:
            filler = await self._fill(nonce, fees)
            if filler is None:
                self._settle(self._nonces.release, nonce)
            else:
                watched[nonce] = _Watched(None, filler, deadline)
        if watched:
            await self._await_receipts(watched, calls, results, again)

    async def _fill(self, nonce: int, fees: Fees) -> _Sent | None:
        """A transfer of nothing to the operator at ``nonce``, broadcast; None if it could
        not be sent (then the nonce is given back)."""
        tx = {
            "type": 2,
            "chainId": self.chain_id,
            "nonce": nonce,
            "to": self.address,
            "value": 0,
            "data": "0x",
            "gas": _FILLER_GAS,
        }
        try:
            raw, tx_hash = await self._sign(tx, fees)
        except Exception:
            log.warning("filler not signed", extra={"nonce": nonce}, exc_info=True)
            return None
        answer, _ = await self._broadcast(raw)
        if answer not in (Broadcast.SENT, Broadcast.UNKNOWN):
            log.warning("filler refused", extra={"nonce": nonce, "answer": answer.value})
            return None
        log.info("nonce filled", extra={"nonce": nonce, "tx_hash": tx_hash})
        return _Sent(tx, fees, [tx_hash], raw)

    async def _await_receipts(
        self,
        watched: dict[int, _Watched],
        calls: dict[int, dict[str, Any]],
        results: list[Receipt | YieldAgentError | None],
        again: list[int],
    ) -> None:
        """Awaits every watched transaction at once: each look reads the operator's mined
        nonce count (one request for the whole window), then the receipts of the nonces it
        passed, all at once; those not mined by their deadline are replaced, as ``send``
        replaces."""
        settings = self.settings
        pause = min(FIRST_POLL_SECONDS, settings.poll_seconds)
        give_up = self._monotonic() + settings.wait_seconds
        blocks: dict[int, int] = {}
        progress = (-1, self._monotonic())  # the mined count last seen, and since when
        while watched:
            mined_count: int
            try:
                mined_count = await self._mined_count()
            except CHAIN_ERRORS:
                mined_count = min(watched)  # nothing learnt: wait, and replace on time
            if mined_count != progress[0]:
                progress = (mined_count, self._monotonic())
            elif self._monotonic() - progress[1] >= settings.resend_after_seconds:
                await self._resend_if_lost(watched, mined_count)
                progress = (mined_count, self._monotonic())
            head: int | None = None
            settled: list[int] = []
            stuck: list[_Watched] = []
            passed = [n for n in sorted(watched) if watched[n].mined is None and n < mined_count]
            looked = await asyncio.gather(*(self._lookup(watched[n].sent.hashes) for n in passed))
            found = dict(zip(passed, looked, strict=True))
            for nonce in sorted(watched):
                one = watched[nonce]
                if nonce in found:
                    one.mined, answered = found[nonce]
                    if one.mined is None and answered:
                        if one.stranger_seen:  # believed on a second look, as in send
                            self._settle(self._nonces.consume, nonce)
                            log.warning("nonce used by another transaction", extra={"nonce": nonce})
                            del watched[nonce]
                            if one.index is not None:
                                again.append(one.index)
                            continue
                        one.stranger_seen = True
                    else:
                        one.stranger_seen = False
                if one.mined is not None:
                    if settings.confirmations > 1 and head is None:
                        head = await self._head()
                    if settings.confirmations == 1 or (
                        head is not None
                        and head >= one.mined["blockNumber"] + settings.confirmations - 1
                    ):
                        del watched[nonce]
                        settled.append(nonce)
                        if one.index is not None:
                            results[one.index] = await self._outcome(calls[one.index], one, blocks)
                    continue
                if self._monotonic() >= one.deadline:
                    if one.replacements == settings.max_replacements:
                        del watched[nonce]
                        if one.index is not None:
                            results[one.index] = ChainUnavailable(
                                f"transaction with nonce {nonce} not mined after "
                                f"{one.replacements} replacements: {', '.join(one.sent.hashes)}"
                            )
                        continue
                    one.replacements += 1
                    stuck.append(one)
            if stuck:  # replaced all at once: a fee jump leaves the whole window behind
                await asyncio.gather(*(self._replace(one.sent) for one in stuck))
                for one in stuck:
                    one.deadline = self._monotonic() + settings.receipt_timeout_seconds
            self._settle_many(settled)
            if not watched:
                return
            if self._monotonic() >= give_up:
                for nonce, one in watched.items():
                    if one.index is not None:
                        results[one.index] = ChainUnavailable(
                            f"transaction with nonce {nonce} not settled in time: "
                            f"{', '.join(one.sent.hashes)}"
                        )
                return
            await self._sleep(pause)
            pause = min(pause * 2, settings.poll_seconds)

    async def _resend_if_lost(self, watched: dict[int, _Watched], mined_count: int) -> None:
        """Sends the window's unmined transactions again, the same bytes, when the chain's
        next nonce is the window's and the node no longer holds that transaction: a node
        may drop what it accepted (a restart, an evicting pool, a load balancer's other
        node), and every later nonce then waits behind the hole until its replacement."""
        lowest = watched.get(mined_count)
        if lowest is None or lowest.mined is not None:
            return
        try:
            await self._retry.read(
                "eth_getTransactionByHash",
                lambda: self._w3.eth.get_transaction(HexStr(lowest.sent.hashes[-1])),
            )
            return  # held: waiting for room in a block, or for its fees
        except TransactionNotFound:
            pass
        except CHAIN_ERRORS:
            return  # nothing learnt: ask again at the next stall
        lost = [one.sent.raw for one in watched.values() if one.mined is None]
        await asyncio.gather(*(self._broadcast(raw) for raw in lost))
        log.info("transactions the node lost sent again", extra={"count": len(lost)})

    async def _outcome(
        self, call: dict[str, Any], one: _Watched, blocks: dict[int, int]
    ) -> Receipt | YieldAgentError:
        mined = one.mined
        assert mined is not None
        try:
            if mined["status"] != 1:
                reason = await self._replayed_reason(call, int(one.sent.tx["gas"]), mined)
                return ChainRejected(
                    f"transaction {mined['transactionHash'].to_0x_hex()} reverted: {reason}",
                    reason,
                )
            return await self._receipt(mined, blocks)
        except YieldAgentError as error:
            return error

    async def _lookup(self, hashes: Sequence[str]) -> tuple[TxReceipt | None, bool]:
        """The receipt of whichever of ``hashes`` is mined, and whether the node answered
        every lookup (a lookup it failed says nothing of whether ours was mined)."""
        answered = True
        for tx_hash in hashes:
            try:
                return await self._receipt_of(tx_hash), True
            except TransactionNotFound:
                continue
            except CHAIN_ERRORS:
                answered = False
        return None, answered

    async def _head(self) -> int | None:
        try:
            return await self._block_number()
        except CHAIN_ERRORS:
            return None

    # -- one nonce ---------------------------------------------------------------------

    async def _send_with_a_nonce(self, call: dict[str, Any], gas: int) -> Receipt:
        settings = self.settings
        fees, pending = await self._fees_and_nonce()
        nonce = self._nonces.reserve(self.chain_id, self.address, pending, settings.hold_seconds)
        tx = {
            "type": 2,
            "chainId": self.chain_id,
            "nonce": nonce,
            "to": call["to"],
            "value": call["value"],
            "data": call["data"],
            "gas": gas,
        }
        sent = _Sent(tx, fees)
        try:
            raw, tx_hash = await self._sign(tx, fees)
        except BaseException:
            self._settle(self._nonces.release, nonce)
            raise
        answer, detail = await self._broadcast(raw)
        if answer is Broadcast.NONCE_USED or answer is Broadcast.UNDERPRICED:
            if answer is Broadcast.NONCE_USED:  # else: another transaction holds it in the pool
                self._settle(self._nonces.consume, nonce)
            log.warning("nonce taken by another transaction", extra={"nonce": nonce})
            raise _NonceTaken
        if answer is Broadcast.REFUSED:
            self._settle(self._nonces.release, nonce)
            raise node_unavailable("eth_sendRawTransaction", detail)
        sent.hashes.append(tx_hash)  # SENT, or UNKNOWN: it may have arrived, so watch it
        mined = await self._await_receipt(sent)
        self._settle(self._nonces.consume, nonce)
        if mined["status"] != 1:
            reason = await self._replayed_reason(call, gas, mined)
            raise ChainRejected(
                f"transaction {mined['transactionHash'].to_0x_hex()} reverted: {reason}", reason
            )
        return await self._receipt(mined)

    async def _await_receipt(self, sent: _Sent) -> TxReceipt:
        """The receipt of whichever of ``sent``'s hashes is mined and confirmed,
        replacing the transaction each time the timeout passes. Polls soon at first (a
        node that answers a send before mining it often mines it within milliseconds),
        then less and less often, up to ``poll_seconds``."""
        settings = self.settings
        pause = min(FIRST_POLL_SECONDS, settings.poll_seconds)
        replacements = 0
        deadline = self._monotonic() + settings.receipt_timeout_seconds
        give_up = self._monotonic() + settings.wait_seconds
        stranger_seen = False
        while True:
            mined = await self._first_mined(sent.hashes)
            if mined is not None:
                if await self._confirmed(mined):
                    return mined
                if self._monotonic() >= give_up:
                    raise ChainUnavailable(
                        f"transaction {mined['transactionHash'].to_0x_hex()} was mined in block "
                        f"{mined['blockNumber']} but not confirmed by {settings.confirmations} "
                        "blocks in time"
                    )
            elif await self._taken_by_a_stranger(sent):
                # Believed on a second look only: a node under load can count a mined
                # nonce a moment before it gives that transaction's receipt, and sending
                # the call again would then make it twice.
                if stranger_seen:
                    self._settle(self._nonces.consume, sent.tx["nonce"])
                    log.warning(
                        "nonce used by another transaction", extra={"nonce": sent.tx["nonce"]}
                    )
                    raise _NonceTaken
                stranger_seen = True
            elif self._monotonic() >= deadline:
                if replacements == settings.max_replacements:
                    raise ChainUnavailable(
                        f"transaction with nonce {sent.tx['nonce']} not mined after "
                        f"{replacements} replacements: {', '.join(sent.hashes)}"
                    )
                replacements += 1
                await self._replace(sent)
                deadline = self._monotonic() + settings.receipt_timeout_seconds
                continue
            else:
                stranger_seen = False
            await self._sleep(pause)
            pause = min(pause * 2, settings.poll_seconds)

    async def _replace(self, sent: _Sent) -> None:
        """Signs the transaction again, same nonce, with higher fees, and sends it."""
        fees = bumped(sent.fees)
        with contextlib.suppress(*CHAIN_ERRORS):  # the bumped fees replace without it
            fees = fees.at_least(await self._retry.read("eth_feeHistory", self._fees))
        raw, tx_hash = await self._sign(sent.tx, fees)
        answer, detail = await self._broadcast(raw)
        log.info(
            "transaction replaced",
            extra={"nonce": sent.tx["nonce"], "tx_hash": tx_hash, "answer": answer.value},
        )
        sent.fees = fees  # the next replacement outbids this one, even if it was refused
        if answer in (Broadcast.SENT, Broadcast.UNKNOWN):
            sent.hashes.append(tx_hash)
            sent.raw = raw
        elif answer is Broadcast.REFUSED:
            log.warning("replacement refused", extra={"nonce": sent.tx["nonce"], "detail": detail})

    async def _first_mined(self, hashes: Sequence[str]) -> TxReceipt | None:
        for tx_hash in hashes:
            try:
                return await self._receipt_of(tx_hash)
            except TransactionNotFound:
                continue
            except CHAIN_ERRORS:
                continue  # the node may come back before the deadline
        return None

    async def _confirmed(self, mined: TxReceipt) -> bool:
        if self.settings.confirmations == 1:
            return True
        try:
            head = await self._block_number()
        except CHAIN_ERRORS:
            return False
        return head >= mined["blockNumber"] + self.settings.confirmations - 1

    async def _taken_by_a_stranger(self, sent: _Sent) -> bool:
        """Whether the chain mined another transaction with our nonce: the nonce is used,
        and the node says of each of ours that it knows no such transaction. A lookup the
        node fails to answer says nothing: ours may be the one mined, and sending the call
        again at a new nonce would then make it twice."""
        try:
            mined_count = await self._mined_count()
        except CHAIN_ERRORS:
            return False
        if mined_count <= sent.tx["nonce"]:
            return False
        for tx_hash in sent.hashes:  # ours may have just been mined
            try:
                await self._receipt_of(tx_hash)
            except TransactionNotFound:
                continue
            except CHAIN_ERRORS:
                return False
            return False
        return True

    def _settle_many(self, nonces: list[int]) -> None:
        """Consumes ``nonces`` (mined) in one reservation-store transaction; a failure
        only leaves their leases to lapse, as ``_settle``'s."""
        if not nonces:
            return
        try:
            self._nonces.consume_many(self.chain_id, self.address, nonces)
        except Exception:
            log.warning("nonce leases not settled", extra={"nonces": nonces}, exc_info=True)

    def _settle(self, action: Callable[[int, str, int], None], nonce: int) -> None:
        """Consumes or releases ``nonce``; a failure only leaves its lease to lapse, which
        is safe, so it never hides what the chain did."""
        try:
            action(self.chain_id, self.address, nonce)
        except Exception:
            log.warning("nonce lease not settled", extra={"nonce": nonce}, exc_info=True)

    # -- signing and broadcasting -------------------------------------------------------

    async def _sign(self, tx: dict[str, Any], fees: Fees) -> tuple[bytes, str]:
        signed = await self._signer.sign_transaction(
            {
                **tx,
                "maxFeePerGas": fees.max_fee_per_gas,
                "maxPriorityFeePerGas": fees.max_priority_fee_per_gas,
            }
        )
        return signed.raw, signed.tx_hash

    async def _broadcast(self, raw: bytes) -> tuple[Broadcast, Told]:
        """Hands ``raw`` to the node, and the same bytes again while it fails for a moment
        (``RetryPolicy``; an error answer only when it says the node is in trouble): the
        node keeps one transaction per hash, so a repeat adds nothing.

        Once an attempt may have reached the node (no answer, or a node in trouble), the
        chain may hold that very transaction: a later "nonce too low" (it was mined) or
        "underpriced" is then UNKNOWN, not another's. The hash is watched, and the nonce
        settled by what the chain shows, a stranger believed only on a second look."""
        retry = self._retry
        reached = False  # whether an attempt may have reached the node
        for attempt in range(retry.retries + 1):
            try:
                await self._w3.eth.send_raw_transaction(raw)
                return Broadcast.SENT, Told("")
            except CHAIN_ERRORS as error:
                wait: float | None
                if isinstance(error, Web3RPCError) and not isinstance(error, TRANSPORT_ERRORS):
                    answer, said = classify_refusal(error), node_message(error)
                    if answer is not Broadcast.REFUSED or not busy_answer(rpc_code(error), said):
                        if reached and answer in (Broadcast.NONCE_USED, Broadcast.UNDERPRICED):
                            log.info(
                                "broadcast answer may be about an earlier attempt",
                                extra={"answer": answer.value, "cause": redacted(error)},
                            )
                            return Broadcast.UNKNOWN, redacted(error)
                        return answer, refusal(error)
                    wait = retry.backoff(attempt)
                else:
                    wait = retry.wait_after(error, attempt)
                reached = True
                detail = redacted(error)
                if wait is None or attempt == retry.retries:
                    return Broadcast.UNKNOWN, detail
                await retry.pause("eth_sendRawTransaction", detail, wait)
        raise AssertionError("not reached: the last attempt returns")

    # -- reading -----------------------------------------------------------------------

    async def _estimate(self, call: dict[str, Any]) -> int:
        try:
            estimate = await self._retry.read(
                "eth_estimateGas", lambda: self._w3.eth.estimate_gas(cast(TxParams, call))
            )
        except ContractLogicError as error:
            reason = revert_reason(revert_data(error.data))
            raise ChainRejected(f"the transaction would revert: {reason}", reason) from error
        except CHAIN_ERRORS as error:
            raise node_unavailable("eth_estimateGas", error) from None
        return estimate + estimate * self.settings.gas_margin_percent // 100

    async def _replayed_reason(self, call: dict[str, Any], gas: int, mined: TxReceipt) -> str:
        """Why a mined transaction reverted: its call replayed at its block."""
        replay = cast(TxParams, {**call, "gas": gas})
        said = ""
        try:
            await self._retry.read(
                "eth_call", lambda: self._w3.eth.call(replay, block_identifier=mined["blockNumber"])
            )
        except ContractLogicError as error:
            data = revert_data(error.data)
            if data:
                return revert_reason(data)
            said = revert_reason(None)  # the node's own words are not told
        except Web3RPCError as error:
            said = f"unknown (the node refused the replay: {redacted(error)})"
        except CHAIN_ERRORS:
            said = "unknown (the replay of the call failed)"
        if mined["gasUsed"] >= gas:
            return f"out of gas (all {gas} gas used)"
        return said or "unknown (the call succeeds when replayed)"

    async def _receipt(self, mined: TxReceipt, blocks: dict[int, int] | None = None) -> Receipt:
        """``mined`` as the port tells it; ``blocks`` keeps the timestamps of blocks read
        already (a batch's transactions share a few blocks)."""
        number = int(mined["blockNumber"])
        timestamp = None if blocks is None else blocks.get(number)
        if timestamp is None:
            block = await self._read(
                "reading the transaction's block",
                "eth_getBlockByNumber",
                lambda: self._w3.eth.get_block(number),
            )
            timestamp = int(block["timestamp"])
            if blocks is not None:
                blocks[number] = timestamp
        logs = tuple(
            Log(
                address=to_checksum_address(entry["address"]),
                topics=tuple(HexBytes(topic).to_0x_hex() for topic in entry["topics"]),
                data=HexBytes(entry["data"]).to_0x_hex(),
                log_index=int(entry["logIndex"]),
            )
            for entry in mined["logs"]
        )
        return Receipt(
            tx_hash=HexBytes(mined["transactionHash"]).to_0x_hex(),
            block_number=number,
            timestamp=timestamp,
            logs=logs,
            gas_used=int(mined["gasUsed"]),
        )

    async def _read(self, what: str, method: str, ask: Callable[[], Awaitable[T]]) -> T:
        """``ask()``'s answer (a call of ``method``), asked again while the node fails for a
        moment (``RetryPolicy``); NodeUnavailable, naming ``what``, once it gives up."""
        try:
            return await self._retry.read(method, ask)
        except CHAIN_ERRORS as error:
            raise node_unavailable(what, error) from None

    async def _fees_and_nonce(self) -> tuple[Fees, int]:
        """The fees of new transactions and the operator's pending nonce count."""
        fees = await self._read("reading the fees", "eth_feeHistory", self._fees)
        pending = await self._read(
            "reading the nonce",
            "eth_getTransactionCount",
            lambda: self._w3.eth.get_transaction_count(self.address, "pending"),
        )
        return fees, int(pending)

    async def _fees(self) -> Fees:
        return await suggest_fees(self._w3, self.settings.fees)

    async def _mined_count(self) -> int:
        """The operator's mined transaction count, asked again while the node fails for a
        moment; the last failure is raised."""
        return int(
            await self._retry.read(
                "eth_getTransactionCount",
                lambda: self._w3.eth.get_transaction_count(self.address, "latest"),
            )
        )

    async def _receipt_of(self, tx_hash: str) -> TxReceipt:
        """The receipt of ``tx_hash``, asked again while the node fails for a moment;
        TransactionNotFound (not mined) at once, and the last failure, are raised."""
        return await self._retry.read(
            "eth_getTransactionReceipt",
            lambda: self._w3.eth.get_transaction_receipt(HexBytes(tx_hash)),
        )

    async def _block_number(self) -> int:
        return int(await self._retry.read("eth_blockNumber", lambda: self._w3.eth.block_number))


def _as_result(outcome: Receipt | BaseException) -> Receipt | YieldAgentError:
    """A batch's answer for one transaction: its receipt, the domain error it raised, or
    ChainUnavailable naming only the class of any other failure (its words may hold the
    node's)."""
    if isinstance(outcome, Receipt | YieldAgentError):
        return outcome
    if not isinstance(outcome, Exception):
        raise outcome
    unavailable = ChainUnavailable(f"the transaction was not sent: {redacted(outcome)}")
    unavailable.__cause__ = outcome
    return unavailable
