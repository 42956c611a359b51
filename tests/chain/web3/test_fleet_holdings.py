"""The fleet's holdings through Multicall3: the same answers as one wallet's reads, for many
holders in one request, and a failing target failing only its own holder."""

from __future__ import annotations

import pytest
from eth_account import Account

from support.web3_chain import ChainEnv
from yieldagent.chain.web3.abis import BALANCE_OF, TOTAL_SUPPLY, VAULT_CONVERT_TO_ASSETS
from yieldagent.chain.web3.multicall import Failed
from yieldagent.chain.web3.protocols.aave import AavePool
from yieldagent.chain.web3.reader import is_arithmetic_panic, read
from yieldagent.devnet.usdc import ONE_USDC

pytestmark = pytest.mark.evm

PROTOCOLS = ("aave", "compound", "moonwell", "morpho_gauntlet_usdc_prime")


async def test_holdings_of_many_holders_are_one_request_and_match_each_read(
    env: ChainEnv,
) -> None:
    chain = env.chain
    for amount, protocol in enumerate(PROTOCOLS, start=1):
        await chain.supply(env.account, protocol, env.token, amount * 1_000 * ONE_USDC)
    others = [Account.create().address for _ in range(299)]
    for other in others[:3]:
        env.mint(other, 7 * ONE_USDC)
    holders = [env.account, *others]
    env.mine()
    await chain.holdings(env.token, holders)  # resolves the pools and finds Multicall3
    env.mine()
    small = env.build(multicall_batch=64)  # 1,500 calls: 24 aggregates; conversions 6 to one
    await small.holdings(env.token, holders[:1])
    env.mine()
    env.calls.reset()
    found = await small.holdings(env.token, holders)
    # the head, every aggregate in one batch, then the vault's shares in the token
    assert env.calls.requests == 3
    assert env.calls.methods.count("eth_call") == 24 + 1

    idle, positions = found[env.account]
    assert idle == await chain.token_balance(env.token, env.account)
    assert positions == await chain.positions(env.account, env.token)
    assert [p.protocol for p in positions] == list(PROTOCOLS)
    assert [found[o] for o in others[:3]] == [(7 * ONE_USDC, [])] * 3
    assert all(found[o] == (0, []) for o in others[3:])


async def test_a_read_that_fails_fails_only_its_own_answer(env: ChainEnv) -> None:
    chain = env.chain
    await chain.holdings(env.token, [env.account])
    aave_token = chain.pools["aave"].custody
    reads = [
        read(env.token, BALANCE_OF, env.account),
        read(aave_token, VAULT_CONVERT_TO_ASSETS, 1),  # no such function: it reverts
        read(env.owner, BALANCE_OF, env.account),  # no code: an answer that decodes to nothing
        read(env.token, BALANCE_OF, env.owner),
    ]
    head = await chain.head()
    answers = await chain.multicall.read_all(reads, head.number)
    assert answers[0] == 100_000 * ONE_USDC
    assert answers[1] == Failed(reads[1]) and answers[2] == Failed(reads[2])
    assert answers[3] == 0


async def test_a_view_run_before_its_reserves_last_update_panics_with_0x11(env: ChainEnv) -> None:
    """The condition behind the activations' 0x11 reverts, reproduced: Aave's variable debt
    token's ``totalSupply`` run with a timestamp earlier than the reserve's last update
    (state newer than the block it runs in, as a node mining meanwhile may serve)."""
    chain = env.chain
    await chain.supply(env.account, "aave", env.token, 1_000 * ONE_USDC)  # updates the reserve
    head = await chain.head()
    aave = chain.pools["aave"]
    assert isinstance(aave, AavePool)
    debt = read(aave.reserve.variable_debt, TOTAL_SUPPLY)
    call = {"to": debt.to, "data": "0x" + debt.fn.encode().hex()}
    earlier = {"time": hex(head.timestamp - 60)}
    answer = await chain.reader.w3.provider.make_request(
        "eth_call",
        [call, hex(head.number), {}, earlier],
    )
    assert is_arithmetic_panic(answer["error"]["data"])
    # at the block's own timestamp the same read answers
    [supply] = await chain.multicall.read_all([debt], head.number)
    assert isinstance(supply, int) and supply > 0


async def test_the_fleets_histories_are_each_holders_history_read_at_once(env: ChainEnv) -> None:
    chain = env.chain
    start = (await chain.head()).number
    await chain.supply(env.account, "aave", env.token, 5 * ONE_USDC)
    await chain.transfer(env.token, env.account, env.owner, ONE_USDC)  # to another holder
    others = [Account.create().address for _ in range(150)]  # two topic groups
    env.mint(others[120], 3 * ONE_USDC)
    env.mine()
    holders = [env.account, env.owner, *others]
    singles = {h: await chain.history(h, start) for h in (env.account, env.owner, others[120])}
    wide = env.build(log_range=10_000, log_address_batch=100)
    await wide.histories(holders[:1], start)  # resolves the pools, once
    env.calls.reset()
    found = await wide.histories(holders, start)
    assert {h: found[h] for h in singles} == singles
    assert all(found[o] == [] for i, o in enumerate(others) if i != 120)
    assert [e.kind for e in found[env.owner]] == ["transfer"]  # the same log, each side
    # the head, then every range's logs both ways for both groups, with the blocks' times
    assert env.calls.methods.count("eth_getLogs") == 2 * 2
    assert env.calls.requests <= 3
    env.calls.reset()
    for holder in holders:  # as a batch's close read them before: one wallet at a time
        await wide.history(holder, start)
    print(f"\n{len(holders)} histories one by one: {env.calls.requests} requests")
    assert env.calls.methods.count("eth_getLogs") == 2 * len(holders)

    # the fleet's transfer watch names the same holders, from the logs' topics alone
    head = (await wide.head()).number
    env.calls.reset()
    touched = await wide.transfers_touching(holders, start, head)
    assert set(touched) == {h for h in singles if singles[h]}
    assert touched[others[120]] == singles[others[120]][0].block_number
    assert env.calls.methods == ["eth_getLogs"] * 2 * 2  # no block read for its time
