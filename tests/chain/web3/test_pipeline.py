"""The pipelined sender against a fake node: a batch goes out at consecutive nonces and
its receipts are awaited together; the cap on transactions in flight holds; a refused
transaction's nonce is filled; a stuck batch is replaced with higher fees; a nonce used
elsewhere is sent again; what the node dropped goes out again, the same bytes; no node's
words or URL reach an error; nothing is mined twice.
The nonces are leased from the real store, on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

from eth_account import Account
from eth_account.typed_transactions.typed_transaction import TypedTransaction
from eth_utils.crypto import keccak
from hexbytes import HexBytes
from sqlalchemy import Engine
from web3 import AsyncWeb3
from web3.exceptions import TransactionNotFound, Web3RPCError
from web3.types import RPCResponse

from yieldagent.chain.signers.local import LocalKeySigner
from yieldagent.chain.web3.transactions import (
    Outgoing,
    Receipt,
    SendSettings,
    TransactionSender,
)
from yieldagent.domain.errors import ChainRejected, ChainUnavailable, NodeUnavailable
from yieldagent.storage.nonces import NonceStore

CHAIN_ID = 8453
KEY = b"\x42" * 32
OPERATOR = Account.from_key(KEY).address
TARGET = "0x" + "ab" * 20
BASE_FEE = 10**8
SECRET_URL = "https://node.example/v2/secret-api-key"


def _answer(error: dict[str, Any]) -> RPCResponse:
    return cast(RPCResponse, error)


class FakeNode:
    """A node's answers to the sender: a pool by nonce, a block mined at each pause of the
    sender (``mine``), receipts by hash, and a count of requests by method."""

    def __init__(self) -> None:
        self.pool: dict[int, dict[str, Any]] = {}
        self.receipts: dict[str, dict[str, Any]] = {}
        self.mined: list[dict[str, Any]] = []
        self.mined_count = 0
        self.block = 100
        self.requests: Counter[str] = Counter()
        self.fee_floor = 0
        """Transactions paying less than this per gas stay in the pool."""
        self.refuse_data: set[str] = set()
        self.revert_data: set[str] = set()
        self.most_in_pool = 0
        self.fee_error: Exception | None = None
        self.stale_pending = 0
        """How many of the mined transactions the next pending count leaves out."""
        self.lose: set[int] = set()
        """Nonces whose first transaction the pool accepts, then drops."""
        self.lost: list[int] = []
        self.broadcasts: Counter[str] = Counter()
        """How many times each hash was handed to the node."""

    # -- the eth namespace -------------------------------------------------------------

    async def fee_history(self, *_: Any) -> dict[str, Any]:
        self.requests["eth_feeHistory"] += 1
        if self.fee_error is not None:
            raise self.fee_error
        return {"baseFeePerGas": [BASE_FEE] * 6, "reward": [[10**6]] * 5}

    async def get_transaction_count(self, address: str, tag: str) -> int:
        self.requests["eth_getTransactionCount"] += 1
        assert address == OPERATOR
        if tag == "latest":
            return self.mined_count
        pending = self.mined_count - self.stale_pending
        self.stale_pending = 0
        while pending in self.pool:
            pending += 1
        return pending

    async def send_raw_transaction(self, raw: bytes) -> HexBytes:
        self.requests["eth_sendRawTransaction"] += 1
        tx = TypedTransaction.from_bytes(HexBytes(raw)).as_dict()
        tx["hash"] = HexBytes(keccak(raw)).to_0x_hex()
        self.broadcasts[tx["hash"]] += 1
        data = HexBytes(tx["data"]).to_0x_hex()
        if data in self.refuse_data:
            raise Web3RPCError(
                "refused",
                rpc_response=_answer({"error": {"message": f"no thanks, ask {SECRET_URL}"}}),
            )
        if tx["nonce"] < self.mined_count:
            raise Web3RPCError("low", rpc_response=_answer({"error": {"message": "nonce too low"}}))
        held = self.pool.get(tx["nonce"])
        outbid = held is not None and tx["maxFeePerGas"] < held["maxFeePerGas"] * 11 // 10
        if held is not None and held["hash"] != tx["hash"] and outbid:
            raise Web3RPCError(
                "low",
                rpc_response=_answer({"error": {"message": "replacement transaction underpriced"}}),
            )
        self.most_in_pool = max(self.most_in_pool, len(self.pool) + 1)
        if tx["nonce"] in self.lose:
            self.lose.discard(tx["nonce"])
            self.lost.append(tx["nonce"])
        else:
            self.pool[tx["nonce"]] = tx
        return HexBytes(tx["hash"])

    async def get_transaction(self, tx_hash: str) -> dict[str, Any]:
        self.requests["eth_getTransactionByHash"] += 1
        held = [tx for tx in self.pool.values() if tx["hash"] == tx_hash]
        if not held and tx_hash not in self.receipts:
            raise TransactionNotFound("unknown")
        return held[0] if held else {"hash": tx_hash}

    async def get_transaction_receipt(self, tx_hash: HexBytes) -> dict[str, Any]:
        self.requests["eth_getTransactionReceipt"] += 1
        found = self.receipts.get(HexBytes(tx_hash).to_0x_hex())
        if found is None:
            raise TransactionNotFound("not yet")
        return found

    async def get_block(self, number: int) -> dict[str, Any]:
        self.requests["eth_getBlockByNumber"] += 1
        return {"timestamp": 1_000 + number}

    async def call(self, *_: Any, **__: Any) -> bytes:
        self.requests["eth_call"] += 1
        return b""

    # -- the chain ---------------------------------------------------------------------

    def mine(self) -> None:
        """One block: the pool's transactions from the mined count on, in nonce order,
        while each pays the fee floor."""
        self.block += 1
        while self.mined_count in self.pool:
            tx = self.pool[self.mined_count]
            if tx["maxFeePerGas"] < self.fee_floor:
                break
            del self.pool[self.mined_count]
            self.mine_one(tx)

    def mine_one(self, tx: dict[str, Any]) -> None:
        data = HexBytes(tx["data"]).to_0x_hex()
        self.receipts[tx["hash"]] = {
            "transactionHash": HexBytes(tx["hash"]),
            "blockNumber": self.block,
            "status": 0 if data in self.revert_data else 1,
            "gasUsed": 50_000,
            "logs": [],
        }
        self.mined.append(tx)
        self.mined_count += 1

    def stranger_at(self, nonce: int) -> None:
        """Another holder of the key mines a transaction at ``nonce``."""
        assert nonce == self.mined_count
        self.mine_one({"hash": "0x" + "ee" * 32, "nonce": nonce, "data": b"\x01"})


class Clock:
    def __init__(self, node: FakeNode) -> None:
        self.now = 0.0
        self.node = node
        self.sleeps = 0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += max(seconds, 0.5)
        self.node.mine()


def _sender(
    node: FakeNode, engine: Engine, **settings: Any
) -> tuple[TransactionSender, NonceStore, Clock]:
    clock = Clock(node)
    w3 = cast(AsyncWeb3[Any], type("W3", (), {"eth": node})())
    nonces = NonceStore(engine)
    sender = TransactionSender(
        w3,
        CHAIN_ID,
        LocalKeySigner(KEY),
        nonces,
        SendSettings(**{"receipt_timeout_seconds": 5.0, "poll_seconds": 1.0, **settings}),
        sleep=clock.sleep,
        monotonic=clock,
    )
    return sender, nonces, clock


def _batch(count: int) -> list[Outgoing]:
    return [Outgoing(TARGET, "0x" + f"{i:08x}", 60_000) for i in range(count)]


def _data(tx: dict[str, Any]) -> str:
    return HexBytes(tx["data"]).to_0x_hex()


async def test_a_batch_goes_out_at_consecutive_nonces_and_is_awaited_together(
    engine: Engine,
) -> None:
    node = FakeNode()
    node.mined_count = 7
    sender, nonces, clock = _sender(node, engine)
    results = await sender.send_many(_batch(40))

    assert all(isinstance(r, Receipt) for r in results)
    assert [tx["nonce"] for tx in node.mined] == list(range(7, 47))
    assert [_data(tx) for tx in node.mined] == [o.data for o in _batch(40)]
    assert {cast(Receipt, r).block_number for r in results} == {101}  # one block for all
    assert clock.sleeps == 1  # one pause, not one wait per transaction
    # one fee and nonce reading for the batch, one look at the mined count per pause
    assert node.requests["eth_feeHistory"] == 1
    assert node.requests["eth_getTransactionCount"] == 3
    assert node.requests["eth_sendRawTransaction"] == 40
    assert node.requests["eth_getTransactionReceipt"] == 40
    assert node.requests["eth_getBlockByNumber"] == 1
    assert nonces.leased(CHAIN_ID, OPERATOR) == {}


async def test_no_more_than_the_cap_are_in_flight(engine: Engine) -> None:
    node = FakeNode()
    sender, nonces, _ = _sender(node, engine, max_in_flight=8)
    results = await sender.send_many(_batch(30))

    assert all(isinstance(r, Receipt) for r in results)
    assert node.most_in_pool == 8
    assert sorted(tx["nonce"] for tx in node.mined) == list(range(30))
    assert Counter(_data(tx) for tx in node.mined) == Counter(o.data for o in _batch(30))
    assert nonces.leased(CHAIN_ID, OPERATOR) == {}


async def test_a_refused_transaction_leaves_a_filler_and_the_rest_is_mined(
    engine: Engine,
) -> None:
    node = FakeNode()
    batch = _batch(6)
    node.refuse_data.add(str(batch[2].data))
    sender, nonces, _ = _sender(node, engine)
    results = await sender.send_many(batch)

    refused = results[2]
    assert isinstance(refused, NodeUnavailable)
    assert "secret-api-key" not in str(refused) and "node.example" not in str(refused)
    assert all(isinstance(r, Receipt) for i, r in enumerate(results) if i != 2)
    filler = node.mined[2]
    assert filler["nonce"] == 2 and filler["value"] == 0
    assert HexBytes(filler["to"]) == HexBytes(OPERATOR)
    assert [tx["nonce"] for tx in node.mined] == list(range(6))
    assert nonces.leased(CHAIN_ID, OPERATOR) == {}


async def test_a_batch_stuck_below_the_market_is_replaced_with_higher_fees(
    engine: Engine,
) -> None:
    node = FakeNode()
    node.fee_floor = 5 * BASE_FEE // 2  # the batch offers 2 base fees and a tip
    sender, nonces, _ = _sender(node, engine)
    results = await sender.send_many(_batch(5))

    assert all(isinstance(r, Receipt) for r in results)
    assert all(tx["maxFeePerGas"] >= node.fee_floor for tx in node.mined)
    assert node.requests["eth_sendRawTransaction"] > 5  # replacements went out
    assert Counter(_data(tx) for tx in node.mined) == Counter(o.data for o in _batch(5))
    assert nonces.leased(CHAIN_ID, OPERATOR) == {}


async def test_a_batch_never_mined_is_unavailable_and_keeps_its_leases(engine: Engine) -> None:
    node = FakeNode()
    node.fee_floor = 10**30
    sender, nonces, _ = _sender(node, engine, max_replacements=1)
    results = await sender.send_many(_batch(3))

    assert all(isinstance(r, ChainUnavailable) for r in results)
    assert "not mined after 1 replacements" in str(results[0])
    assert node.mined == []
    assert set(nonces.leased(CHAIN_ID, OPERATOR)) == {0, 1, 2}  # left to lapse


async def test_a_nonce_used_elsewhere_is_sent_again_once(engine: Engine) -> None:
    node = FakeNode()
    sender, nonces, _ = _sender(node, engine)
    node.stranger_at(0)
    node.stranger_at(1)
    node.stale_pending = 1  # the node's count lags the two it mined by one
    results = await sender.send_many(_batch(3))

    assert all(isinstance(r, Receipt) for r in results)
    ours = [tx for tx in node.mined if tx["hash"] != "0x" + "ee" * 32]
    assert Counter(_data(tx) for tx in ours) == Counter(o.data for o in _batch(3))
    # the first went out at 1, which the chain had: it was sent again, after the others
    assert [(tx["nonce"], _data(tx)) for tx in ours] == [
        (2, _batch(3)[1].data),
        (3, _batch(3)[2].data),
        (4, _batch(3)[0].data),
    ]
    assert nonces.leased(CHAIN_ID, OPERATOR) == {}


async def test_a_reverted_transaction_is_refused_alone(engine: Engine) -> None:
    node = FakeNode()
    batch = _batch(4)
    node.revert_data.add(str(batch[1].data))
    sender, _, _ = _sender(node, engine)
    results = await sender.send_many(batch)

    assert isinstance(results[1], ChainRejected)
    assert all(isinstance(r, Receipt) for i, r in enumerate(results) if i != 1)
    assert len(node.mined) == 4


async def test_a_node_error_is_told_without_its_words(engine: Engine) -> None:
    node = FakeNode()
    node.fee_error = Web3RPCError(
        f"boom at {SECRET_URL}", rpc_response=_answer({"error": {"message": f"see {SECRET_URL}"}})
    )
    sender, nonces, _ = _sender(node, engine)
    results = await sender.send_many(_batch(3))

    assert all(isinstance(r, NodeUnavailable) for r in results)
    assert all("secret" not in str(r) and "boom" not in str(r) for r in results)
    assert node.requests["eth_sendRawTransaction"] == 0
    assert nonces.leased(CHAIN_ID, OPERATOR) == {}


async def test_what_the_node_dropped_goes_out_again_the_same_bytes_before_any_replacement(
    engine: Engine,
) -> None:
    """The pool drops nonces 2 and 3 once accepted: 4 and 5 wait behind the hole. The node
    is asked once about nonce 2, after the wait, and the window's unmined transactions
    are sent again: the very bytes, so the same hashes and fees, long before the receipt
    timeout would replace them."""
    node = FakeNode()
    node.lose = {2, 3}
    sender, nonces, clock = _sender(
        node, engine, receipt_timeout_seconds=60.0, resend_after_seconds=3.0
    )
    results = await sender.send_many(_batch(6))

    assert all(isinstance(r, Receipt) for r in results)
    assert node.lost == [2, 3]
    assert [tx["nonce"] for tx in node.mined] == list(range(6))
    assert [_data(tx) for tx in node.mined] == [o.data for o in _batch(6)]
    assert len({tx["maxFeePerGas"] for tx in node.mined}) == 1  # no replacement's fees
    assert node.requests["eth_getTransactionByHash"] == 1
    assert node.requests["eth_sendRawTransaction"] == 6 + 4  # nonces 2 to 5 once more
    assert sorted(node.broadcasts.values()) == [1, 1, 2, 2, 2, 2]
    assert clock.now < 60.0
    assert nonces.leased(CHAIN_ID, OPERATOR) == {}


async def test_a_window_waiting_for_room_in_a_block_is_not_sent_again(engine: Engine) -> None:
    """The node holds the batch but mines none of it for a while (below the fee floor at
    first): the node is asked about the lowest nonce, says it holds it, and nothing goes
    out again before the receipt timeout's replacement."""
    node = FakeNode()
    node.fee_floor = 5 * BASE_FEE // 2
    sender, _, clock = _sender(node, engine, receipt_timeout_seconds=10.0, resend_after_seconds=3.0)
    results = await sender.send_many(_batch(3))

    assert all(isinstance(r, Receipt) for r in results)
    assert node.requests["eth_getTransactionByHash"] >= 1
    assert max(node.broadcasts.values()) == 1  # replacements alone: new bytes each
    assert node.requests["eth_sendRawTransaction"] > 3
    assert clock.now >= 10.0
