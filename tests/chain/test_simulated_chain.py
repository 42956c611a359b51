"""The chain port on the simulated market: what the service sees of one chain."""

from __future__ import annotations

import re

import pytest

from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.genesis import REWARD_TOKENS, TIMING
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.ports.chain import (
    Block,
    ClaimReceipt,
    Position,
    RewardAmount,
    Transfer,
    TxReceipt,
)

GENESIS = 1_767_225_600
ETHEREUM = 1
BASE = 8453
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
WELL = REWARD_TOKENS[(BASE, "WELL")].address
USER = "0x" + "ee" * 20
ALICE = "0x" + "a1" * 20
BOB = "0x" + "b0" * 20
UNIT = 10**6
DAY = 86_400
TX_HASH = re.compile(r"0x[0-9a-f]{64}")
ACTIONS = ("supply", "withdraw", "swap", "transfer", "claim", "approve")
BASE_PROTOCOLS = ["aave", "compound", "moonwell", "morpho_gauntlet_usdc_prime"]


@pytest.fixture
def base(chains: dict[int, MarketChain]) -> MarketChain:
    return chains[BASE]


async def _mined_now(chain: MarketChain, receipt: TxReceipt) -> None:
    assert TX_HASH.fullmatch(receipt.tx_hash)
    head = await chain.head()
    assert (receipt.block_number, receipt.timestamp) == (head.number, head.timestamp)


def test_there_is_a_port_per_catalog_chain(chains: dict[int, MarketChain]) -> None:
    assert sorted(chains) == load_catalog().chain_ids()
    assert all(chain.chain_id == chain_id for chain_id, chain in chains.items())


async def test_head_follows_the_simulated_clock(
    chains: dict[int, MarketChain], market: SimulatedMarket
) -> None:
    assert await chains[BASE].head() == Block(TIMING[BASE].genesis_block, GENESIS)
    assert await chains[ETHEREUM].head() == Block(TIMING[ETHEREUM].genesis_block, GENESIS)
    market.advance(3_600)
    assert await chains[BASE].head() == Block(TIMING[BASE].genesis_block + 1_800, GENESIS + 3_600)
    assert await chains[ETHEREUM].head() == Block(
        TIMING[ETHEREUM].genesis_block + 300, GENESIS + 3_600
    )


async def test_balances_and_positions(base: MarketChain, market: SimulatedMarket) -> None:
    assert await base.token_balance(USDC, ALICE) == 0
    assert await base.positions(ALICE, USDC) == []
    market.deposit_from(BASE, USDC, USER, ALICE, 500 * UNIT)
    assert await base.token_balance(USDC, ALICE) == 500 * UNIT
    receipt = await base.supply(ALICE, "aave", USDC, 200 * UNIT)
    await _mined_now(base, receipt)
    assert await base.token_balance(USDC, ALICE) == 300 * UNIT
    assert await base.positions(ALICE, USDC) == [Position("aave", USDC, 200 * UNIT)]
    market.advance(DAY)
    (position,) = await base.positions(ALICE, USDC)
    assert position.protocol == "aave"
    assert position.amount > 200 * UNIT


async def test_find_transfer(
    chains: dict[int, MarketChain], base: MarketChain, market: SimulatedMarket
) -> None:
    deposit = market.deposit_from(BASE, USDC, USER, ALICE, 42 * UNIT)
    assert await base.find_transfer(deposit.tx_hash) == Transfer(
        deposit.tx_hash, USDC, USER, ALICE, 42 * UNIT, deposit.block_number, deposit.timestamp
    )
    assert await base.find_transfer("0x" + "00" * 32) is None
    assert await chains[ETHEREUM].find_transfer(deposit.tx_hash) is None  # another chain's
    supply = await base.supply(ALICE, "aave", USDC, 10 * UNIT)
    assert await base.find_transfer(supply.tx_hash) is None  # not an ERC-20 transfer
    sent = await base.transfer(USDC, ALICE, BOB, 5 * UNIT)
    found = await base.find_transfer(sent.tx_hash)
    assert found is not None
    assert (found.sender, found.recipient, found.amount) == (ALICE, BOB, 5 * UNIT)


async def test_quotes_one_per_protocol_with_our_rate_impact(base: MarketChain) -> None:
    quotes = await base.quotes(USDC, BASE_PROTOCOLS)
    assert sorted(q.protocol for q in quotes) == BASE_PROTOCOLS
    for quote in quotes:
        assert quote.token == USDC
        assert quote.total_supply > quote.cash > 0
        aprs = [quote.apr(amount) for amount in (0, 10**10, 10**12, 10**14)]
        assert aprs == sorted(aprs, reverse=True)
        assert aprs[0] > aprs[-1]
    (aave,) = await base.quotes(USDC, ["aave"])
    assert aave.protocol == "aave"
    assert await base.quotes(USDC, ["nope"]) == []


async def test_supply_withdraw_transfer_and_swap_return_receipts(
    base: MarketChain, market: SimulatedMarket
) -> None:
    market.deposit_from(BASE, USDC, USER, ALICE, 100 * UNIT)
    receipts = [
        await base.supply(ALICE, "compound", USDC, 60 * UNIT),
        await base.withdraw(ALICE, "compound", USDC, 20 * UNIT),
        await base.transfer(USDC, ALICE, BOB, 10 * UNIT),
    ]
    swap = await base.swap(ALICE, USDC, WELL, 10 * UNIT, min_out=1)
    receipts.append(swap.receipt)
    for receipt in receipts:
        await _mined_now(base, receipt)
    assert len({r.tx_hash for r in receipts}) == len(receipts)
    assert swap.amount_out == market.quote_swap(BASE, USDC, WELL, 10 * UNIT)
    assert await base.token_balance(WELL, ALICE) == swap.amount_out
    assert await base.token_balance(USDC, ALICE) == 40 * UNIT
    assert await base.token_balance(USDC, BOB) == 10 * UNIT
    assert await base.positions(ALICE, USDC) == [Position("compound", USDC, 40 * UNIT)]


async def test_rewards_are_accrued_and_claimed(base: MarketChain, market: SimulatedMarket) -> None:
    nothing = await base.claim_rewards(ALICE)
    head = await base.head()
    assert nothing == ClaimReceipt(TxReceipt("", head.number, head.timestamp), ())
    market.deposit_from(BASE, USDC, USER, ALICE, 1_000 * UNIT)
    await base.supply(ALICE, "moonwell", USDC, 1_000 * UNIT)
    market.advance(7 * DAY)
    (accrued,) = await base.accrued_rewards(ALICE)
    assert accrued.token == WELL
    assert (accrued.symbol, accrued.decimals, accrued.price_usd) == ("WELL", 18, 0.03)
    assert accrued.amount > 0
    claim = await base.claim_rewards(ALICE)
    await _mined_now(base, claim.receipt)
    assert claim.rewards == (RewardAmount(WELL, "WELL", accrued.amount, 18, 0.03),)
    assert await base.token_balance(WELL, ALICE) == accrued.amount
    assert await base.accrued_rewards(ALICE) == []


async def test_gas_costs_are_positive_and_cheaper_on_base(chains: dict[int, MarketChain]) -> None:
    for action in ACTIONS:
        on_base = await chains[BASE].gas_cost(action)
        on_ethereum = await chains[ETHEREUM].gas_cost(action)
        assert on_base.gas == on_ethereum.gas > 0
        assert 0 < on_base.wei < on_ethereum.wei
        assert 0 < on_base.usd < on_ethereum.usd
        assert on_base.usd < 0.05  # cents on an L2, dollars on mainnet
        assert on_ethereum.usd > 0.5
    assert (await chains[BASE].gas_cost("transfer")).wei < (
        await chains[BASE].gas_cost("withdraw")
    ).wei
