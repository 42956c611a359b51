"""The chain port: everything the service asks of an EVM chain.

Two adapters answer it: the deterministic market simulator (``chain.simulated``,
the embedded default and the test bed) and web3 against a real chain. The port asks
only what a real chain can answer: balances, positions, receipts of transfers, its
history, and transactions that return a hash and a block. Amounts are integers in the
token's smallest unit. What the chain's markets quote is the market's port
(``domain.market.ports``), which every adapter answers too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable

from yieldagent.domain.ports.accounts import SmartAccount


class ChainKind(StrEnum):
    """What a logged token movement of a holder was, as every adapter names it."""

    SUPPLY = "supply"
    """Into a protocol (the protocol is the recipient)."""
    WITHDRAW = "withdraw"
    """Out of a protocol (the protocol is the sender)."""
    TRANSFER = "transfer"
    SWAP = "swap"
    CLAIM = "claim"
    MINT = "mint"


@dataclass(frozen=True, slots=True)
class Block:
    """The chain's head: its number and timestamp (unix seconds)."""

    number: int
    timestamp: int
    final: int | None = None
    """The newest block with enough confirmations (``YIELDAGENT_CONFIRMATIONS``) that a
    reorganisation is not expected to undo it; None means this block itself (a chain that
    does not reorganise, like the simulator)."""

    @property
    def final_number(self) -> int:
        """The newest block whose events the books may take as final."""
        return self.number if self.final is None else self.final


@dataclass(frozen=True, slots=True)
class TxReceipt:
    """A mined transaction."""

    tx_hash: str
    block_number: int
    timestamp: int
    log_index: int = 0
    """Which of its logs records what it was sent for (a supply's or payout's transfer),
    as ``history`` names that event."""
    amount: int | None = None
    """What that transfer moved, when the chain decided it (a whole withdrawal)."""


@dataclass(frozen=True, slots=True)
class Transfer:
    """An ERC-20 transfer found in a transaction receipt."""

    tx_hash: str
    token: str
    sender: str
    recipient: str
    amount: int
    block_number: int
    timestamp: int
    log_index: int = 0
    """Which of the transaction's logs: a transaction may hold several transfers."""


@dataclass(frozen=True, slots=True)
class ChainTx:
    """One log of a mined transaction that involved a holder: one token movement.

    ``kind`` is supply, withdraw, transfer, swap, claim or mint; for supply and withdraw
    the protocol is the counterparty (``recipient`` and ``sender`` respectively). A swap
    is the holder's ``amount`` of ``token`` in, and ``amount_out`` of ``token_out`` back.
    ``(tx_hash, log_index)`` names it uniquely on its chain.
    """

    tx_hash: str
    kind: ChainKind
    token: str
    sender: str
    recipient: str
    amount: int
    block_number: int
    timestamp: int
    log_index: int = 0
    token_out: str | None = None
    amount_out: int | None = None


@dataclass(frozen=True, slots=True)
class Position:
    """What ``holder`` has supplied to a protocol, interest included."""

    protocol: str
    token: str
    amount: int


@dataclass(frozen=True, slots=True)
class RewardAmount:
    """An amount of a reward token, with its price in US dollars."""

    token: str
    symbol: str
    amount: int
    decimals: int
    price_usd: float


@dataclass(frozen=True, slots=True)
class SwapReceipt:
    """A mined swap and what it gave."""

    receipt: TxReceipt
    amount_out: int


@dataclass(frozen=True, slots=True)
class ClaimReceipt:
    """A mined reward claim and what it collected."""

    receipt: TxReceipt
    rewards: tuple[RewardAmount, ...]


@dataclass(frozen=True, slots=True)
class GasCost:
    """What one action costs in gas, in the native token (wei) and in US dollars."""

    gas: int
    wei: int
    usd: float


@dataclass(frozen=True, slots=True)
class ContractCall:
    """One contract call of a plan: where, which function with which arguments (ABI values
    as strings), and its ABI-encoded data."""

    contract: str
    function: str
    arguments: tuple[str, ...]
    data: str
    """Selector and arguments, 0x-prefixed hex."""
    description: str
    value: int = 0


@dataclass(frozen=True, slots=True)
class Send:
    """One transaction of a batch: ``action`` (``supply`` or ``withdraw``) of ``amount``
    of ``holder``'s ``token`` into or out of ``protocol``; a withdrawal with ``whole``
    takes all of the position as it is when mined."""

    action: ChainKind
    holder: str
    protocol: str
    token: str
    amount: int
    whole: bool = False


class ChainPort(Protocol):
    """One EVM chain, as the service uses it."""

    chain_id: int

    async def head(self) -> Block:
        """The current block."""

    async def token_balance(self, token: str, holder: str) -> int:
        """``holder``'s balance of ``token``."""

    async def positions(self, holder: str, token: str) -> list[Position]:
        """``holder``'s supplied amount in each protocol that holds ``token``; none if zero."""

    async def history(self, holder: str, since_block: int) -> list[ChainTx]:
        """Every transaction involving ``holder`` from block ``since_block`` on, in order."""

    async def find_transfer(self, tx_hash: str) -> Transfer | None:
        """The ERC-20 transfer made by transaction ``tx_hash``, if it exists and is mined."""

    async def check_account(self, account: SmartAccount) -> None:
        """Refuses (NotImplementedYet) an account the service cannot act through on this
        chain; sends nothing. Asked before anything is stored for it."""

    async def prepare_account(self, account: SmartAccount) -> None:
        """Makes sure ``account`` exists on chain with the operator able to act for it,
        deploying it if it is not there yet (an ordinary transaction from the operator);
        called with the operation's intent stored. Idempotent: a deployed account is left
        alone, however its deployment went."""

    async def revocation(self, holder: str) -> str | None:
        """Why the operator can no longer act for ``holder`` (its owner revoked it on
        chain), or None while it can."""

    async def supply(self, holder: str, protocol: str, token: str, amount: int) -> TxReceipt:
        """Supplies ``amount`` of ``holder``'s ``token`` to ``protocol``."""

    async def withdraw(
        self, holder: str, protocol: str, token: str, amount: int, whole: bool = False
    ) -> TxReceipt:
        """Withdraws ``amount`` of ``token`` from ``holder``'s position in ``protocol``; with
        ``whole``, all of the position as it is when mined (the receipt says how much)."""

    async def plan_calls(
        self, holder: str, action: str, protocol: str, token: str, amount: int
    ) -> list[ContractCall]:
        """The contract calls ``holder`` makes to ``action`` (deposit or withdraw)
        ``amount`` of ``token`` into or from ``protocol``, approval included; none on a
        chain without contracts (the simulator)."""

    async def quote_swap(self, token_in: str, token_out: str, amount_in: int) -> int:
        """What swapping ``amount_in`` of ``token_in`` would give of ``token_out`` now."""

    async def swap(
        self, holder: str, token_in: str, token_out: str, amount_in: int, min_out: int
    ) -> SwapReceipt:
        """Swaps ``amount_in`` of ``token_in`` for at least ``min_out`` of ``token_out``."""

    async def transfer(self, token: str, sender: str, recipient: str, amount: int) -> TxReceipt:
        """Sends ``amount`` of ``token`` from ``sender`` to ``recipient``."""

    async def pay(
        self, token: str, holder: str, owner: str, amount: int, collector: str, fee: int
    ) -> tuple[TxReceipt, TxReceipt | None]:
        """Pays ``amount`` of ``holder``'s ``token`` to its owner and ``fee`` (if any) to
        ``collector``: the receipts of the two transfers (one transaction where the
        account's module pays both at once)."""

    async def accrued_rewards(self, holder: str) -> list[RewardAmount]:
        """Reward tokens ``holder`` could claim now."""

    async def claim_rewards(self, holder: str) -> ClaimReceipt:
        """Claims every accrued reward token to ``holder``."""

    async def gas_cost(self, action: str) -> GasCost:
        """What ``action`` (supply, withdraw, swap, transfer, claim) costs now."""


@runtime_checkable
class BatchWrites(Protocol):
    """A chain that sends many supplies and withdrawals at once (the simulated chain does:
    one unit of its store for the lot)."""

    async def send_many(self, sends: Sequence[Send]) -> list[TxReceipt | Exception]:
        """Each send as its own transaction, in order, exactly as ``supply`` and
        ``withdraw`` would make them one after another; a refused send is the exception
        the single call raises, and the sends after it still go."""


@runtime_checkable
class BatchDeploys(Protocol):
    """A chain that deploys many accounts at once: their deployments go out together and
    share blocks, none waiting for another's receipt."""

    async def prepare_accounts(self, accounts: Sequence[SmartAccount]) -> list[Exception | None]:
        """``prepare_account`` of each of ``accounts``, in order: None for each that is on
        chain now, or the exception ``prepare_account`` would raise for it (the others
        still go)."""


@runtime_checkable
class BatchHistory(Protocol):
    """A chain that reads many holders' histories at once (the simulated chain does)."""

    async def histories(self, holders: Sequence[str], since_block: int) -> dict[str, list[ChainTx]]:
        """``history(holder, since_block)`` of each of ``holders`` (each one a key)."""


@runtime_checkable
class ModuleWatch(Protocol):
    """A chain whose accounts' owners turn the operator module on and off with logs (Safe's
    ``EnabledModule`` and ``DisabledModule``), read for the whole fleet at once."""

    async def module_toggled(self, from_block: int, to_block: int) -> set[str]:
        """The accounts (checksummed) that enabled or disabled the operator module in
        blocks ``from_block`` to ``to_block``."""


@runtime_checkable
class TransferWatch(Protocol):
    """A chain that tells which of many accounts the watched tokens' ``Transfer`` logs
    name, over a range of blocks, for the whole fleet at once (the tokens a holder's
    ``history`` is made of)."""

    async def transfers_touching(
        self, accounts: Sequence[str], from_block: int, to_block: int
    ) -> dict[str, int]:
        """The ``accounts`` (as given) that sent or received a watched token in blocks
        ``from_block`` to ``to_block``, each with the first such block."""


@runtime_checkable
class BatchReads(Protocol):
    """A chain that reads many holders' funds at once (the simulated chain does)."""

    async def holdings(
        self, token: str, holders: Sequence[str]
    ) -> dict[str, tuple[int, list[Position]]]:
        """Each holder's balance of ``token`` and its positions in ``token``'s pools."""
