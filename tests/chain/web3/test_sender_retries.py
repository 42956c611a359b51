"""The sender and the adapter against a node that fails for a moment (``support.flaky_node``
in front of the test anvil): a 429 with its Retry-After, a 503, a dropped connection, a
timeout and an error body are each asked again, after the waits the policy asks for, and
the call goes through; a broadcast whose answer was lost is sent again with the same bytes
and counts once; a "nonce too low" after it is believed only once the chain shows a
stranger's transaction; the node's words and URL reach no log line."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import ClientTimeout
from eth_account import Account
from eth_account.typed_transactions.typed_transaction import TypedTransaction
from eth_utils.crypto import keccak
from hexbytes import HexBytes
from sqlalchemy import Engine
from web3 import AsyncHTTPProvider, AsyncWeb3

from support.anvil import CHAIN_ID, Anvil, Deployed, dev_key
from support.flaky_node import Failure, FlakyNode
from yieldagent.chain.signers.local import LocalKeySigner
from yieldagent.chain.web3.adapter import Web3Chain
from yieldagent.chain.web3.config import Web3ChainConfig
from yieldagent.chain.web3.retries import FIRST_DELAY, RETRIES, RetryPolicy
from yieldagent.chain.web3.transactions import Outgoing, Receipt, SendSettings, TransactionSender
from yieldagent.storage.nonces import NonceStore

pytestmark = [pytest.mark.evm, pytest.mark.sqlite_only]

ACCOUNT = 11  # no other test on the session's anvil sends from it
OPERATOR = Account.from_key(dev_key(ACCOUNT)).address
SECRET = "secret-api-key-0123456789"
CLIENT_TIMEOUT = 0.3  # how long the client waits for an answer that never comes
FAST = SendSettings(receipt_timeout_seconds=5.0, poll_seconds=0.02)
SEND_CALLS = (
    "eth_estimateGas",
    "eth_feeHistory",
    "eth_getTransactionCount",
    "eth_sendRawTransaction",
    "eth_getTransactionReceipt",
    "eth_getBlockByNumber",
)
"""What one send asks of the node, in order."""
MOMENTARY = [
    Failure.RATE_LIMITED,
    Failure.UNAVAILABLE,
    Failure.DROPPED,
    Failure.TIMEOUT,
    Failure.ERROR_BODY,
]


class Waits(list[float]):
    """The waits the retry policy asked for, in order (none is slept)."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
async def flaky(anvil: Anvil) -> AsyncIterator[FlakyNode]:
    node = await FlakyNode(anvil.url).start()
    yield node
    await node.stop()


@pytest.fixture
async def w3(flaky: FlakyNode) -> AsyncIterator[AsyncWeb3[Any]]:
    """A client of the flaky node, through a URL with a provider's key in it, built as the
    adapter builds its own (web3's validation off) but with web3's retries left on: the
    sender turns them off."""
    provider = AsyncHTTPProvider(
        f"{flaky.url}/v2/{SECRET}", request_kwargs={"timeout": ClientTimeout(total=CLIENT_TIMEOUT)}
    )
    client = AsyncWeb3(provider)
    client.middleware_onion.remove("validation")
    yield client
    await client.provider.disconnect()


def _sender(
    w3: AsyncWeb3[Any], engine: Engine, waits: Waits, settings: SendSettings = FAST
) -> TransactionSender:
    policy = RetryPolicy(sleep=waits, jitter=lambda: 0.0)
    signer = LocalKeySigner(dev_key(ACCOUNT))
    return TransactionSender(w3, CHAIN_ID, signer, NonceStore(engine), settings, retry=policy)


def _mined_count(anvil: Anvil) -> int:
    return int(anvil.rpc("eth_getTransactionCount", OPERATOR, "latest"), 16)


def _raw_hash(request: dict[str, Any]) -> str:
    """The hash of the signed transaction an ``eth_sendRawTransaction`` request carries."""
    return HexBytes(keccak(HexBytes(request["params"][0]))).to_0x_hex()


def _input_of(anvil: Anvil, tx_hash: str) -> str:
    return str(anvil.rpc("eth_getTransactionByHash", tx_hash)["input"])


@pytest.mark.parametrize("failure", MOMENTARY, ids=[f.value for f in MOMENTARY])
async def test_a_send_outlasts_a_node_failing_each_of_its_calls_for_a_moment(
    w3: AsyncWeb3[Any],
    flaky: FlakyNode,
    anvil: Anvil,
    engine: Engine,
    reverter: Deployed,
    failure: Failure,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="yieldagent")
    for method in SEND_CALLS:
        flaky.script(method, failure)
    waits = Waits()
    operator = _sender(w3, engine, waits)
    before = _mined_count(anvil)

    receipt = await operator.send(reverter.address, reverter.calldata("succeed", 11))

    assert [method for method, _ in flaky.failed] == list(SEND_CALLS)
    expected = float(flaky.retry_after) if failure is Failure.RATE_LIMITED else FIRST_DELAY
    assert waits == [expected] * len(SEND_CALLS)  # each call asked again once, after its wait
    assert _mined_count(anvil) == before + 1
    assert {_raw_hash(r) for r in flaky.forwarded_of("eth_sendRawTransaction")} == {receipt.tx_hash}
    assert NonceStore(engine).leased(CHAIN_ID, OPERATOR) == {}
    retried = [r for r in caplog.records if r.getMessage() == "node call retried"]
    assert [getattr(r, "call", "") for r in retried] == list(SEND_CALLS)  # one line each
    for record in caplog.records:  # neither the URL (with its key) nor the node's words
        told = f"{record.getMessage()} {record.__dict__}"
        assert SECRET not in told and "127.0.0.1" not in told and "internal error" not in told


@pytest.mark.parametrize(
    "failure",
    [Failure.FORWARDED_THEN_DROPPED, Failure.FORWARDED_THEN_TIMEOUT],
    ids=["dropped", "timeout"],
)
async def test_a_broadcast_the_node_took_before_its_answer_was_lost_counts_once(
    w3: AsyncWeb3[Any],
    flaky: FlakyNode,
    anvil: Anvil,
    engine: Engine,
    reverter: Deployed,
    failure: Failure,
) -> None:
    """anvil mines the first attempt at once; the same bytes again are "nonce too low",
    which here means our own transaction was mined: the sender finds its receipt, and
    signs nothing new."""
    flaky.script("eth_sendRawTransaction", failure)
    waits = Waits()
    operator = _sender(w3, engine, waits)
    before = _mined_count(anvil)

    receipt = await operator.send(reverter.address, reverter.calldata("succeed", 12))

    first, again = flaky.forwarded_of("eth_sendRawTransaction")
    assert again["params"] == first["params"]  # the same signed bytes, nothing re-signed
    assert receipt.tx_hash == _raw_hash(first)
    assert _mined_count(anvil) == before + 1
    assert waits == [FIRST_DELAY]
    assert NonceStore(engine).leased(CHAIN_ID, OPERATOR) == {}


async def test_a_pipelined_batch_whose_broadcasts_fail_is_mined_once_each(
    w3: AsyncWeb3[Any], flaky: FlakyNode, anvil: Anvil, engine: Engine, reverter: Deployed
) -> None:
    flaky.script(
        "eth_sendRawTransaction",
        Failure.FORWARDED_THEN_DROPPED,
        Failure.RATE_LIMITED,
        Failure.ERROR_BODY,
    )
    flaky.script("eth_getTransactionCount", Failure.UNAVAILABLE, Failure.DROPPED)
    flaky.script("eth_getTransactionReceipt", Failure.TIMEOUT)
    outgoing = [
        Outgoing(reverter.address, reverter.calldata("succeed", n), 100_000) for n in (1, 2, 3)
    ]
    operator = _sender(w3, engine, Waits())
    before = _mined_count(anvil)

    results = await operator.send_many(outgoing)

    receipts = [r for r in results if isinstance(r, Receipt)]
    assert len(receipts) == 3
    assert _mined_count(anvil) == before + 3  # no filler, nothing sent twice
    mined = Counter(_input_of(anvil, r.tx_hash) for r in receipts)
    assert mined == Counter(str(o.data) for o in outgoing)
    assert len({_raw_hash(r) for r in flaky.forwarded_of("eth_sendRawTransaction")}) == 3
    assert NonceStore(engine).leased(CHAIN_ID, OPERATOR) == {}


async def test_a_nonce_too_low_after_a_failed_attempt_is_a_strangers_only_on_the_chains_word(
    w3: AsyncWeb3[Any], flaky: FlakyNode, anvil: Anvil, engine: Engine, reverter: Deployed
) -> None:
    """While the node refuses our first attempt (429), another holder of the key mines a
    transaction at our nonce. The "nonce too low" that follows could be about our own
    attempt; the chain shows ours unmined on two looks, so the call is sent at the next
    nonce, once."""
    taken: list[int] = []

    def stranger(request: dict[str, Any]) -> None:
        ours = TypedTransaction.from_bytes(HexBytes(request["params"][0])).as_dict()
        signed = Account.sign_transaction(
            {
                "type": 2,
                "chainId": CHAIN_ID,
                "nonce": ours["nonce"],
                "to": OPERATOR,
                "value": 0,
                "gas": 21_000,
                "maxFeePerGas": ours["maxFeePerGas"] * 2,
                "maxPriorityFeePerGas": ours["maxPriorityFeePerGas"] * 2,
            },
            dev_key(ACCOUNT),
        )
        anvil.rpc("eth_sendRawTransaction", signed.raw_transaction.to_0x_hex())
        taken.append(int(ours["nonce"]))

    flaky.script("eth_sendRawTransaction", Failure.RATE_LIMITED, on_fail=stranger)
    operator = _sender(w3, engine, Waits())
    data = reverter.calldata("succeed", 13)

    receipt = await operator.send(reverter.address, data)

    [nonce] = taken
    first = flaky.forwarded_of("eth_sendRawTransaction")[0]
    assert anvil.rpc("eth_getTransactionReceipt", _raw_hash(first)) is None  # ours: never mined
    mined = anvil.rpc("eth_getTransactionByHash", receipt.tx_hash)
    assert int(mined["nonce"], 16) == nonce + 1 and mined["input"] == data
    assert _mined_count(anvil) == nonce + 2  # the stranger's, then ours: the call once
    assert NonceStore(engine).leased(CHAIN_ID, OPERATOR) == {}


async def test_a_broadcast_that_never_got_through_is_replaced_at_its_nonce(
    w3: AsyncWeb3[Any], flaky: FlakyNode, anvil: Anvil, engine: Engine, reverter: Deployed
) -> None:
    """Every attempt fails: the transaction may have arrived, so its nonce is kept and its
    hash watched; once the receipt timeout passes it is replaced at the same nonce, which
    the node, back by then, takes."""
    flaky.script("eth_sendRawTransaction", *[Failure.DROPPED] * (RETRIES + 1))
    waits = Waits()
    settings = SendSettings(receipt_timeout_seconds=0.3, poll_seconds=0.02)
    operator = _sender(w3, engine, waits, settings)
    before = _mined_count(anvil)

    receipt = await operator.send(reverter.address, reverter.calldata("succeed", 14))

    assert waits == [FIRST_DELAY * 2**n for n in range(RETRIES)]
    [replacement] = flaky.forwarded_of("eth_sendRawTransaction")
    assert receipt.tx_hash == _raw_hash(replacement)
    assert int(anvil.rpc("eth_getTransactionByHash", receipt.tx_hash)["nonce"], 16) == before
    assert _mined_count(anvil) == before + 1
    assert NonceStore(engine).leased(CHAIN_ID, OPERATOR) == {}


class _Operator:
    address = OPERATOR


async def test_the_adapters_estimate_and_fee_reading_outlast_a_failing_node(
    w3: AsyncWeb3[Any], flaky: FlakyNode, reverter: Deployed
) -> None:
    config = Web3ChainConfig(CHAIN_ID, reverter.address, "USDC", 6, protocols=())
    waits = Waits()
    chain = Web3Chain(w3, config, _Operator(), RetryPolicy(sleep=waits, jitter=lambda: 0.0))  # type: ignore[arg-type]
    flaky.script("eth_estimateGas", Failure.RATE_LIMITED, Failure.UNAVAILABLE)
    flaky.script("eth_feeHistory", Failure.DROPPED, Failure.ERROR_BODY)

    gas = await chain._gas(reverter.address, HexBytes(reverter.calldata("succeed", 1)))
    cost = await chain.gas_cost("supply")

    assert gas > 21_000 and cost.wei > 0
    assert waits == [float(flaky.retry_after), 2 * FIRST_DELAY, FIRST_DELAY, 2 * FIRST_DELAY]


async def test_the_adapters_node_client_leaves_asking_again_to_the_policy(engine: Engine) -> None:
    config = Web3ChainConfig(CHAIN_ID, OPERATOR, "USDC", 6, protocols=())
    chain = Web3Chain.connect(
        "http://127.0.0.1:9", config, LocalKeySigner(dev_key(ACCOUNT)), NonceStore(engine)
    )
    provider = chain.w3.provider
    assert isinstance(provider, AsyncHTTPProvider)
    assert provider.exception_retry_configuration is None
