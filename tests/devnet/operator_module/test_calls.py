"""What the operator key may call through ``execute``, and every call a thief tries instead:
transfers, approvals, foreign beneficiaries, the account's own functions, unlisted targets,
delegatecalls, ether, replays, and random calldata to every listed target."""

from __future__ import annotations

import pytest
from eth_utils.address import to_checksum_address
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from web3.exceptions import Web3RPCError

from support.operator_module import (
    FUNDED,
    LOOSE,
    MAX,
    POSITION,
    REWARDS,
    THIEF,
    Account,
    account_value,
    call,
)
from support.safe_world import COMP, FAILED_TX_GAS, SENTINEL, USDC, contract
from yieldagent.devnet.anvil import rpc
from yieldagent.devnet.safe import (
    CLAIM_RULES,
    MULTI_SEND_CALL_ONLY,
    RULES_BY_MODEL,
    SWAP_RULES,
    Kind,
    Rule,
    selector,
)

pytestmark = pytest.mark.evm


def test_supply_and_withdraw_everywhere_leave_no_allowance(acct: Account) -> None:
    world, a, usdc = acct.world, acct.address, acct.usdc.address
    start = acct.holdings()
    world.operator.transact(world.execute(a, acct.supply_calls(1_000 * USDC)))
    supplied = acct.holdings()
    assert supplied["usdc"] == start["usdc"] - 4_000 * USDC
    assert all(v == 0 for k, v in supplied.items() if k.startswith("allowance:"))
    withdrawals = [
        (acct.aave, call("withdraw(address,uint256,address)", usdc, 1_000 * USDC, a)),
        (acct.comet.address, call("withdraw(address,uint256)", usdc, 1_000 * USDC)),
        (acct.mtoken.address, call("redeemUnderlying(uint256)", 1_000 * USDC)),
        (acct.vault.address, call("withdraw(uint256,address,address)", 1_000 * USDC, a, a)),
    ]
    world.operator.transact(world.execute(a, withdrawals))
    assert acct.holdings()["usdc"] == start["usdc"]
    shares = acct.vault.functions.balanceOf(a).call()
    mtokens = acct.mtoken.functions.balanceOf(a).call()
    world.operator.transact(
        world.execute(
            a,
            [
                (acct.vault.address, call("redeem(uint256,address,address)", shares, a, a)),
                (acct.mtoken.address, call("redeem(uint256)", mtokens)),
            ],
        )
    )
    assert acct.vault.functions.balanceOf(a).call() == 0
    assert acct.mtoken.functions.balanceOf(a).call() == 0


@LOOSE
@given(
    to=st.binary(min_size=20, max_size=20).map(lambda b: to_checksum_address(b)),
    amount=st.integers(min_value=0, max_value=MAX),
    token=st.sampled_from(["usdc", "comp"]),
    function=st.sampled_from(["transfer", "approve", "transferFrom"]),
)
def test_no_transfer_or_approval_of_a_token(
    acct: Account, to: str, amount: int, token: str, function: str
) -> None:
    erc20 = acct.usdc if token == "usdc" else acct.comp
    if function == "transferFrom":
        data = call("transferFrom(address,address,uint256)", acct.address, to, amount)
    else:
        data = call(f"{function}(address,uint256)", to, amount)
    reason = acct.refused([(erc20.address, data)])
    assert reason.startswith("NotListed(")


@pytest.mark.parametrize("spender", ["thief", "router", "aave"])
def test_no_approval_of_any_spender_even_in_a_batch(acct: Account, spender: str) -> None:
    who = {"thief": THIEF, "router": acct.router, "aave": acct.aave}[spender]
    approve = call("approve(address,uint256)", who, MAX)
    reason = acct.refused([*acct.supply_calls(1 * USDC)[:1], (acct.usdc.address, approve)])
    assert reason.startswith("NotListed(")


def test_a_supply_approves_no_more_than_it_supplies(acct: Account) -> None:
    a, usdc = acct.address, acct.usdc.address
    # more than the account holds: Aave cannot pull it, and the approval is undone with it
    too_much = call("supply(address,uint256,address,uint16)", usdc, MAX, a, 0)
    assert acct.refused([(acct.aave, too_much)]).startswith("CallFailed(")
    # a call that pulls less than it was approved for still leaves no allowance
    world = acct.world
    world.operator.transact(world.execute(a, acct.supply_calls(3 * USDC)))
    assert all(v == 0 for k, v in acct.holdings().items() if k.startswith("allowance:"))


@pytest.mark.parametrize(
    "case",
    [
        "aave_supply_on_behalf",
        "aave_withdraw_to",
        "vault_deposit_receiver",
        "vault_withdraw_receiver",
        "vault_withdraw_owner",
        "vault_redeem_receiver",
        "claim_for_another",
        "aave_other_asset",
        "comet_collateral",
        "comet_withdraw_collateral",
    ],
)
def test_no_supply_or_withdrawal_for_another_beneficiary(acct: Account, case: str) -> None:
    a, usdc, t = acct.address, acct.usdc.address, THIEF
    weth = acct.world.net.compound.contracts["collateral"]
    calls = {
        "aave_supply_on_behalf": (
            acct.aave,
            call("supply(address,uint256,address,uint16)", usdc, POSITION, t, 0),
        ),
        "aave_withdraw_to": (acct.aave, call("withdraw(address,uint256,address)", usdc, 1, t)),
        "vault_deposit_receiver": (acct.vault.address, call("deposit(uint256,address)", 10, t)),
        "vault_withdraw_receiver": (
            acct.vault.address,
            call("withdraw(uint256,address,address)", 10, t, a),
        ),
        "vault_withdraw_owner": (
            acct.vault.address,
            call("withdraw(uint256,address,address)", 10, a, t),
        ),
        "vault_redeem_receiver": (
            acct.vault.address,
            call("redeem(uint256,address,address)", 10, t, a),
        ),
        "claim_for_another": (
            acct.rewards,
            call("claim(address,address,bool)", acct.comet.address, t, True),
        ),
        "aave_other_asset": (
            acct.aave,
            call("supply(address,uint256,address,uint16)", weth, 10, a, 0),
        ),
        "comet_collateral": (acct.comet.address, call("supply(address,uint256)", weth, 10)),
        "comet_withdraw_collateral": (
            acct.comet.address,
            call("withdraw(address,uint256)", weth, 10),
        ),
    }
    reason = acct.refused([calls[case]])
    assert reason.startswith(("NotAccount(", "NotAccountToken("))


MANAGEMENT = {
    "addOwnerWithThreshold": ("addOwnerWithThreshold(address,uint256)", (THIEF, 1)),
    "removeOwner": ("removeOwner(address,address,uint256)", (SENTINEL, THIEF, 1)),
    "swapOwner": ("swapOwner(address,address,address)", (SENTINEL, THIEF, THIEF)),
    "changeThreshold": ("changeThreshold(uint256)", (1,)),
    "enableModule": ("enableModule(address)", (THIEF,)),
    "disableModule": ("disableModule(address,address)", (SENTINEL, THIEF)),
    "setFallbackHandler": ("setFallbackHandler(address)", (THIEF,)),
    "setGuard": ("setGuard(address)", (THIEF,)),
    "execTransaction": (
        "execTransaction(address,uint256,bytes,uint8,uint256,uint256,uint256,address,address,bytes)",
        (THIEF, 0, b"", 0, 0, 0, 0, THIEF, THIEF, b"\x00" * 65),
    ),
    "execTransactionFromModule": (
        "execTransactionFromModule(address,uint256,bytes,uint8)",
        (THIEF, 0, b"", 1),
    ),
    "setup": (
        "setup(address[],uint256,address,bytes,address,address,uint256,address)",
        ([THIEF], 1, THIEF, b"", THIEF, THIEF, 0, THIEF),
    ),
}


@pytest.mark.parametrize("name", sorted(MANAGEMENT))
@pytest.mark.parametrize("how", ["alone", "in_a_batch"])
def test_no_call_to_the_account_itself(acct: Account, name: str, how: str) -> None:
    signature, args = MANAGEMENT[name]
    data = call(signature, *args)
    calls: list[tuple[str, bytes]] = [(acct.address, data)]
    if how == "in_a_batch":  # a legitimate supply first: the whole batch is undone
        calls = [*acct.supply_calls(10 * USDC)[:2], *calls]
    assert acct.refused(calls).startswith("NotListed(")
    # and straight from the operator's key, outside the module: Safe's own checks refuse it
    world = acct.world
    raw = world.operator.sign(acct.address, data, gas=1_000_000)
    before = acct.holdings()
    assert world.operator.send_raw(raw)["status"] == 0
    assert acct.holdings() == before
    assert world.safe(acct.address).functions.getOwners().call() == [acct.owner.address]


def test_no_multisend_or_unlisted_contract_or_function(acct: Account) -> None:
    a, usdc = acct.address, acct.usdc.address
    multisend = call("multiSend(bytes)", b"")
    assert acct.refused([(MULTI_SEND_CALL_ONLY, multisend)]).startswith("NotListed(")
    unlisted = [
        (acct.aave, call("borrow(address,uint256,uint256,uint16,address)", usdc, 1, 2, 0, a)),
        (acct.mtoken.address, call("borrow(uint256)", 1)),
        (acct.mtoken.address, call("transfer(address,uint256)", THIEF, 1)),
        (acct.vault.address, call("transfer(address,uint256)", THIEF, 1)),
        (acct.vault.address, call("mint(uint256,address)", 1, THIEF)),
        (acct.comet.address, call("supplyTo(address,address,uint256)", THIEF, usdc, 1)),
        (THIEF, b""),
        (THIEF, call("anything()")),
    ]
    for target_call in unlisted:
        assert acct.refused([target_call]).startswith("NotListed("), target_call


def test_no_borrowing_through_a_withdrawal_against_gifted_collateral(acct: Account) -> None:
    """The thief supplies collateral of its own to the account on Comet (anyone may, with
    supplyTo), then withdraws more than the account supplied: Comet would lend the rest, the
    account's USDC would rise, and a debt it never chose would stay behind."""
    world, a, net = acct.world, acct.address, acct.world.net
    d = net.d
    weth = contract(net, "DevToken", net.compound.contracts["collateral"])
    gifter = d.actor("collateral-gifter")
    d.transact(weth.functions.mint(gifter, 10 * 10**18))
    d.transact(weth.functions.approve(acct.comet.address, MAX), sender=gifter)
    supply_to = acct.comet.functions.supplyTo(a, weth.address, 10 * 10**18)
    d.transact(supply_to, sender=gifter)
    assert acct.comet.functions.collateralBalanceOf(a).call() == 10 * 10**18
    supplied = acct.comet.functions.balanceOf(a).call()
    usdc = acct.usdc.address
    beyond = call("withdraw(address,uint256)", usdc, supplied + 1_000 * USDC)
    assert acct.refused([(acct.comet.address, beyond)]).startswith("Borrowed(")
    assert acct.comet.functions.borrowBalanceOf(a).call() == 0
    # the account's own supply still comes out whole, and no debt with it
    everything = call("withdraw(address,uint256)", usdc, MAX)
    world.operator.transact(world.execute(a, [(acct.comet.address, everything)]))
    assert acct.comet.functions.balanceOf(a).call() == 0
    assert acct.comet.functions.borrowBalanceOf(a).call() == 0


def test_calldata_of_the_wrong_length_is_refused(acct: Account) -> None:
    data = acct.supply_calls(10 * USDC)[0][1]
    for bad in (data + b"\x00" * 32, data[:-32], data + b"\x01"):
        assert acct.refused([(acct.aave, bad)]).startswith("BadCalldata(")


def test_no_delegatecall_and_no_ether(acct: Account) -> None:
    world, a = acct.world, acct.address
    world.net.d.fund(a, 10**18)
    # the module has no way to ask for one: no function of it takes an operation or a value
    inputs = {
        i["name"] for item in world.module_abi if item["type"] == "function" for i in item["inputs"]
    }
    assert not inputs & {"operation", "value"}
    # the operator key is not a module of the Safe: a delegatecall straight to it is refused
    delegate = world.safe(a).functions.execTransactionFromModule(THIEF, 0, b"", 1)
    assert "GS104" in world.operator.refused(delegate, world.safe_abi)
    # ether to the module, or a plain call with no data through it
    before = acct.holdings()
    raw = world.operator.sign(world.module.address, b"", value=1, gas=100_000)
    assert world.operator.send_raw(raw)["status"] == 0
    assert acct.refused([(THIEF, b"")]).startswith("NotListed(")
    execute = world.execute(a, acct.supply_calls(USDC)[:1])
    world.operator.refused(execute, world.module_abi, value=1)
    assert acct.holdings() == before
    assert world.w3.eth.get_balance(to_checksum_address(a)) == 10**18


def test_an_executed_call_cannot_be_replayed(acct: Account) -> None:
    world = acct.world
    world.operator.transact(world.execute(acct.address, acct.supply_calls(100 * USDC)[:1]))
    raw = world.operator.last_raw
    assert raw is not None
    after_first = acct.holdings()
    with pytest.raises((Web3RPCError, ValueError)):
        world.operator.send_raw(raw)
    rpc(world.net.url, "evm_mine")
    assert acct.holdings() == after_first


def listed_calls() -> list[tuple[str, str, Rule]]:
    """(protocol role, function signature, rule) of every listed function on the devnet."""
    out = [(m, sig, rule) for m, rules in RULES_BY_MODEL.items() for sig, rule in rules.items()]
    out += [("rewards", sig, rule) for sig, rule in CLAIM_RULES.items()]
    return out + [("router", sig, rule) for sig, rule in SWAP_RULES.items()]


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_random_calldata_never_moves_value_out_of_the_set(
    acct: Account, data: st.DataObject
) -> None:
    """Any calldata to any listed target: no USDC or COMP reaches an address outside
    {account, protocols, owner, collector}, and the account's value falls by no more than
    a protocol's rounding."""
    world, net = acct.world, acct.world.net
    targets = {
        "aave_v3": acct.aave,
        "compound_v3": acct.comet.address,
        "moonwell": acct.mtoken.address,
        "morpho_blue": acct.vault.address,
        "rewards": acct.rewards,
        "router": acct.router,
    }
    role, signature, rule = data.draw(st.sampled_from(listed_calls()))
    inner = signature[signature.index("(") + 1 : -1].split(",")
    addresses: list[str] = [acct.address, acct.usdc.address, acct.comp.address]
    addresses += [acct.comet.address]
    addresses += [acct.aave, THIEF, world.operator.address, acct.owner.address, world.collector]
    address_word = st.sampled_from([int(x, 16) for x in addresses])
    amount = st.integers(min_value=0, max_value=2 * POSITION)
    special = st.sampled_from([0, 1, FUNDED, REWARDS, MAX, MAX // 2])
    hostile = st.one_of(address_word, amount, special, st.integers(0, MAX))

    def legit(i: int, kind: str) -> st.SearchStrategy[int]:
        """What the service would put in word ``i``: the rule's value, or an amount."""
        if i in rule.account_words:
            return st.just(int(acct.address, 16))
        if i in rule.token_words:
            return st.just(int(acct.usdc.address, 16))
        if rule.kind == Kind.SWAP and i == rule.token_in_word:
            return st.just(int(acct.comp.address, 16))
        if role == "rewards" and i == 0:
            return st.just(int(acct.comet.address, 16))
        if kind == "bool":
            return st.integers(0, 1)
        return st.integers(0, 20 * COMP) if rule.kind == Kind.SWAP else amount

    # each word is the service's with odds 3 in 4, else anything a thief would try
    words = [
        data.draw(hostile if data.draw(st.integers(0, 3)) == 0 else legit(i, t))
        for i, t in enumerate(inner)
    ]
    payload = selector(signature) + b"".join(w.to_bytes(32, "big") for w in words)
    if data.draw(st.integers(0, 5)) == 0:  # now and then, the wrong length or stray bytes
        cut = data.draw(st.integers(0, len(payload)))
        payload = payload[:cut] + data.draw(st.binary(max_size=40))
    inside = [
        acct.address,
        acct.a_token.address,
        acct.comet.address,
        acct.mtoken.address,
        acct.vault.address,
        net.morpho.contracts["morpho"],
        acct.rewards,
        acct.router,
        acct.owner.address,
        world.collector,
    ]
    outside = [THIEF, world.operator.address, net.d.admin]

    def balances() -> dict[tuple[str, str], int]:
        return {
            (t.address, h): t.functions.balanceOf(to_checksum_address(h)).call()
            for t in (acct.usdc, acct.comp)
            for h in inside + outside
        }

    before, value_before = balances(), account_value(acct)
    fn = world.execute(acct.address, [(targets[role], payload)])
    raw = world.operator.sign(str(fn.address), fn._encode_transaction_data(), gas=FAILED_TX_GAS)
    world.operator.send_raw(raw)  # mined, whether it reverts or not
    after = balances()
    for h in outside:
        for t in (acct.usdc, acct.comp):
            assert after[(t.address, h)] == before[(t.address, h)], (h, role, signature)
    usdc_in = sum(v for (t, _), v in after.items() if t == acct.usdc.address and _ in inside)
    assert usdc_in == sum(
        v for (t, h), v in before.items() if t == acct.usdc.address and h in inside
    )
    assert account_value(acct) >= value_before - 10  # a protocol's rounding, never more
