"""The chain port on a real EVM chain: web3.py ``AsyncWeb3`` against a JSON-RPC node.

Reads go through the batched ``RpcReader`` (one JSON-RPC request per block for a whole
quote); every state change is one ordinary transaction from the operator, sent by the
``TransactionSender`` (EIP-1559 fees, nonce leases, replacement, revert reasons):

a Safe account is deployed through Safe's ``SafeProxyFactory.createProxyWithNonce``
(``prepare_account``), and acted for only through the operator module: ``execute`` for
supplies, withdrawals, claims and reward swaps (the module approves exactly what a call
supplies or sells, and takes the approval back), ``pay`` for the owner's payout and its
fee. Whether the owner still lets the module act is ``revocation``. A chain whose
deployment names no module takes no writes. Kernel (``zerodev``) accounts are refused
(``check_account``): no registry package ships Kernel's bytecode, and the service sends no
UserOperations. A mined supply, withdrawal, transfer or swap is checked against its
receipt: the token must have moved as asked, or ``ChainRejected`` says what did not happen.

Receipts carry the log index of the step's own transfer (``TxReceipt.log_index``), which is
how the history names that event.

Every call to the node, the reader's, the sender's and the adapter's own (the gas estimate,
the fee history), is asked again by one ``retries.RetryPolicy`` while the node fails for a
moment; web3's own retries are off.

The module is longer than the house's usual because ``Web3Chain`` is the whole chain port
on one chain: its reads, calls and protocol encoders already live in ``reader.py``,
``transactions.py`` and ``protocols/``, and what remains here is one method per port
operation, which reads best as one class.

One module, longer than the house's usual: it is the whole port on one chain, each method a
few lines over the protocol classes (``protocols/``), the reader, the history and the
sender, which hold the substance.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from hexbytes import HexBytes
from web3 import AsyncHTTPProvider, AsyncWeb3

from yieldagent.chain.web3.abis import (
    APPROVE,
    BALANCE_OF,
    DECIMALS,
    FEED_LATEST_ROUND_DATA,
    MODULE_ACCOUNTS,
    MODULE_EXECUTE,
    MODULE_PAY,
    REWARDS_CLAIM,
    REWARDS_OWED,
    ROUTER_AMOUNT_OUT,
    ROUTER_SWAP,
    SAFE_CREATE_PROXY,
    SAFE_IS_MODULE_ENABLED,
    SYMBOL,
    Fn,
    custom_error,
    custom_error_named,
)
from yieldagent.chain.web3.config import Web3ChainConfig
from yieldagent.chain.web3.fees import FeeSettings, fees_from_history
from yieldagent.chain.web3.fleet import Holding, holdings
from yieldagent.chain.web3.history import (
    ZERO_ADDRESS,
    Counterparties,
    TransferLog,
    accounts_touched,
    block_ranges,
    classify,
    fleet_transfer_logs,
    parse_transfer,
    transfer_logs,
)
from yieldagent.chain.web3.multicall import Multicall
from yieldagent.chain.web3.node_answers import (
    CHAIN_ERRORS,
    node_unavailable,
    redacted,
)
from yieldagent.chain.web3.per_block import PerBlock
from yieldagent.chain.web3.protocols import CometPool, LendingPool, pool_for
from yieldagent.chain.web3.protocols.aave import AavePool
from yieldagent.chain.web3.protocols.base import Call, approve
from yieldagent.chain.web3.protocols.moonwell import MTokenPool
from yieldagent.chain.web3.protocols.morpho import VaultPool
from yieldagent.chain.web3.reader import ReadReverted, RpcReader, read
from yieldagent.chain.web3.retries import RetryPolicy, only_the_policy_retries
from yieldagent.chain.web3.reverts import revert_data, revert_reason
from yieldagent.chain.web3.transactions import (
    Outgoing,
    Receipt,
    SendSettings,
    TransactionSender,
)
from yieldagent.domain.errors import (
    ChainRejected,
    ChainUnavailable,
    Conflict,
    InvalidRequest,
    NotImplementedYet,
    YieldAgentError,
)
from yieldagent.domain.market.history import Snapshot
from yieldagent.domain.market.quotes import PoolQuote
from yieldagent.domain.market.readings import CollateralFeed, PoolReading, SequencerStatus
from yieldagent.domain.partners.safe_accounts import create_proxy_calldata, safe_account_address
from yieldagent.domain.ports.accounts import Provider, SmartAccount
from yieldagent.domain.ports.chain import (
    Block,
    ChainKind,
    ChainTx,
    ClaimReceipt,
    ContractCall,
    GasCost,
    Position,
    RewardAmount,
    Send,
    SwapReceipt,
    Transfer,
    TxReceipt,
)
from yieldagent.domain.ports.nonces import NonceSource
from yieldagent.domain.ports.signer import Signer

ENABLED_MODULE_TOPIC = "0x" + keccak(text="EnabledModule(address)").hex()
DISABLED_MODULE_TOPIC = "0x" + keccak(text="DisabledModule(address)").hex()
"""Safe's module events (the module indexed)."""

GAS_UNITS = {
    "supply": 260_000,
    "withdraw": 260_000,
    "swap": 200_000,
    "transfer": 90_000,
    "claim": 200_000,
    "deploy": 400_000,
}
"""Gas units of each action before one was measured on this chain (an account's execute
included)."""
WEI_PER_ETHER = 10**18
GAS_MARGIN_PERCENT = 150
GAS_HEADROOM = 30_000
DEPLOY_GAS_MARGIN_PERCENT = 20
"""The margin on an account's deployment estimate: the sender's own (``SendSettings``); a
deployment accrues no interest, so it needs none of a move's headroom."""


class Sender(Protocol):
    """What the adapter needs of ``transactions.TransactionSender``."""

    @property
    def address(self) -> str:
        """The operator's address: the session key of every account."""

    async def send(self, to: str, data: bytes | str, *, gas: int | None = None) -> Receipt:
        """Sends ``data`` to ``to``; the receipt once mined (ChainRejected if reverted)."""

    async def send_many(self, outgoing: Sequence[Outgoing]) -> list[Receipt | YieldAgentError]:
        """Sends every transaction at once, pipelined; each one's receipt or error."""


log = logging.getLogger("yieldagent.chain")


@dataclass(frozen=True, slots=True)
class _Feed:
    """A pegged collateral's price feed as resolved: its peg in the feed's own units and
    the collateral's symbol (what the depeg guard's reason names)."""

    address: str
    peg: int
    symbol: str


async def _none() -> None:
    """Nothing to read (a chain's feeds when no pool needs them)."""
    return None


def _collateral(feed: _Feed, answer: tuple[int, int] | None) -> CollateralFeed:
    """What the depeg guard reads of a feed's answer (price, when), or of a feed that could
    not be read (None)."""
    if answer is None:
        return CollateralFeed(feed.symbol, 0, feed.peg, readable=False)
    price, updated_at = answer
    return CollateralFeed(feed.symbol, price, feed.peg, updated_at)


@dataclass(frozen=True, slots=True)
class _Reward:
    """The reward token's facts."""

    symbol: str
    decimals: int


class Web3Chain:
    """One EVM chain behind the chain port (see the module's docstring)."""

    def __init__(
        self,
        w3: AsyncWeb3[Any],
        config: Web3ChainConfig,
        sender: Sender,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.w3 = w3
        only_the_policy_retries(w3)
        self.config = config
        self.chain_id = config.chain_id
        self.retry = retry or RetryPolicy()
        """When a failed node call is asked again: the reader's and the adapter's own."""
        self.reader = RpcReader(w3, retry=self.retry)
        self._sender = sender
        self.pools: dict[str, LendingPool] = {
            p.name: pool_for(self.reader, config.token, p) for p in config.protocols
        }
        self._parties: Counterparties | None = None
        self._reward: _Reward | None = None
        self._feeds: dict[str, _Feed] = {}
        """The configured collateral feeds, by collateral token (after ``_ready``)."""
        self._resolving = asyncio.Lock()
        self.gas_used: dict[str, int] = {}
        """Gas each action used the last time it was mined here."""
        self.multicall = Multicall(self.reader, config.multicall_batch)
        self._kept: tuple[float, Block] | None = None
        """The head last read and when (``time.monotonic``), kept ``head_reuse_seconds``."""
        self._heading: asyncio.Future[Block] | None = None
        """The head read in flight: callers meanwhile share it."""
        self._hashes: dict[int, str] = {}
        """The hash of the newest head read, by its number."""
        self._quoted: PerBlock[PoolQuote] = PerBlock()
        """Each pool's quote at the newest block quoted (the market read once per block)."""
        self._read_for_guards: PerBlock[list[PoolReading]] = PerBlock()
        """The guards' readings at the newest block read."""

    @classmethod
    def connect(
        cls,
        url: str,
        config: Web3ChainConfig,
        signer: Signer,
        nonces: NonceSource,
        settings: SendSettings | None = None,
    ) -> Web3Chain:
        """The adapter of the node at ``url``: its operator signs with ``signer`` (the
        signer port, ``chain.operator.load_operator_wallet``) and leases nonces from ``nonces``
        (the nonce port; the composition root passes ``storage.nonces.NonceStore``)."""
        # web3 logs the node's URL, which often holds a provider's API key, at DEBUG and
        # INFO (each batch, each disconnect): its lines are kept to warnings and worse.
        logging.getLogger("web3").setLevel(max(logging.getLogger("web3").level, logging.WARNING))
        w3 = AsyncWeb3(AsyncHTTPProvider(url))
        # web3's validation asks the node for its chain id twice around every eth_call and
        # eth_estimateGas (three requests for one); the chain id is the configuration's,
        # every transaction is signed with it, and the start-up check reads the node's.
        w3.middleware_onion.remove("validation")
        retry = RetryPolicy()
        sender = TransactionSender(w3, config.chain_id, signer, nonces, settings, retry=retry)
        return cls(w3, config, sender, retry)

    # -- set-up ---------------------------------------------------------------------------

    async def _ready(self) -> Counterparties:
        """Resolves, once, what every pool derives from the chain."""
        if self._parties is not None:
            return self._parties
        async with self._resolving:
            if self._parties is None:
                await asyncio.gather(*(pool.resolve() for pool in self.pools.values()))
                rewards = frozenset(
                    pool.rewards
                    for pool in self.pools.values()
                    if isinstance(pool, CometPool) and pool.rewards
                )
                if self.config.reward_token is not None:
                    symbol, decimals = await self.reader.call_many(
                        [
                            read(self.config.reward_token, SYMBOL),
                            read(self.config.reward_token, DECIMALS),
                        ],
                        "latest",
                    )
                    self._reward = _Reward(str(symbol), int(decimals))
                await self._resolve_feeds()
                self._parties = Counterparties(
                    token=self.config.token,
                    custodies={pool.custody: name for name, pool in self.pools.items()},
                    reward_token=self.config.reward_token,
                    rewards=rewards,
                    router=self.config.swap_router,
                )
        return self._parties

    async def _resolve_feeds(self) -> None:
        """Each configured collateral feed's decimals and its collateral's symbol, once:
        the peg in the feed's units."""
        feeds = self.config.collateral_feeds
        answers = await self.reader.call_many(
            [r for f in feeds for r in (read(f.feed, DECIMALS), read(f.token, SYMBOL))], "latest"
        )
        for i, f in enumerate(feeds):
            decimals, symbol = int(answers[2 * i]), str(answers[2 * i + 1])
            peg = f.peg * 10**decimals
            self._feeds[f.token] = _Feed(f.feed, peg.numerator // peg.denominator, symbol)

    async def _feed_prices(
        self, tokens: Sequence[str], block: Block
    ) -> dict[str, tuple[int, int] | None]:
        """The latest answer of each of ``tokens``' feeds at ``block`` and when it was
        given (a negative answer reads as 0: nothing), or None for a feed that could not
        be read; one request each, sent in one batch."""
        rounds = await asyncio.gather(
            *(
                self.reader.call(self._feeds[t].address, FEED_LATEST_ROUND_DATA, block=block.number)
                for t in tokens
            ),
            return_exceptions=True,
        )
        found: dict[str, tuple[int, int] | None] = {}
        for token, answer in zip(tokens, rounds, strict=True):
            # A feed that reverts, is gone or answers nonsense vouches for nothing: the
            # guard reads it as stale rather than the whole survey failing.
            if isinstance(answer, BaseException):
                if not isinstance(answer, Exception):
                    raise answer
                log.warning("collateral feed unreadable", extra={"token": token})
                found[token] = None
            else:
                found[token] = (max(int(answer[1]), 0), int(answer[3]))
        return found

    def _pool(self, protocol: str, token: str) -> LendingPool:
        if to_checksum_address(token) != self.config.token:
            raise InvalidRequest(f"no pools for {token} on chain {self.chain_id}")
        try:
            return self.pools[protocol]
        except KeyError:
            raise InvalidRequest(f"no {protocol} pool on chain {self.chain_id}") from None

    async def check_account(self, account: SmartAccount) -> None:
        """Refuses a Kernel account, a Safe account the operator key owns, a Safe account
        whose owner revoked the operator (Conflict), and one this chain cannot deploy as it
        was created (see the module docstring)."""
        self._check_kind(account)
        if await self.reader.code(account.address):
            revoked = await self.revocation(account.address)
            if revoked is not None:
                raise Conflict(
                    f"Safe account {account.address}: {revoked}; its owner enables it again "
                    "with one Safe transaction (enableModule)"
                )
            return
        self._deployment(account)

    def _check_kind(self, account: SmartAccount) -> None:
        """Refuses what no state of the chain makes acceptable: a Kernel account, a chain
        without the module, an account the operator key owns."""
        if account.provider == Provider.ZERODEV:
            raise NotImplementedYet(
                f"Kernel (zerodev) account {account.address} cannot be activated on chain "
                f"{self.chain_id}: the service deploys no Kernel account (no registry package "
                "ships its bytecode) and sends no UserOperations. Create a Safe account "
                "(POST /api/v1/proxy/safe/smart-accounts) instead"
            )
        if self.config.module is None:
            raise NotImplementedYet(
                f"Chain {self.chain_id} has no operator module for Safe accounts"
            )
        if account.eoa.lower() == self._sender.address.lower():
            # The module registers no account its operator owns (such an owner would act
            # outside every rule): deployed, the Safe would hold the funds idle for good.
            raise InvalidRequest(
                f"Safe account {account.address} is owned by {account.eoa}, the service's "
                "operator key, for which the operator module acts for no account; create the "
                "account for the user's own EOA"
            )

    def _deployment(self, account: SmartAccount) -> Outgoing:
        """The factory call that deploys ``account`` (not on chain), its gas not measured
        yet; refuses an account this chain cannot deploy as it was created."""
        safe = self.config.safe
        if safe is None:
            raise NotImplementedYet(
                f"Safe account {account.address} is not deployed on chain {self.chain_id}, and "
                "the service cannot deploy one here (no fee collector apart from the operator)"
            )
        constants = replace(safe, fee_collector=account.fee_collector)
        if safe_account_address(account.eoa, account.agent_id, constants) != account.address:
            raise InvalidRequest(
                f"Safe account {account.address} was created with other contracts than chain "
                f"{self.chain_id} has now; create a new account"
            )
        data = create_proxy_calldata(account.eoa, account.agent_id, constants)
        return Outgoing(constants.factory, data, 0)

    async def prepare_account(self, account: SmartAccount) -> None:
        """Deploys a Safe account not on chain yet: ``createProxyWithNonce`` on Safe's
        factory, in an ordinary transaction from the operator. An account with code is left
        alone (a deployment sent before a crash and mined since included), whatever its
        owner did with it since."""
        if account.provider == Provider.SAFE and await self.reader.code(account.address):
            return
        await self.check_account(account)  # not on chain: a Safe this chain can deploy
        deployment = self._deployment(account)
        try:
            receipt = await self._sender.send(deployment.to, deployment.data)
        except ChainRejected:
            if await self.reader.code(account.address):  # deployed meanwhile: by anyone
                return
            raise
        self.gas_used["deploy"] = receipt.gas_used
        self._mined(receipt.block_number)
        if not await self.reader.code(account.address):
            raise ChainRejected(
                f"transaction {receipt.tx_hash} was mined but deployed no account at "
                f"{account.address}",
                "the factory deployed elsewhere",
            )

    async def prepare_accounts(self, accounts: Sequence[SmartAccount]) -> list[Exception | None]:
        """``prepare_account`` of each of ``accounts``, the deployments sent together: their
        code read in one batch, their gas estimated in another, then sent pipelined
        (``TransactionSender.send_many``: consecutive nonces, none awaiting another's
        receipt, so they share blocks). For each, None once it is on chain (whoever
        deployed it), or the error ``prepare_account`` would raise for it."""
        results: list[Exception | None] = [None] * len(accounts)
        codes = await asyncio.gather(
            *(self.reader.code(a.address) for a in accounts), return_exceptions=True
        )
        deploying: list[tuple[int, Outgoing]] = []
        for at, (account, code) in enumerate(zip(accounts, codes, strict=True)):
            if isinstance(code, BaseException):
                results[at] = _failed("reading an account's code", code)
            elif not code or account.provider != Provider.SAFE:
                try:
                    self._check_kind(account)  # a Kernel account is refused, code or not
                    deploying.append((at, self._deployment(account)))
                except Exception as error:  # this account's refusal alone
                    results[at] = error
        gases = await asyncio.gather(
            *(self._deployment_gas(d) for _, d in deploying), return_exceptions=True
        )
        outcomes: dict[int, Receipt | Exception] = {}
        sending: list[tuple[int, Outgoing]] = []
        for (at, deployment), gas in zip(deploying, gases, strict=True):
            if isinstance(gas, BaseException):
                outcomes[at] = _failed("estimating a deployment", gas)
            else:
                sending.append((at, replace(deployment, gas=gas)))
        sent = await self._sender.send_many([d for _, d in sending])
        for (at, _), receipt in zip(sending, sent, strict=True):
            outcomes[at] = receipt
            if isinstance(receipt, Receipt):
                self.gas_used["deploy"] = receipt.gas_used
                self._mined(receipt.block_number)
        after = await asyncio.gather(
            *(self.reader.code(accounts[at].address) for at in outcomes), return_exceptions=True
        )
        for (at, outcome), code in zip(outcomes.items(), after, strict=True):
            if code and not isinstance(code, BaseException):
                continue  # on chain: by this deployment, or by anyone's meanwhile
            if isinstance(outcome, Exception):
                results[at] = outcome
            elif isinstance(code, BaseException):
                results[at] = _failed("reading an account's code", code)
            else:
                results[at] = ChainRejected(
                    f"transaction {outcome.tx_hash} was mined but deployed no account at "
                    f"{accounts[at].address}",
                    "the factory deployed elsewhere",
                )
        return results

    async def _deployment_gas(self, deployment: Outgoing) -> int:
        """The gas limit of a deployment: the node's estimate with the sender's margin."""
        estimate = await self._estimated(deployment.to, deployment.data, SAFE_CREATE_PROXY)
        return estimate + estimate * DEPLOY_GAS_MARGIN_PERCENT // 100

    async def revocation(self, holder: str) -> str | None:
        """Why the operator module can no longer act for the Safe ``holder`` (its owner
        disabled it), or None: also for an account not deployed yet, or on a chain without
        the module."""
        module = self.config.module
        if module is None or not await self.reader.code(holder):
            return None
        enabled = await self.reader.call(holder, SAFE_IS_MODULE_ENABLED, module)
        if enabled:
            return None
        return f"the operator module {module} is disabled on the Safe"

    async def module_toggled(self, from_block: int, to_block: int) -> set[str]:
        """The Safes that enabled or disabled the operator module in ``from_block`` to
        ``to_block``: Safe's ``EnabledModule(address indexed module)`` and
        ``DisabledModule`` logs naming the module, from any address, in ranges of
        ``log_range`` blocks sent in one JSON-RPC batch (``domain.ports.chain.ModuleWatch``)."""
        module = self.config.module
        if module is None or to_block < from_block:
            return set()
        topic = "0x" + bytes(12).hex() + module.removeprefix("0x").lower()
        ranges = block_ranges(from_block, to_block, self.config.log_range)
        found = await asyncio.gather(
            *(
                self.reader.request(
                    "eth_getLogs",
                    [
                        {
                            "fromBlock": hex(low),
                            "toBlock": hex(high),
                            "topics": [[ENABLED_MODULE_TOPIC, DISABLED_MODULE_TOPIC], topic],
                        }
                    ],
                )
                for low, high in ranges
            )
        )
        return {to_checksum_address(log["address"]) for logs in found for log in logs}

    # -- reads ----------------------------------------------------------------------------

    async def head(self) -> Block:
        """The latest block; its ``final`` is the newest with ``confirmations`` blocks
        (its own included), which the books take as final. A head read within the last
        ``head_reuse_seconds`` is answered again (and concurrent callers share one read),
        so the reads made meanwhile are pinned to one mined block."""
        kept = self._kept
        if kept is not None and time.monotonic() - kept[0] < self.config.head_reuse_seconds:
            return kept[1]
        if self._heading is None:
            self._heading = asyncio.ensure_future(self._read_head())
        heading = self._heading
        try:
            return await asyncio.shield(heading)
        finally:
            if heading.done() and self._heading is heading:
                self._heading = None

    async def _read_head(self) -> Block:
        raw = await self.reader.request("eth_getBlockByNumber", ["latest", False])
        if raw is None:
            raise ChainUnavailable("the node knows no latest block")
        number, block_hash = int(raw["number"], 16), str(raw.get("hash"))
        if self._hashes.get(number, block_hash) != block_hash or any(
            n > number for n in self._hashes
        ):
            # a reorganisation: what was read of the blocks it replaced is dropped
            self._quoted.clear()
            self._read_for_guards.clear()
        self._hashes = {number: block_hash}
        final = max(number - self.config.confirmations + 1, 0)
        head = Block(number, int(raw["timestamp"], 16), final)
        self._kept = (time.monotonic(), head)
        return head

    def _mined(self, block_number: int) -> None:
        """A transaction of ours was mined at ``block_number``: a kept head before it is
        dropped, so what is read next sees it."""
        kept = self._kept
        if kept is not None and kept[1].number < block_number:
            self._kept = None

    async def token_balance(self, token: str, holder: str) -> int:
        block = await self.head()
        return int(await self.reader.call(token, BALANCE_OF, holder, block=block.number))

    async def holdings(self, token: str, holders: Sequence[str]) -> dict[str, Holding]:
        """Each holder's balance of ``token`` and positions in its pools, at the (kept)
        head, through Multicall3 in batches (``chain.web3.fleet``); a holder whose reads
        failed is left out (``domain.ports.chain.BatchReads``)."""
        block = await self.head()
        if to_checksum_address(token) != self.config.token:
            balances = await self.multicall.read_all(
                [read(token, BALANCE_OF, to_checksum_address(h)) for h in holders], block.number
            )
            return {
                h: (int(b), [])
                for h, b in zip(holders, balances, strict=True)
                if isinstance(b, int)
            }
        await self._ready()
        return await holdings(self.multicall, self.config.token, self.pools, holders, block.number)

    async def positions(self, holder: str, token: str) -> list[Position]:
        if to_checksum_address(token) != self.config.token:
            return []
        await self._ready()
        block = await self.head()
        amounts = await asyncio.gather(
            *(pool.position(holder, block.number) for pool in self.pools.values())
        )
        return [
            Position(name, self.config.token, amount)
            for name, amount in zip(self.pools, amounts, strict=True)
            if amount > 0
        ]

    async def history(self, holder: str, since_block: int) -> list[ChainTx]:
        parties = await self._ready()
        head = await self.head()
        logs = await transfer_logs(
            self.reader, parties.watched, holder, since_block, head.number, self.config.log_range
        )
        return classify(holder, logs, parties)

    async def histories(self, holders: Sequence[str], since_block: int) -> dict[str, list[ChainTx]]:
        """``history`` of each of ``holders``, read for all of them at once: the token's
        and the reward token's ``Transfer`` logs from or to any of them, in one JSON-RPC
        batch (``domain.ports.chain.BatchHistory``)."""
        parties = await self._ready()
        head = await self.head()
        logs = await fleet_transfer_logs(
            self.reader,
            parties.watched,
            holders,
            since_block,
            head.number,
            self.config.log_range,
            self.config.log_address_batch,
        )
        return {holder: classify(holder, logs[holder], parties) for holder in holders}

    async def transfers_touching(
        self, accounts: Sequence[str], from_block: int, to_block: int
    ) -> dict[str, int]:
        """Which of ``accounts`` sent or received the token or the reward token (what
        their histories are made of) in ``from_block`` to ``to_block``, each with its
        first such block (``domain.ports.chain.TransferWatch``).

        The node filters: per ``log_range`` blocks, one ``eth_getLogs`` each way names up
        to ``log_address_batch`` accounts in the sender or the recipient topic. Reading
        the tokens' every transfer and keeping the fleet's would cost nothing per wallet
        but, on a chain where the token moves thousands of times a block (USDC on Base),
        carry each of those logs over the network; named topics bring back only the
        fleet's, at two requests per range for each ``log_address_batch`` wallets."""
        if to_block < from_block or not accounts:
            return {}
        parties = await self._ready()
        return await accounts_touched(
            self.reader,
            parties.watched,
            accounts,
            from_block,
            to_block,
            self.config.log_range,
            self.config.log_address_batch,
        )

    async def find_transfer(self, tx_hash: str) -> Transfer | None:
        """The first transfer of the chain's token (else of any token) that the mined,
        successful transaction ``tx_hash`` made. Whether it has its confirmations is the
        caller's to check against ``head().final``."""
        receipt = await self.reader.request("eth_getTransactionReceipt", [tx_hash])
        if receipt is None or int(receipt.get("status", "0x1"), 16) != 1:
            return None
        block = await self.reader.block(int(receipt["blockNumber"], 16))
        transfers = [
            t for log in receipt["logs"] if (t := parse_transfer(log, block.timestamp)) is not None
        ]
        if not transfers:
            return None
        chosen = next((t for t in transfers if t.token == self.config.token), transfers[0])
        return Transfer(
            chosen.tx_hash,
            chosen.token,
            chosen.sender,
            chosen.recipient,
            chosen.amount,
            chosen.block_number,
            chosen.timestamp,
            chosen.log_index,
        )

    async def quotes(self, token: str, protocols: Sequence[str]) -> list[PoolQuote]:
        if to_checksum_address(token) != self.config.token:
            return []
        await self._ready()
        wanted = [pool for name, pool in self.pools.items() if name in set(protocols)]
        block = await self.head()
        quotes = await asyncio.gather(*(self._quote(pool, block) for pool in wanted))
        # The service collects rewards from Comets with a rewards contract only; their
        # emission rate is not read (None: unknown). Elsewhere a depositor through the
        # service earns no rewards (0).
        return [
            q if isinstance(pool, CometPool) and pool.rewards else replace(q, reward_yearly=0)
            for pool, q in zip(wanted, quotes, strict=True)
        ]

    async def _quote(self, pool: LendingPool, block: Block) -> PoolQuote:
        """``pool``'s quote at ``block``: read once per block, however many ask."""
        return await self._quoted.get(block.number, pool.name, lambda: pool.quote(block))

    async def pool_readings(self, token: str, protocols: Sequence[str]) -> list[PoolReading]:
        """The guard inputs of the pools that read their own switches or share price
        (Aave's reserve: its switches and liquidity index; a Comet: its pause switches; a
        Moonwell market: its Comptroller's supply switch and exchange rate; a Morpho
        vault: its share price, and the configured feeds of the pegged collaterals its
        markets lend against), at the head, in one batch; the others are judged on
        their quotes (``domain.risk.survey``)."""
        if to_checksum_address(token) != self.config.token:
            return []
        await self._ready()
        wanted = [
            pool
            for name, pool in self.pools.items()
            if name in set(protocols)
            and isinstance(pool, AavePool | CometPool | MTokenPool | VaultPool)
        ]
        if not wanted:
            return []
        block = await self.head()
        names = tuple(sorted(p.name for p in wanted))
        kept = await self._read_for_guards.get(
            block.number, names, lambda: self._guard_readings(wanted, block)
        )
        return list(kept)

    async def _guard_readings(
        self, wanted: Sequence[AavePool | CometPool | MTokenPool | VaultPool], block: Block
    ) -> list[PoolReading]:
        """The readings of ``wanted`` at ``block`` (``pool_readings``)."""
        # every feed a wanted vault might lend against, read with the pools in one batch
        lent = {c for p in wanted if isinstance(p, VaultPool) for c in p.collaterals}
        watched = sorted(lent & set(self._feeds))
        reads, prices, sequencer = await asyncio.gather(
            asyncio.gather(*(self._guard_reading(pool, block) for pool in wanted)),
            self._feed_prices(watched, block),
            self._sequencer(block) if watched else _none(),
        )
        readings = []
        for pool, (snapshot, lent_against) in zip(wanted, reads, strict=True):
            feeds = tuple(
                _collateral(self._feeds[c], prices[c]) for c in lent_against if c in prices
            )
            readings.append(PoolReading(pool.name, snapshot, collateral=feeds, sequencer=sequencer))
        return readings

    async def _sequencer(self, block: Block) -> SequencerStatus | None:
        """The chain's L2 sequencer as its uptime feed answers at ``block`` (answer 0: up;
        ``startedAt``: since when), unreadable if it cannot be read; None on a chain with
        no such feed."""
        feed = self.config.sequencer_feed
        if feed is None:
            return None
        try:
            answer = await self.reader.call(feed, FEED_LATEST_ROUND_DATA, block=block.number)
        except Exception:
            # Like a collateral feed that cannot be read: the guard trusts no price then.
            log.warning("sequencer uptime feed unreadable", extra={"chain_id": self.chain_id})
            return SequencerStatus(up=False, since=0, readable=False)
        return SequencerStatus(up=int(answer[1]) == 0, since=int(answer[2]))

    @staticmethod
    async def _guard_reading(
        pool: AavePool | CometPool | MTokenPool | VaultPool, block: Block
    ) -> tuple[Snapshot, tuple[str, ...]]:
        """A pool's snapshot, and the collateral tokens it lends against now (a vault's)."""
        if isinstance(pool, VaultPool):
            return await pool.guard_reading(block)
        return await pool.reading(block), ()

    async def plan_calls(
        self, holder: str, action: str, protocol: str, token: str, amount: int
    ) -> list[ContractCall]:
        """The calls the account makes for a ``deposit`` or ``withdraw``: what it sends
        through ``execute`` (approval first)."""
        pool = self._pool(protocol, token)
        await self._ready()
        holder = to_checksum_address(holder)
        if action == "deposit":
            calls = pool.supply_calls(holder, amount)
        elif action == "withdraw":
            calls = pool.withdraw_calls(holder, amount)
        else:
            raise InvalidRequest(f"no contract calls for the action {action!r}")
        return [
            ContractCall(
                c.target, c.fn.name, c.arguments(), "0x" + c.data.hex(), c.description, c.value
            )
            for c in calls
        ]

    async def quote_swap(self, token_in: str, token_out: str, amount_in: int) -> int:
        router = self._router()
        return int(
            await self.reader.call(router, ROUTER_AMOUNT_OUT, token_in, token_out, amount_in)
        )

    async def accrued_rewards(self, holder: str) -> list[RewardAmount]:
        owed = await self._owed(holder)
        totals: dict[str, int] = {}
        for token, amount in owed.values():
            totals[token] = totals.get(token, 0) + amount
        return [await self._reward_amount(t, a) for t, a in totals.items() if a > 0]

    async def _owed(self, holder: str) -> dict[str, tuple[str, int]]:
        """(reward token, amount) each Comet's rewards owe ``holder``, by Comet."""
        await self._ready()
        comets = [
            pool
            for pool in self.pools.values()
            if isinstance(pool, CometPool) and pool.rewards is not None
        ]
        # at a mined block: Comet's accrual runs in the read, and panics 0x11 on state
        # newer than the timestamp it runs with
        block = await self.head()
        owed = await self.reader.call_many(
            [read(str(c.rewards), REWARDS_OWED, c.config.address, holder) for c in comets],
            block.number,
        )
        return {c.config.address: (str(o[0]), int(o[1])) for c, o in zip(comets, owed, strict=True)}

    async def _reward_amount(self, token: str, amount: int) -> RewardAmount:
        reward = self._reward or _Reward("", 18)
        if token != self.config.reward_token:
            symbol, decimals = await self.reader.call_many(
                [read(token, SYMBOL), read(token, DECIMALS)], "latest"
            )
            reward = _Reward(str(symbol), int(decimals))
        return RewardAmount(
            token, reward.symbol, amount, reward.decimals, await self._price(token, reward.decimals)
        )

    async def _price(self, token: str, decimals: int) -> float:
        """A reward token's price in US dollars: the configured one, or one whole token
        quoted by the swap router against the wallets' token."""
        if self.config.reward_price_usd is not None:
            return float(self.config.reward_price_usd)
        if self.config.swap_router is None:
            return 0.0
        try:
            out = await self.quote_swap(token, self.config.token, 10**decimals)
        except ReadReverted:
            return 0.0
        return float(out / 10**self.config.token_decimals * self.config.token_price_usd)

    async def gas_cost(self, action: str) -> GasCost:
        gas = self.gas_used.get(action) or GAS_UNITS[action]
        try:
            history = await self.retry.read(
                "eth_feeHistory", lambda: self.w3.eth.fee_history(5, "latest", [50.0])
            )
        except Exception as error:
            raise node_unavailable("eth_feeHistory", error) from None
        # what a transaction pays per gas: the next base fee and the tip (no headroom)
        price = fees_from_history(history, FeeSettings(base_fee_multiplier=1)).max_fee_per_gas
        wei = gas * price
        return GasCost(gas, wei, wei / WEI_PER_ETHER * self.config.native_price_usd)

    # -- writes ---------------------------------------------------------------------------

    async def _execute(self, account: str, calls: Sequence[Call], action: str) -> Receipt:
        """``calls`` from ``account``, in one transaction through the operator module's
        ``execute``, which makes the approvals itself (so they are left out here)."""
        module = self._module()
        listed = [(c.target, c.data) for c in calls if c.fn.selector != APPROVE.selector]
        return await self._send(module, MODULE_EXECUTE.encode(account, listed), action)

    def _module(self) -> str:
        if self.config.module is None:
            raise NotImplementedYet(
                f"Chain {self.chain_id} has no operator module: the service acts for no account"
            )
        return self.config.module

    async def _send(self, to: str, data: bytes, action: str) -> Receipt:
        """One transaction of the operator to ``to``, its gas measured for ``action``."""
        gas = await self._gas(to, data)
        try:
            receipt = await self._sender.send(to, data, gas=gas)
        except ChainRejected as error:  # name the account's and the pools' custom errors
            named = custom_error_named(error.reason)
            if named is None:
                raise
            raise ChainRejected(f"{action} reverted: {named}", named) from error
        self.gas_used[action] = receipt.gas_used
        self._mined(receipt.block_number)
        return receipt

    async def _gas(self, account: str, data: bytes) -> int:
        """The gas limit of a call: the node's estimate with room for the interest accrual
        the estimate may not see. A node estimates on the latest block's state and time;
        mined a second later, Moonwell and Morpho first accrue interest (and Morpho's IRM
        adapts), which costs up to a third more gas than estimated."""
        estimate = await self._estimated(account, data, MODULE_EXECUTE)
        return estimate * GAS_MARGIN_PERCENT // 100 + GAS_HEADROOM

    async def _estimated(self, to: str, data: bytes | str, fn: Fn) -> int:
        """The node's gas estimate of the operator's call of ``data`` (``fn``) to ``to``,
        asked through the reader, so that estimates made together (a batch's) share one
        request. One that reverts is ChainRejected, with the reason decoded (a known
        custom error by name)."""
        call = {
            "from": self._sender.address,
            "to": to_checksum_address(to),
            "data": HexBytes(data).to_0x_hex(),
        }
        try:
            return int(await self.reader.request("eth_estimateGas", [call], read(to, fn)), 16)
        except ReadReverted as reverted:
            returned = revert_data(reverted.data)
            reason = custom_error(returned) or revert_reason(returned)
            raise ChainRejected(f"the transaction would revert: {reason}", reason) from None

    async def send_many(self, sends: Sequence[Send]) -> list[TxReceipt | Exception]:
        """Supplies and withdrawals of many accounts, each its own transaction through
        the module as ``supply`` and ``withdraw`` make it, estimated at once and sent
        pipelined (``TransactionSender.send_many``): none waits for another's receipt.
        A send refused before it goes out (its estimate reverts) is its error alone."""
        try:
            module = self._module()
            await self._ready()
        except Exception as error:  # each send is refused as the single call would be
            return [_raised_or(error) for _ in sends]
        prepared = await asyncio.gather(
            *(self._prepared(module, send) for send in sends), return_exceptions=True
        )
        results: list[TxReceipt | BaseException] = []
        ready: list[tuple[int, _Move, Outgoing, str]] = []
        for at, got in enumerate(prepared):
            results.append(got if isinstance(got, BaseException) else _NOT_SENT)
            if not isinstance(got, BaseException):
                ready.append((at, *got))
        sent = await self._sender.send_many([outgoing for _, _, outgoing, _ in ready])
        for (at, move, _, action), receipt in zip(ready, sent, strict=True):
            results[at] = self._booked_move(move, action, receipt)
        return [_raised_or(result) for result in results]

    async def _prepared(self, module: str, send: Send) -> tuple[_Move, Outgoing, str]:
        """The send's move, its transaction with its gas measured, and its action."""
        pool = self._pool(send.protocol, send.token)
        holder = to_checksum_address(send.holder)
        if send.action == ChainKind.SUPPLY:
            calls = pool.supply_calls(holder, send.amount)
        elif send.whole:
            calls = await pool.exit_calls(holder)
        else:
            calls = pool.withdraw_calls(holder, send.amount)
        listed = [(c.target, c.data) for c in calls if c.fn.selector != APPROVE.selector]
        data = MODULE_EXECUTE.encode(holder, listed)
        gas = await self._gas(module, data)
        return _Move(send, pool, holder), Outgoing(module, data, gas), str(send.action)

    def _booked_move(
        self, move: _Move, action: str, receipt: Receipt | YieldAgentError
    ) -> TxReceipt | Exception:
        """The port's receipt of a mined move, or why it has none."""
        if isinstance(receipt, ChainRejected):
            named = custom_error_named(receipt.reason)
            if named is None:
                return receipt
            refused = ChainRejected(f"{action} reverted: {named}", named)
            refused.__cause__ = receipt
            return refused
        if isinstance(receipt, YieldAgentError):
            return receipt
        self.gas_used[action] = receipt.gas_used
        self._mined(receipt.block_number)  # what is read next must see the move
        send, custody, holder = move.send, move.pool.custody, move.holder
        try:
            if send.action == ChainKind.SUPPLY:
                moved = _find(receipt, self.config.token, holder, custody, send.amount)
                return _logged(receipt, moved, f"supply of {send.amount} to {send.protocol}")
            if send.whole:
                moved = _find(receipt, self.config.token, custody, holder, None)
                return _logged(receipt, moved, f"withdrawal of everything from {send.protocol}")
            moved = _find(receipt, self.config.token, custody, holder, send.amount)
            return _logged(receipt, moved, f"withdrawal of {send.amount} from {send.protocol}")
        except ChainRejected as error:
            return error

    async def supply(self, holder: str, protocol: str, token: str, amount: int) -> TxReceipt:
        pool = self._pool(protocol, token)
        await self._ready()
        holder = to_checksum_address(holder)
        receipt = await self._execute(holder, pool.supply_calls(holder, amount), ChainKind.SUPPLY)
        moved = _find(receipt, self.config.token, holder, pool.custody, amount)
        return _logged(receipt, moved, f"supply of {amount} to {protocol}")

    async def withdraw(
        self, holder: str, protocol: str, token: str, amount: int, whole: bool = False
    ) -> TxReceipt:
        pool = self._pool(protocol, token)
        await self._ready()
        holder = to_checksum_address(holder)
        if whole:
            receipt = await self._execute(holder, await pool.exit_calls(holder), ChainKind.WITHDRAW)
            moved = _find(receipt, self.config.token, pool.custody, holder, None)
            return _logged(receipt, moved, f"withdrawal of everything from {protocol}")
        receipt = await self._execute(
            holder, pool.withdraw_calls(holder, amount), ChainKind.WITHDRAW
        )
        moved = _find(receipt, self.config.token, pool.custody, holder, amount)
        return _logged(receipt, moved, f"withdrawal of {amount} from {protocol}")

    async def transfer(self, token: str, sender: str, recipient: str, amount: int) -> TxReceipt:
        """A transfer: through the module, only to the account's owner (``pay``)."""
        paid, _ = await self.pay(token, sender, recipient, amount, "", 0)
        return paid

    async def pay(
        self, token: str, holder: str, owner: str, amount: int, collector: str, fee: int
    ) -> tuple[TxReceipt, TxReceipt | None]:
        """The owner's payout and its fee: one ``pay`` through the module, which sends them
        only to the owner and the collector the account registered."""
        module = self._module()
        token, holder, owner = (to_checksum_address(a) for a in (token, holder, owner))
        registered_owner, registered_token, registered_collector = await self.reader.call(
            module, MODULE_ACCOUNTS, holder
        )
        wanted = (owner, token) + ((to_checksum_address(collector),) if fee else ())
        found = (registered_owner, registered_token) + ((registered_collector,) if fee else ())
        if wanted != found:
            raise ChainRejected(
                f"the operator module pays {holder}'s {registered_token} only to its owner "
                f"{registered_owner} and fees only to {registered_collector}",
                "not the account's registered owner, token or collector",
            )
        receipt = await self._send(module, MODULE_PAY.encode(holder, amount, fee), "transfer")
        paid = _logged(
            receipt, _find(receipt, token, holder, owner, amount), f"payment of {amount}"
        )
        if not fee:
            return paid, None
        charged = _find(receipt, token, holder, registered_collector, fee)
        return paid, _logged(receipt, charged, f"fee of {fee}")

    async def swap(
        self, holder: str, token_in: str, token_out: str, amount_in: int, min_out: int
    ) -> SwapReceipt:
        router = self._router()
        holder = to_checksum_address(holder)
        token_in, token_out = to_checksum_address(token_in), to_checksum_address(token_out)
        calls = [
            approve(token_in, router, amount_in),
            Call(router, ROUTER_SWAP, (token_in, token_out, amount_in, min_out, holder)),
        ]
        receipt = await self._execute(holder, calls, "swap")
        paid = _find(receipt, token_in, holder, router, amount_in)
        got = [t for t in _transfers(receipt) if t.token == token_out and t.recipient == holder]
        logged = _logged(receipt, paid, f"swap of {amount_in}")
        return SwapReceipt(logged, sum(t.amount for t in got))

    async def claim_rewards(self, holder: str) -> ClaimReceipt:
        holder = to_checksum_address(holder)
        parties = await self._ready()
        owed = await self._owed(holder)
        calls = [
            Call(str(self._comet_rewards(comet)), REWARDS_CLAIM, (comet, holder, True))
            for comet, (_, amount) in owed.items()
            if amount > 0
        ]
        if not calls:
            head = await self.head()
            return ClaimReceipt(TxReceipt("", head.number, head.timestamp), ())
        receipt = await self._execute(holder, calls, ChainKind.CLAIM)
        paid = [
            t
            for t in _transfers(receipt)
            if t.recipient == holder
            and t.token == parties.reward_token
            and (t.sender in parties.rewards or t.sender == ZERO_ADDRESS)
        ]
        totals: dict[str, int] = {}
        for t in paid:
            totals[t.token] = totals.get(t.token, 0) + t.amount
        rewards = tuple([await self._reward_amount(t, a) for t, a in totals.items()])
        first = paid[0] if paid else None
        return ClaimReceipt(_logged(receipt, first, ChainKind.CLAIM, required=False), rewards)

    def _comet_rewards(self, comet: str) -> str | None:
        for pool in self.pools.values():
            if isinstance(pool, CometPool) and pool.config.address == comet:
                return pool.rewards
        return None

    def _router(self) -> str:
        if self.config.swap_router is None:
            raise InvalidRequest(f"no swap router on chain {self.chain_id}")
        return self.config.swap_router


_NOT_SENT = ChainRejected("the move was not sent", "not sent")
"""A batch's place holder for a send until its answer arrives (every send gets one)."""


@dataclass(frozen=True, slots=True)
class _Move:
    """A send of a batch with its pool and its holder, checksummed."""

    send: Send
    pool: LendingPool
    holder: str


def _raised_or(result: TxReceipt | BaseException) -> TxReceipt | Exception:
    """A batch's answer for one send, told as the single call would tell it: a domain
    error as it is, a node's failure as ``NodeUnavailable`` and any other failure by its
    class alone (the words of either may carry the node's URL); a failure that is no
    Exception (a cancellation) is raised."""
    if isinstance(result, TxReceipt | YieldAgentError):
        return result
    if isinstance(result, CHAIN_ERRORS):
        return node_unavailable("preparing a move", result)
    if isinstance(result, Exception):
        return ChainUnavailable(f"preparing a move failed: {redacted(result)}")
    raise result


def _failed(what: str, error: BaseException) -> Exception:
    """A batch's answer for one account whose ``what`` failed: a domain error as it is, any
    other failure by its class alone; a failure that is no Exception is raised."""
    if isinstance(error, YieldAgentError):
        return error
    if isinstance(error, Exception):
        return ChainUnavailable(f"{what} failed: {redacted(error)}")
    raise error


def _transfers(receipt: Receipt) -> list[TransferLog]:
    """The ERC-20 transfers a mined transaction made."""
    found = []
    for log in receipt.logs:
        raw = {
            "address": log.address,
            "topics": log.topics,
            "data": log.data,
            "logIndex": log.log_index,
            "transactionHash": receipt.tx_hash,
            "blockNumber": receipt.block_number,
        }
        transfer = parse_transfer(raw, receipt.timestamp)
        if transfer is not None:
            found.append(transfer)
    return found


def _find(
    receipt: Receipt, token: str, sender: str, recipient: str, amount: int | None
) -> TransferLog | None:
    """The transfer of ``amount`` (None: any amount) of ``token`` from ``sender`` to
    ``recipient`` in the receipt, if there is one."""
    token, sender, recipient = (to_checksum_address(a) for a in (token, sender, recipient))
    return next(
        (
            t
            for t in _transfers(receipt)
            if (t.token, t.sender, t.recipient) == (token, sender, recipient)
            and amount in (None, t.amount)
        ),
        None,
    )


def _logged(
    receipt: Receipt, moved: TransferLog | None, what: str, required: bool = True
) -> TxReceipt:
    """The port's receipt, with the log index of ``moved``; ChainRejected if the transfer
    the transaction was sent for is not in it (a protocol that reports failure with a
    return code instead of a revert)."""
    if moved is None and required:
        raise ChainRejected(
            f"transaction {receipt.tx_hash} was mined but made no {what}",
            "the expected token transfer is missing from the receipt",
        )
    return TxReceipt(
        receipt.tx_hash,
        receipt.block_number,
        receipt.timestamp,
        moved.log_index if moved is not None else 0,
        moved.amount if moved is not None else None,
    )
