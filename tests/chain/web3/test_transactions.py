"""The transaction sender against anvil: EIP-1559 fees, revert reasons, replacement of a
transaction not mined in time, and the nonce settled on every path."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import pytest
from eth_account import Account
from eth_account.typed_transactions.typed_transaction import TypedTransaction
from eth_utils.crypto import keccak
from hexbytes import HexBytes
from sqlalchemy import Engine
from web3 import AsyncHTTPProvider, AsyncWeb3
from web3.exceptions import TransactionNotFound

from support.anvil import CHAIN_ID, Anvil, Deployed, dev_key, free_port
from yieldagent.chain.signers.local import LocalKeySigner
from yieldagent.chain.web3.fees import FeeSettings
from yieldagent.chain.web3.retries import RETRIES, RetryPolicy
from yieldagent.chain.web3.transactions import SendSettings, TransactionSender
from yieldagent.domain.errors import (
    NODE_DID_NOT_ANSWER,
    ChainRejected,
    ChainUnavailable,
    NodeUnavailable,
)
from yieldagent.domain.ports.signer import SignedTransaction
from yieldagent.storage.nonces import NonceStore

pytestmark = [pytest.mark.evm, pytest.mark.sqlite_only]

FAST = SendSettings(receipt_timeout_seconds=5.0, poll_seconds=0.05)
FLOOR = FeeSettings().priority_floor
OPERATOR_9 = Account.from_key(dev_key(9)).address


@pytest.fixture
async def w3(anvil: Anvil) -> AsyncIterator[AsyncWeb3[Any]]:
    """An async client of the test anvil."""
    client = AsyncWeb3(AsyncHTTPProvider(anvil.url))
    yield client
    await client.provider.disconnect()


def sender(
    w3: AsyncWeb3[Any],
    engine: Engine,
    account: int,
    settings: SendSettings = FAST,
) -> TransactionSender:
    """A sender from dev account ``account``, its nonces leased from ``engine``."""
    return TransactionSender(
        w3, CHAIN_ID, LocalKeySigner(dev_key(account)), NonceStore(engine), settings
    )


class Broadcasts(list[dict[str, Any]]):
    """Transactions handed to the node, decoded, with their hashes."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = asyncio.Event()

    async def wait_for(self, count: int) -> None:
        """Returns once ``count`` transactions were handed to the node."""
        while len(self) < count:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 10)


def spy_broadcasts(w3: AsyncWeb3[Any]) -> Broadcasts:
    """Every transaction handed to the node from now on (accepted or not)."""
    seen = Broadcasts()
    broadcast = seen.changed
    original: Callable[[bytes], Awaitable[HexBytes]] = w3.eth.send_raw_transaction

    async def send_raw_transaction(raw: bytes) -> HexBytes:
        decoded = TypedTransaction.from_bytes(HexBytes(raw)).as_dict()
        try:
            return await original(raw)
        finally:  # once the node answered
            seen.append({**decoded, "hash": HexBytes(keccak(raw))})
            broadcast.set()

    w3.eth.send_raw_transaction = send_raw_transaction  # type: ignore[method-assign,assignment]
    return seen


async def mined_or_none(w3: AsyncWeb3[Any], tx_hash: HexBytes) -> Any:
    try:
        return await w3.eth.get_transaction_receipt(tx_hash)
    except TransactionNotFound:
        return None


async def test_a_call_is_mined_with_eip1559_fees_and_its_logs(
    w3: AsyncWeb3[Any], engine: Engine, reverter: Deployed
) -> None:
    operator = sender(w3, engine, 1)
    receipt = await operator.send(reverter.address, reverter.calldata("succeed", 42))

    tx = await w3.eth.get_transaction(HexBytes(receipt.tx_hash))
    block = await w3.eth.get_block(receipt.block_number)
    assert tx["type"] == 2 and tx["from"] == operator.address
    assert tx["maxPriorityFeePerGas"] == FLOOR  # anvil's blocks carry no tips
    assert tx["maxFeePerGas"] >= 2 * block["baseFeePerGas"] + FLOOR
    assert receipt.timestamp == block["timestamp"]
    assert 21_000 < receipt.gas_used <= tx["gas"] and tx["gas"] == receipt.gas_used * 12 // 10
    [done] = receipt.logs
    assert done.address.lower() == reverter.address.lower()
    assert done.topics[1] == "0x" + operator.address[2:].lower().rjust(64, "0")
    assert int(done.data, 16) == 42
    assert NonceStore(engine).leased(CHAIN_ID, operator.address) == {}  # consumed


async def test_a_call_that_would_revert_is_refused_before_anything_is_signed(
    w3: AsyncWeb3[Any], engine: Engine, reverter: Deployed
) -> None:
    operator = sender(w3, engine, 2)
    before = await w3.eth.get_transaction_count(operator.address)

    with pytest.raises(ChainRejected) as refused:
        await operator.send(reverter.address, reverter.calldata("fail", "not today"))
    assert refused.value.reason == "not today"
    with pytest.raises(ChainRejected) as panicked:
        await operator.send(reverter.address, reverter.calldata("divide", 0))
    assert panicked.value.reason == "Panic(0x12): division or modulo by zero"
    with pytest.raises(ChainRejected) as custom:
        await operator.send(reverter.address, reverter.calldata("refuse"))
    selector = AsyncWeb3.keccak(text="Refused(uint256)")[:4].hex()
    assert custom.value.reason == f"custom error 0x{selector}"

    assert await w3.eth.get_transaction_count(operator.address) == before
    assert NonceStore(engine).leased(CHAIN_ID, operator.address) == {}


async def test_a_mined_revert_is_replayed_for_its_reason(
    w3: AsyncWeb3[Any], engine: Engine, reverter: Deployed
) -> None:
    """With the gas given, nothing is estimated: the revert happens on chain."""
    operator = sender(w3, engine, 2)
    broadcasts = spy_broadcasts(w3)
    with pytest.raises(ChainRejected) as refused:
        await operator.send(reverter.address, reverter.calldata("fail", "no way"), gas=100_000)
    assert refused.value.reason == "no way"
    assert "reverted: no way" in refused.value.detail
    [tx] = broadcasts
    receipt = await w3.eth.get_transaction_receipt(tx["hash"])
    assert receipt["status"] == 0  # mined, reverted
    assert refused.value.detail.startswith(f"transaction {tx['hash'].to_0x_hex()} reverted")

    with pytest.raises(ChainRejected) as out_of_gas:
        await operator.send(reverter.address, reverter.calldata("succeed", 1), gas=22_000)
    assert "out of gas" in out_of_gas.value.reason.lower()
    assert NonceStore(engine).leased(CHAIN_ID, operator.address) == {}


async def test_a_transaction_not_mined_in_time_is_replaced_at_the_same_nonce(
    w3: AsyncWeb3[Any], engine: Engine, anvil: Anvil, reverter: Deployed
) -> None:
    operator = sender(w3, engine, 3, SendSettings(receipt_timeout_seconds=0.5, poll_seconds=0.05))
    broadcasts = spy_broadcasts(w3)
    anvil.rpc("evm_setAutomine", False)
    try:
        sending = asyncio.create_task(
            operator.send(reverter.address, reverter.calldata("succeed", 7))
        )
        await broadcasts.wait_for(2)
        anvil.rpc("evm_mine")
        receipt = await asyncio.wait_for(sending, 10)
    finally:
        anvil.rpc("evm_setAutomine", True)

    first, replacement = broadcasts[:2]
    assert replacement["nonce"] == first["nonce"]
    for fee in ("maxFeePerGas", "maxPriorityFeePerGas"):
        assert replacement[fee] >= first[fee] + first[fee] // 8
    mined = [tx for tx in broadcasts if await mined_or_none(w3, tx["hash"]) is not None]
    assert [tx["hash"].to_0x_hex() for tx in mined] == [receipt.tx_hash]
    assert receipt.tx_hash != first["hash"].to_0x_hex()  # the replacement won
    assert await w3.eth.get_transaction_count(operator.address) == first["nonce"] + 1


async def test_a_transaction_never_mined_is_unavailable_and_keeps_its_nonce(
    w3: AsyncWeb3[Any], engine: Engine, anvil: Anvil, reverter: Deployed
) -> None:
    """It was broadcast: its nonce stays leased (it may still be mined), never handed
    out again while the chain's pool holds it."""
    settings = SendSettings(receipt_timeout_seconds=0.2, poll_seconds=0.05, max_replacements=2)
    operator = sender(w3, engine, 8, settings)
    broadcasts = spy_broadcasts(w3)
    anvil.rpc("evm_setAutomine", False)
    try:
        with pytest.raises(ChainUnavailable, match="not mined after 2 replacements"):
            await operator.send(reverter.address, reverter.calldata("succeed", 1))
        [nonce] = {tx["nonce"] for tx in broadcasts}
        assert len(broadcasts) == 3
        nonces = NonceStore(engine)
        assert list(nonces.leased(CHAIN_ID, operator.address)) == [nonce]
        pending = await w3.eth.get_transaction_count(operator.address, "pending")
        assert nonces.reserve(CHAIN_ID, operator.address, pending) == nonce + 1
        anvil.rpc("evm_mine")
    finally:
        anvil.rpc("evm_setAutomine", True)
    assert await w3.eth.get_transaction_count(operator.address) == nonce + 1


async def test_a_transaction_the_node_refuses_gives_its_nonce_back(
    w3: AsyncWeb3[Any], engine: Engine, reverter: Deployed
) -> None:
    operator = sender(w3, engine, 4)
    nonces = NonceStore(engine)
    with pytest.raises(NodeUnavailable) as refused:
        await operator.send(operator.address, b"", gas=21_000, value=10**30)
    assert refused.value.cause.lower().startswith("eth_sendrawtransaction: insufficient")
    assert nonces.leased(CHAIN_ID, operator.address) == {0: None}  # given back

    receipt = await operator.send(reverter.address, reverter.calldata("succeed", 1))
    assert (await w3.eth.get_transaction(HexBytes(receipt.tx_hash)))["nonce"] == 0


async def test_a_nonce_another_transaction_took_is_given_up_for_a_new_one(
    w3: AsyncWeb3[Any], engine: Engine, anvil: Anvil, reverter: Deployed
) -> None:
    """The key is used elsewhere: a stranger outbids our transaction at its nonce. The
    sender sees its nonce mined with none of its hashes, and sends again."""
    operator = sender(w3, engine, 5, SendSettings(receipt_timeout_seconds=30, poll_seconds=0.05))
    broadcasts = spy_broadcasts(w3)
    anvil.rpc("evm_setAutomine", False)
    try:
        sending = asyncio.create_task(
            operator.send(reverter.address, reverter.calldata("succeed", 5))
        )
        await broadcasts.wait_for(1)
        ours = broadcasts[0]
        stranger = Account.sign_transaction(
            {
                "type": 2,
                "chainId": CHAIN_ID,
                "nonce": ours["nonce"],
                "to": operator.address,
                "value": 0,
                "gas": 21_000,
                "maxFeePerGas": ours["maxFeePerGas"] * 2,
                "maxPriorityFeePerGas": ours["maxPriorityFeePerGas"] * 2,
            },
            dev_key(5),
        )
        anvil.rpc("eth_sendRawTransaction", stranger.raw_transaction.to_0x_hex())
        anvil.rpc("evm_mine")
        anvil.rpc("evm_setAutomine", True)
        receipt = await asyncio.wait_for(sending, 10)
    finally:
        anvil.rpc("evm_setAutomine", True)
    assert await mined_or_none(w3, ours["hash"]) is None
    assert (await w3.eth.get_transaction(HexBytes(receipt.tx_hash)))["nonce"] == ours["nonce"] + 1
    assert NonceStore(engine).leased(CHAIN_ID, operator.address) == {}


async def test_a_transaction_counts_once_confirmed(
    w3: AsyncWeb3[Any], engine: Engine, anvil: Anvil, reverter: Deployed
) -> None:
    operator = sender(w3, engine, 9, SendSettings(confirmations=3, poll_seconds=0.05))
    broadcasts = spy_broadcasts(w3)
    sending = asyncio.create_task(operator.send(reverter.address, reverter.calldata("succeed", 3)))
    await broadcasts.wait_for(1)
    mined = await w3.eth.wait_for_transaction_receipt(broadcasts[0]["hash"], timeout=10)
    anvil.rpc("evm_mine")
    await asyncio.sleep(0.3)
    assert not sending.done()  # mined, and one block on top: two confirmations of three
    anvil.rpc("evm_mine")
    receipt = await asyncio.wait_for(sending, 10)
    assert receipt.block_number == mined["blockNumber"]
    assert await w3.eth.block_number == receipt.block_number + 2


async def test_a_node_that_does_not_answer_is_unavailable(engine: Engine) -> None:
    """Asked again a bounded number of times (the waits noted, not slept), then given up."""
    silent = AsyncWeb3(AsyncHTTPProvider(f"http://127.0.0.1:{free_port()}"))
    waits: list[float] = []

    async def note(seconds: float) -> None:
        waits.append(seconds)

    operator = TransactionSender(
        silent,
        CHAIN_ID,
        LocalKeySigner(dev_key(9)),
        NonceStore(engine),
        FAST,
        address=OPERATOR_9,
        retry=RetryPolicy(sleep=note),
    )
    with pytest.raises(NodeUnavailable) as fees:
        await operator.send(OPERATOR_9, b"", gas=21_000)
    assert fees.value.cause.startswith("reading the fees: ")
    assert len(waits) == RETRIES
    with pytest.raises(NodeUnavailable) as gas:
        await operator.send(OPERATOR_9, b"")
    assert gas.value.cause.startswith("eth_estimateGas: ")
    assert str(gas.value) == NODE_DID_NOT_ANSWER
    assert len(waits) == 2 * RETRIES
    assert NonceStore(engine).leased(CHAIN_ID, OPERATOR_9) == {}
    await silent.provider.disconnect()


class UnreachableSigner:
    """A remote signer that is down: it knows its address, and signs nothing."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.asked = 0

    async def sign_transaction(self, tx: Mapping[str, int | str]) -> SignedTransaction:
        self.asked += 1
        raise ChainUnavailable("the signer did not answer")

    async def sign_message(self, message: bytes) -> bytes:
        raise ChainUnavailable("the signer did not answer")


async def test_a_signer_that_cannot_sign_sends_nothing_and_gives_its_nonce_back(
    w3: AsyncWeb3[Any], engine: Engine, reverter: Deployed
) -> None:
    # Account 10: no other test on this session's anvil sends from it, so its nonces are
    # this test's alone (test_nonce_replicas.py counts accounts 6 and 7 from zero).
    local = LocalKeySigner(dev_key(10))
    address = Account.from_key(dev_key(10)).address
    down = UnreachableSigner(address)
    nonces = NonceStore(engine)
    before = await w3.eth.get_transaction_count(address, "pending")
    unavailable = TransactionSender(w3, CHAIN_ID, down, nonces, FAST)
    with pytest.raises(ChainUnavailable, match="the signer did not answer"):
        await unavailable.send(reverter.address, reverter.calldata("succeed", 1))
    assert down.asked == 1
    assert nonces.leased(CHAIN_ID, address) == {before: None}  # given back
    assert await w3.eth.get_transaction_count(address, "pending") == before

    operator = TransactionSender(w3, CHAIN_ID, local, nonces, FAST)
    receipt = await operator.send(reverter.address, reverter.calldata("succeed", 1))
    assert (await w3.eth.get_transaction(HexBytes(receipt.tx_hash)))["nonce"] == before


async def test_a_receipt_the_node_fails_to_give_is_no_stranger_and_sends_nothing_again(
    w3: AsyncWeb3[Any], engine: Engine, anvil: Anvil, reverter: Deployed
) -> None:
    """The nonce is used and the node fails to answer for our receipt: ours may be the one
    mined, so the sender asks again rather than sending the call at a new nonce (which
    would make it twice)."""
    operator = sender(w3, engine, 4, SendSettings(receipt_timeout_seconds=5, poll_seconds=0.05))
    broadcasts = spy_broadcasts(w3)
    receipt_of = w3.eth.get_transaction_receipt
    failures = 0

    async def flaky_receipt(tx_hash: Any) -> Any:
        nonlocal failures
        if failures < 4:  # the node mined ours, then fails to answer for it a while
            failures += 1
            raise TimeoutError("the node did not answer")
        return await receipt_of(tx_hash)

    w3.eth.get_transaction_receipt = flaky_receipt  # type: ignore[method-assign,assignment]
    receipt = await asyncio.wait_for(
        operator.send(reverter.address, reverter.calldata("succeed", 7)), 10
    )

    assert failures == 4
    assert len(broadcasts) == 1
    assert receipt.tx_hash == broadcasts[0]["hash"].to_0x_hex()
    assert await w3.eth.get_transaction_count(operator.address) == broadcasts[0]["nonce"] + 1
