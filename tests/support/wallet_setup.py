"""Wallets set up for the lifecycle tests: a recorded smart account, funded on the simulated
Base chain, and the use cases built the way the service builds them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine

from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.composition.clock import SYSTEM_CLOCK
from yieldagent.domain.books.effects import Commits
from yieldagent.domain.books.history import Reports
from yieldagent.domain.books.wallets import TransactionRecord, Wallet
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.money.lifecycle import ActivationRequest, Lifecycle, Policy
from yieldagent.domain.pagination import PageRequest
from yieldagent.domain.partners.smart_accounts import DEFAULT_AGENT_ID, smart_account_address
from yieldagent.domain.ports.accounts import SmartAccount
from yieldagent.storage.operations import OperationStore
from yieldagent.storage.smart_accounts import SmartAccountStore
from yieldagent.storage.wallets import WalletStore

BASE = 8453
BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
USDC = 10**6
"""One whole USDC in its smallest units."""
EOA = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
OTHER_EOA = "0x90F79bf6EB2c4f870365E785982E1f101E93b906"
FEE = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
"""The fee collector."""
PROTOCOLS = ("aave", "compound", "moonwell", "morpho_gauntlet_usdc_prime")
FEE_BPS = 1000
DAY = 86_400
GENESIS_WALL = 1_767_225_600.0
"""The wall clock the ``market`` fixture is frozen at (2026-01-01T00:00:00Z)."""
SEED = 7


def policy(**overrides: Any) -> Policy:
    """The policy of the tests: a 10 % performance fee, deposits up to $1,000,000."""
    return Policy(fee_bps=FEE_BPS, max_deposit_usd=1_000_000, fee_collector=FEE, **overrides)


def make_lifecycle(
    engine: Engine, chains: Mapping[int, MarketChain], rules: Policy | None = None
) -> Lifecycle:
    """The lifecycle use cases on ``engine``."""
    return Lifecycle(
        WalletStore(engine),
        OperationStore(engine),
        chains,
        load_catalog(),
        rules or policy(),
        SYSTEM_CLOCK,
    )


def make_reports(engine: Engine, chains: Mapping[int, MarketChain]) -> Reports:
    """The read-only reports on ``engine``."""
    return Reports(WalletStore(engine), chains, load_catalog())


def record_account(
    engine: Engine, partner_id: int, eoa: str = EOA, agent_id: str = DEFAULT_AGENT_ID
) -> str:
    """Records ``eoa``'s smart account for ``partner_id`` on Base; returns its address."""
    address = smart_account_address(eoa, agent_id)
    SmartAccountStore(engine).record(SmartAccount(BASE, eoa, agent_id, address, partner_id))
    return address


def activation(
    address: str,
    tx_hash: str | None,
    eoa: str = EOA,
    token: str = BASE_USDC,
    protocols: tuple[str, ...] = PROTOCOLS,
    constraints: Constraints | None = None,
) -> ActivationRequest:
    """An activation request for ``address``."""
    return ActivationRequest(
        wallet=address,
        eoa=eoa,
        token=token,
        protocols=protocols,
        tx_hash=tx_hash,
        constraints=constraints or Constraints(),
    )


@dataclass(frozen=True, slots=True)
class Funded:
    """A recorded smart account and the deposit that funded it."""

    address: str
    eoa: str
    tx_hash: str
    amount: int


def fund(
    engine: Engine,
    market: SimulatedMarket,
    partner_id: int,
    amount: int,
    eoa: str = EOA,
    agent_id: str = DEFAULT_AGENT_ID,
) -> Funded:
    """Records the smart account of ``eoa`` and deposits ``amount`` USDC units into it."""
    address = record_account(engine, partner_id, eoa, agent_id)
    mined = market.deposit_from(BASE, BASE_USDC, eoa, address, amount)
    return Funded(address, eoa, mined.tx_hash, amount)


async def activated(
    lifecycle: Lifecycle,
    engine: Engine,
    market: SimulatedMarket,
    partner_id: int,
    amount: int,
    eoa: str = EOA,
    agent_id: str = DEFAULT_AGENT_ID,
    protocols: tuple[str, ...] = PROTOCOLS,
) -> Wallet:
    """A wallet funded with ``amount`` and activated."""
    funded = fund(engine, market, partner_id, amount, eoa, agent_id)
    return await lifecycle.activate(
        partner_id, BASE, activation(funded.address, funded.tx_hash, eoa, protocols=protocols)
    )


def top_up_deposit(market: SimulatedMarket, address: str, amount: int, eoa: str = EOA) -> str:
    """Deposits ``amount`` more into ``address``; returns the transfer's hash."""
    return market.deposit_from(BASE, BASE_USDC, eoa, address, amount).tx_hash


def positions(market: SimulatedMarket, address: str) -> dict[str, int]:
    """The smart account's positions on chain, by protocol."""
    return dict(market.positions(BASE, BASE_USDC, address))


def chain_value(market: SimulatedMarket, address: str) -> int:
    """The smart account's value on chain: idle USDC plus its positions."""
    return market.balance(BASE, BASE_USDC, address) + sum(positions(market, address).values())


def stored(engine: Engine, address: str) -> Wallet:
    """The wallet as stored; fails the test when there is none."""
    wallet = WalletStore(engine).get(BASE, address)
    assert wallet is not None, f"no wallet stored at {address}"
    return wallet


def all_transactions(engine: Engine, wallet_id: int) -> list[TransactionRecord]:
    """Every transaction of a wallet, oldest first."""
    items, _ = WalletStore(engine).transactions(wallet_id, PageRequest(1, 10_000, False))
    return items


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What the database and the chain hold for one smart account, to prove that a
    refused call changed nothing."""

    wallet: Wallet | None
    chain_deposits: int
    chain_transactions: int
    withdrawals: int
    points: int
    rewards: int
    idle: int
    eoa_balance: int
    fee_balance: int
    positions: dict[str, int]


def snapshot(engine: Engine, market: SimulatedMarket, address: str, eoa: str = EOA) -> Snapshot:
    """The stored and on-chain state of the smart account at ``address``."""
    store = WalletStore(engine)
    wallet = store.get(BASE, address)
    rewards = 0
    if wallet is not None:
        _, rewards = store.rewards(wallet.id, PageRequest(1, 1, False))
    return Snapshot(
        wallet=wallet,
        chain_deposits=len(store.all_deposits(BASE)),
        chain_transactions=store.count_transactions(BASE),
        withdrawals=len(store.withdrawals(wallet.id)) if wallet else 0,
        points=len(store.points(wallet.id)) if wallet else 0,
        rewards=rewards,
        idle=market.balance(BASE, BASE_USDC, address),
        eoa_balance=market.balance(BASE, BASE_USDC, eoa),
        fee_balance=market.balance(BASE, BASE_USDC, FEE),
        positions=positions(market, address),
    )


def committing(engine: Engine) -> Commits:
    """Commits as the books do: each journal with its events, its change of the chain's
    totals and its schedule flag (``domain.books.effects``), then stored."""
    return Commits(WalletStore(engine), OperationStore(engine))
