"""A holder's history from the chain's ERC-20 ``Transfer`` logs, named as the simulator
names its transactions.

``transfer_logs`` reads, with ``eth_getLogs`` in bounded block ranges, every transfer of
the watched tokens (the wallets' token, the reward token) from or to the holder: two
filters per range, as topics cannot say "sender or recipient" in one. ``fleet_logs`` does
so for many accounts at once, which ``fleet_transfer_logs`` (their histories) and
``accounts_touched`` (the fleet's transfer watch: who was named, not what) share. ``classify`` turns
them into ``ChainTx``, one per log except swaps, in chain order (block, log index):

- ``swap``: in one transaction, the holder sends a token to the swap router and the router
  sends another back; one ChainTx (the first log's index) with both sides;
- ``supply``: the token from the holder to a protocol's custody; the recipient is the
  protocol's catalog name;
- ``withdraw``: the token from a custody to the holder; the sender is the protocol's name;
- ``claim``: the reward token from a rewards contract (or minted) to the holder;
- ``mint``: from the zero address;
- ``transfer``: anything else.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eth_utils.address import to_checksum_address

from yieldagent.chain.web3.abis import TRANSFER_TOPIC
from yieldagent.chain.web3.reader import RpcReader
from yieldagent.domain.ports.chain import ChainKind, ChainTx

ZERO_ADDRESS = "0x" + "00" * 20
_PARALLEL_RANGES = 8  # block ranges whose logs are asked for at once


@dataclass(frozen=True, slots=True)
class TransferLog:
    """One ERC-20 ``Transfer`` log."""

    tx_hash: str
    log_index: int
    block_number: int
    timestamp: int
    token: str
    sender: str
    recipient: str
    amount: int


@dataclass(frozen=True, slots=True)
class Counterparties:
    """Who the holder deals with, to name its transfers."""

    token: str
    """The wallets' token."""
    custodies: Mapping[str, str]
    """Custody address → the protocol's catalog name."""
    reward_token: str | None = None
    rewards: frozenset[str] = frozenset()
    """Contracts that pay rewards."""
    router: str | None = None
    """The swap router."""

    @property
    def watched(self) -> list[str]:
        """The tokens whose transfers make the history."""
        return [self.token] + ([self.reward_token] if self.reward_token else [])


def _hex(value: Any) -> str:
    """A 0x-prefixed lower-case hex string of ``value`` (str, bytes or HexBytes)."""
    if isinstance(value, bytes | bytearray):
        return "0x" + bytes(value).hex()
    text = str(value).lower()
    return text if text.startswith("0x") else "0x" + text


def _int(value: Any) -> int:
    return value if isinstance(value, int) else int(str(value), 16)


def _topic_address(topic: Any) -> str:
    return str(to_checksum_address("0x" + _hex(topic)[-40:]))


def parse_transfer(log: Mapping[str, Any], timestamp: int | None = None) -> TransferLog | None:
    """The ERC-20 transfer a log records (raw JSON-RPC or web3's), or None if it is not one
    (another event, or an ERC-721 transfer with its token id indexed)."""
    topics = [_hex(t) for t in log.get("topics", [])]
    data = _hex(log.get("data", "0x"))
    if len(topics) != 3 or topics[0] != "0x" + TRANSFER_TOPIC.hex() or len(data) != 66:
        return None
    if timestamp is None:
        timestamp = _int(log["blockTimestamp"])
    return TransferLog(
        tx_hash=_hex(log["transactionHash"]),
        log_index=_int(log["logIndex"]),
        block_number=_int(log["blockNumber"]),
        timestamp=timestamp,
        token=str(to_checksum_address(log["address"])),
        sender=_topic_address(topics[1]),
        recipient=_topic_address(topics[2]),
        amount=int(data, 16),
    )


def block_ranges(start: int, end: int, size: int) -> list[tuple[int, int]]:
    """``[start, end]`` cut in inclusive ranges of at most ``size`` blocks."""
    return [(low, min(low + size - 1, end)) for low in range(start, end + 1, size)]


async def transfer_logs(
    reader: RpcReader,
    tokens: Sequence[str],
    holder: str,
    since_block: int,
    to_block: int,
    log_range: int,
) -> list[TransferLog]:
    """Every transfer of ``tokens`` from or to ``holder`` in blocks ``since_block`` to
    ``to_block``, in chain order, each once."""
    logs = await fleet_logs(reader, tokens, [holder], since_block, to_block, log_range, 1)
    stamps = await _timestamps(reader, logs)
    parsed = (parse_transfer(log, stamps.get(_int(log["blockNumber"]))) for log in logs)
    return sorted((t for t in parsed if t is not None), key=lambda t: (t.block_number, t.log_index))


def _account_topic(account: str) -> str:
    """``account`` as an indexed address topic."""
    return "0x" + "00" * 12 + to_checksum_address(account)[2:].lower()


async def fleet_logs(
    reader: RpcReader,
    tokens: Sequence[str],
    accounts: Sequence[str],
    since_block: int,
    to_block: int,
    log_range: int,
    address_batch: int,
) -> list[Mapping[str, Any]]:
    """The raw ``Transfer`` logs of ``tokens`` from or to any of ``accounts`` in blocks
    ``since_block`` to ``to_block``, each once, in no order: per range, one ``eth_getLogs``
    each way for every ``address_batch`` accounts (named in the topic's OR-list, so the
    node filters, however busy the token is), ``_PARALLEL_RANGES`` ranges' requests in
    one JSON-RPC batch."""
    topics = list(dict.fromkeys(_account_topic(a) for a in accounts))
    if not topics:
        return []
    groups = [topics[i : i + address_batch] for i in range(0, len(topics), address_batch)]
    ranges = block_ranges(max(since_block, 0), to_block, log_range)
    unique: dict[tuple[str, int], Mapping[str, Any]] = {}
    for start in range(0, len(ranges), _PARALLEL_RANGES):
        answers = await asyncio.gather(
            *(
                reader.request(
                    "eth_getLogs",
                    [
                        {
                            "fromBlock": hex(low),
                            "toBlock": hex(high),
                            "address": list(tokens),
                            "topics": side,
                        }
                    ],
                )
                for low, high in ranges[start : start + _PARALLEL_RANGES]
                for group in groups
                for side in ([_hex(TRANSFER_TOPIC), None, group], [_hex(TRANSFER_TOPIC), group])
            )
        )
        for answer in answers:
            for log in answer or []:
                unique[(_hex(log["transactionHash"]), _int(log["logIndex"]))] = log
    return list(unique.values())


async def fleet_transfer_logs(
    reader: RpcReader,
    tokens: Sequence[str],
    holders: Sequence[str],
    since_block: int,
    to_block: int,
    log_range: int,
    address_batch: int,
) -> dict[str, list[TransferLog]]:
    """``transfer_logs`` of each of ``holders`` (by holder as given), read for all of them
    at once (``fleet_logs``)."""
    accounts: dict[str, str] = {to_checksum_address(h): h for h in holders}
    unique = await fleet_logs(
        reader, tokens, list(accounts), since_block, to_block, log_range, address_batch
    )
    stamps = await _timestamps(reader, unique)
    found: dict[str, list[TransferLog]] = {h: [] for h in holders}
    for log in unique:
        transfer = parse_transfer(log, stamps.get(_int(log["blockNumber"])))
        if transfer is None:
            continue
        for party in {transfer.sender, transfer.recipient}:
            if party in accounts:
                found[accounts[party]].append(transfer)
    for transfers in found.values():
        transfers.sort(key=lambda t: (t.block_number, t.log_index))
    return found


async def accounts_touched(
    reader: RpcReader,
    tokens: Sequence[str],
    accounts: Sequence[str],
    since_block: int,
    to_block: int,
    log_range: int,
    address_batch: int,
) -> dict[str, int]:
    """Which of ``accounts`` (as given) sent or received any of ``tokens`` in blocks
    ``since_block`` to ``to_block``, each with the first such block (``fleet_logs``; the
    logs' topics say it all, so no block is read for its timestamp)."""
    by_address: dict[str, str] = {to_checksum_address(a): a for a in accounts}
    logs = await fleet_logs(
        reader, tokens, list(by_address), since_block, to_block, log_range, address_batch
    )
    first: dict[str, int] = {}
    for log in logs:
        topics = [_hex(t) for t in log.get("topics", [])]
        if len(topics) != 3 or topics[0] != _hex(TRANSFER_TOPIC):
            continue
        block = _int(log["blockNumber"])
        for topic in topics[1:]:
            account = by_address.get(_topic_address(topic))
            if account is not None:
                first[account] = min(first.get(account, block), block)
    return first


async def _timestamps(reader: RpcReader, logs: Iterable[Mapping[str, Any]]) -> dict[int, int]:
    """Timestamps of the logs' blocks that the node did not put in the logs."""
    missing = sorted({_int(log["blockNumber"]) for log in logs if "blockTimestamp" not in log})
    blocks = await asyncio.gather(*(reader.block(n) for n in missing))
    return {b.number: b.timestamp for b in blocks}


def classify(
    holder: str, transfers: Sequence[TransferLog], parties: Counterparties
) -> list[ChainTx]:
    """The holder's ``ChainTx`` from its transfers (in chain order)."""
    holder = to_checksum_address(holder)
    swaps = _swaps(holder, transfers, parties)
    paired = {(s.tx_hash, s.log_index) for pair in swaps.values() for s in pair}
    events = [
        _swap(*swaps[key]) if key in swaps else _single(holder, t, parties)
        for t in transfers
        if (key := (t.tx_hash, t.log_index)) in swaps or key not in paired
    ]
    return sorted(events, key=lambda e: (e.block_number, e.log_index))


def _swaps(
    holder: str, transfers: Sequence[TransferLog], parties: Counterparties
) -> dict[tuple[str, int], tuple[TransferLog, TransferLog]]:
    """Swap pairs by their first log: the holder's payment to the router, and the router's
    payment of another token back in the same transaction."""
    if parties.router is None:
        return {}
    router = to_checksum_address(parties.router)
    paid = [t for t in transfers if t.sender == holder and t.recipient == router]
    got = [t for t in transfers if t.sender == router and t.recipient == holder]
    pairs: dict[tuple[str, int], tuple[TransferLog, TransferLog]] = {}
    used: set[tuple[str, int]] = set()
    for out in paid:
        for back in got:
            key = (back.tx_hash, back.log_index)
            if back.tx_hash == out.tx_hash and back.token != out.token and key not in used:
                used.add(key)
                pairs[(out.tx_hash, out.log_index)] = (out, back)
                break
    return pairs


def _swap(paid: TransferLog, got: TransferLog) -> ChainTx:
    return ChainTx(
        tx_hash=paid.tx_hash,
        kind=ChainKind.SWAP,
        token=paid.token,
        sender=paid.sender,
        recipient=got.recipient,
        amount=paid.amount,
        block_number=paid.block_number,
        timestamp=paid.timestamp,
        log_index=paid.log_index,
        token_out=got.token,
        amount_out=got.amount,
    )


def _single(holder: str, t: TransferLog, parties: Counterparties) -> ChainTx:
    kind, sender, recipient = ChainKind.TRANSFER, t.sender, t.recipient
    custodies = {str(to_checksum_address(a)): n for a, n in parties.custodies.items()}
    rewards = {str(to_checksum_address(a)) for a in parties.rewards}
    reward = parties.reward_token is not None and t.token == to_checksum_address(
        parties.reward_token
    )
    if reward and t.recipient == holder and (t.sender in rewards or t.sender == ZERO_ADDRESS):
        kind = ChainKind.CLAIM
    elif t.sender == ZERO_ADDRESS:
        kind = ChainKind.MINT
    elif t.token == to_checksum_address(parties.token):
        if t.sender == holder and t.recipient in custodies:
            kind, recipient = ChainKind.SUPPLY, custodies[t.recipient]
        elif t.recipient == holder and t.sender in custodies:
            kind, sender = ChainKind.WITHDRAW, custodies[t.sender]
    return ChainTx(
        tx_hash=t.tx_hash,
        kind=kind,
        token=t.token,
        sender=sender,
        recipient=recipient,
        amount=t.amount,
        block_number=t.block_number,
        timestamp=t.timestamp,
        log_index=t.log_index,
    )
