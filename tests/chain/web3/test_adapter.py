"""Every MarketChain method of the web3 adapter, against the devnet's real contracts."""

from __future__ import annotations

import pytest
from eth_account import Account

from support.web3_chain import ChainEnv
from yieldagent.chain.web3.abis import MODULE_EXECUTE, TRANSFER, custom_error_named
from yieldagent.devnet.usdc import ONE_USDC
from yieldagent.domain.errors import ChainRejected
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.ports.chain import ChainTx, TxReceipt

pytestmark = pytest.mark.evm

PROTOCOLS = ("aave", "compound", "moonwell", "morpho_gauntlet_usdc_prime")


def _kinds(events: list[ChainTx], since: int) -> list[tuple[str, str, str, int]]:
    return [(e.kind, e.sender, e.recipient, e.amount) for e in events if e.block_number >= since]


async def test_head_and_balances(env: ChainEnv) -> None:
    port: MarketChain = env.chain  # mypy checks that the adapter is a MarketChain
    head = await port.head()
    assert head.number > env.devnet.manifest.deployed_block
    assert head.timestamp > 0
    assert await env.chain.token_balance(env.token, env.account) == 100_000 * ONE_USDC


async def test_supply_and_withdraw_in_every_protocol(env: ChainEnv) -> None:
    chain, account = env.chain, env.account
    start = (await chain.head()).number + 1
    for protocol in PROTOCOLS:
        receipt = await chain.supply(account, protocol, env.token, 1_000 * ONE_USDC)
        assert isinstance(receipt, TxReceipt)
    positions = {p.protocol: p.amount for p in await chain.positions(account, env.token)}
    assert set(positions) == set(PROTOCOLS)
    for protocol, amount in positions.items():  # interest of a block or two, rounding down
        assert 1_000 * ONE_USDC - 2 <= amount <= 1_000 * ONE_USDC + ONE_USDC // 100, protocol
    for protocol in PROTOCOLS:
        await chain.withdraw(account, protocol, env.token, 400 * ONE_USDC)
    after = {p.protocol: p.amount for p in await chain.positions(account, env.token)}
    for protocol in PROTOCOLS:
        assert after[protocol] == pytest.approx(600 * ONE_USDC, abs=ONE_USDC // 100)
    assert await chain.token_balance(env.token, account) == (100_000 - 4 * 600) * ONE_USDC
    events = await chain.history(account, start)
    assert _kinds(events, start) == [
        *[("supply", account, p, 1_000 * ONE_USDC) for p in PROTOCOLS],
        *[("withdraw", p, account, 400 * ONE_USDC) for p in PROTOCOLS],
    ]


async def test_receipts_name_the_event_the_history_shows(env: ChainEnv) -> None:
    chain = env.chain
    supplied = await chain.supply(env.account, "aave", env.token, 10 * ONE_USDC)
    paid = await chain.transfer(env.token, env.account, env.owner, 3 * ONE_USDC)
    events = {(e.tx_hash, e.log_index): e for e in await chain.history(env.account, 0)}
    assert isinstance(supplied, TxReceipt) and isinstance(paid, TxReceipt)
    supply = events[(supplied.tx_hash, supplied.log_index)]
    assert (supply.kind, supply.recipient, supply.block_number) == (
        "supply",
        "aave",
        supplied.block_number,
    )
    payout = events[(paid.tx_hash, paid.log_index)]
    assert (payout.kind, payout.recipient, payout.amount) == ("transfer", env.owner, 3 * ONE_USDC)


async def test_the_operator_may_pay_the_owner_only(env: ChainEnv) -> None:
    await env.chain.transfer(env.token, env.account, env.owner, 5 * ONE_USDC)
    stranger = Account.create().address
    with pytest.raises(ChainRejected, match="only to its owner"):
        await env.chain.transfer(env.token, env.account, stranger, 5 * ONE_USDC)
    assert await env.chain.token_balance(env.token, stranger) == 0
    # The module itself refuses a transfer, whoever builds it.
    module = env.chain.config.module
    assert module is not None
    call = [(env.token, TRANSFER.encode(stranger, 5 * ONE_USDC))]
    with pytest.raises(ChainRejected) as refused:
        await env.sender.send(module, MODULE_EXECUTE.encode(env.account, call))
    assert str(custom_error_named(refused.value.reason)).startswith("NotListed (")
    assert await env.chain.token_balance(env.token, stranger) == 0


async def test_a_supply_beyond_the_balance_is_rejected_with_its_reason(env: ChainEnv) -> None:
    with pytest.raises(ChainRejected):
        await env.chain.supply(env.account, "compound", env.token, 10**12 * ONE_USDC)


async def test_a_transfer_is_final_after_its_confirmations(env: ChainEnv) -> None:
    chain = env.build(confirmations=3)
    depositor = env.deployer.actor("web3-test-depositor")
    env.mint(depositor, 250 * ONE_USDC)
    tx = env.deployer.w3.eth.send_transaction(
        {"from": depositor, "to": env.token, "data": TRANSFER.encode(env.account, 250 * ONE_USDC)}
    )
    # Mined before it is looked up (a loaded machine may answer the send first).
    env.deployer.w3.eth.wait_for_transaction_receipt(tx, timeout=30)
    found = await chain.find_transfer("0x" + bytes(tx).hex())
    assert found is not None
    assert (found.token, found.sender, found.recipient, found.amount) == (
        env.token,
        depositor,
        env.account,
        250 * ONE_USDC,
    )
    head = await chain.head()
    assert (head.number, head.final) == (found.block_number, found.block_number - 2)
    env.mine(1)
    assert (await chain.head()).final_number < found.block_number  # two blocks: not yet
    env.mine(1)
    assert (await chain.head()).final_number == found.block_number  # three: final
    assert await chain.find_transfer("0x" + "12" * 32) is None


async def test_rewards_accrue_are_claimed_and_swapped(env: ChainEnv) -> None:
    chain, account = env.chain, env.account
    start = (await chain.head()).number + 1
    await chain.supply(account, "compound", env.token, 50_000 * ONE_USDC)
    env.mine(1, seconds=7 * 86_400)
    [accrued] = await chain.accrued_rewards(account)
    assert accrued.token == env.devnet.manifest.reward_token
    assert (accrued.symbol, accrued.decimals) == ("COMP", 18)
    assert accrued.amount > 0 and accrued.price_usd > 0
    claimed = await chain.claim_rewards(account)
    [reward] = claimed.rewards
    assert reward.amount >= accrued.amount  # a block more of accrual
    assert await chain.token_balance(reward.token, account) == reward.amount
    quoted = await chain.quote_swap(reward.token, env.token, reward.amount)
    swapped = await chain.swap(account, reward.token, env.token, reward.amount, quoted)
    assert swapped.amount_out == quoted > 0
    events = [e for e in await chain.history(account, start)]
    assert [e.kind for e in events] == ["supply", "claim", "swap"]
    claim, swap = events[1], events[2]
    assert (claim.token, claim.recipient, claim.amount) == (reward.token, account, reward.amount)
    assert (swap.token, swap.amount, swap.token_out, swap.amount_out) == (
        reward.token,
        reward.amount,
        env.token,
        quoted,
    )
    assert (swap.tx_hash, swap.log_index) == (
        swapped.receipt.tx_hash,
        getattr(swapped.receipt, "log_index", None),
    )
    nothing = await chain.claim_rewards(account)
    assert nothing.rewards == () and nothing.receipt.tx_hash == ""


async def test_history_in_ranges_smaller_than_it_finds_everything(env: ChainEnv) -> None:
    chain = env.chain
    start = (await chain.head()).number
    for _ in range(3):
        await chain.supply(env.account, "aave", env.token, ONE_USDC)
        env.mine(4)
    await chain.transfer(env.token, env.account, env.owner, ONE_USDC)
    head = (await chain.head()).number
    whole = await env.build(log_range=10_000).history(env.account, start)
    for size in (1, 2, 5):
        env.calls.reset()
        assert await env.build(log_range=size).history(env.account, start) == whole
        ranges = -(-(head - start + 1) // size)
        assert env.calls.methods.count("eth_getLogs") == 2 * ranges  # from and to the holder
    assert [e.kind for e in whole if e.block_number > start] == ["supply"] * 3 + ["transfer"]


async def test_gas_cost_uses_the_measured_gas_and_the_fee_history(env: ChainEnv) -> None:
    before = await env.chain.gas_cost("supply")
    assert before.gas > 0 and before.wei > 0 and before.usd > 0
    await env.chain.supply(env.account, "moonwell", env.token, ONE_USDC)
    measured = env.chain.gas_used["supply"]
    after = await env.chain.gas_cost("supply")
    assert after.gas == measured
    assert after.usd == pytest.approx(after.wei / 10**18 * 3000.0)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_planned_calls_decode_and_execute(env: ChainEnv, protocol: str) -> None:
    chain, amount = env.chain, 300 * ONE_USDC
    planned = await chain.plan_calls(env.account, "deposit", protocol, env.token, amount)
    approval, deposit = planned
    assert (approval.contract, approval.function) == (env.token, "approve")
    assert approval.arguments == (deposit.contract, str(amount))  # the pool pulls the tokens
    assert str(amount) in deposit.arguments
    for call in planned:  # the data is the function's selector and its arguments
        assert call.data.startswith("0x") and call.value == 0 and call.description
    # Through the module, which makes the approval itself: the supply alone.
    module = chain.config.module
    assert module is not None
    listed = [(deposit.contract, bytes.fromhex(deposit.data[2:]))]
    await env.sender.send(module, MODULE_EXECUTE.encode(env.account, listed), gas=2_000_000)
    [position] = [
        p for p in await chain.positions(env.account, env.token) if p.protocol == protocol
    ]
    assert position.amount == pytest.approx(amount, abs=2)
    out = await chain.plan_calls(env.account, "withdraw", protocol, env.token, amount // 2)
    assert [c.function for c in out] == [
        "redeemUnderlying" if protocol == "moonwell" else "withdraw"
    ]
