"""The Safe operator module on the devnet, attacked with the real operator key.

One account is deployed for a fresh EOA through Safe's factory, funded with 100,000 USDC and
100 COMP, with 10,000 USDC in each of the four pools. Then the operator key, signing its own
raw transactions as the service does, tries to take value out of it: every attempt must
revert on chain and leave the account's holdings (idle USDC and COMP, Aave's scaled balance,
Comet's principal, mTokens, vault shares, ether, allowances) exactly as they were. A property
test sends random calldata to every listed target and checks that no USDC or COMP leaves the
set {account, protocols, owner, collector}. The legitimate paths, the owner's revocation and
opt-out, the 48-hour timelock and the two-step admin handover are checked too, and the gas of
an account's deployment, an activation and a rebalance is measured from receipts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from eth_abi.abi import encode
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from web3.exceptions import Web3RPCError

from support.devnet import Devnet
from support.safe_world import (
    COMP,
    FAILED_TX_GAS,
    SENTINEL,
    USDC,
    SafeWorld,
    Signer,
    a_token,
    contract,
    revert_reason,
    safe_world,
)
from yieldagent.devnet.anvil import rpc
from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.safe import (
    CLAIM_RULES,
    COMPATIBILITY_FALLBACK_HANDLER,
    DETERMINISTIC_DEPLOYER,
    MODULE_SALT,
    MULTI_SEND_CALL_ONLY,
    RULES_BY_MODEL,
    SAFE_CONTRACTS,
    SAFE_L2,
    SAFE_PROXY_FACTORY,
    SETUP_SALT,
    SINGLETON_FACTORY,
    SWAP_RULES,
    TIMELOCK_DELAY,
    Kind,
    Rule,
    create2_address,
    module_initcode,
    operator_change,
    rule_change,
    safe_artifact,
    selector,
)
from yieldagent.devnet.toolchain import compile_project
from yieldagent.domain.partners.safe_accounts import (
    SAFE_PROXY_CREATION_CODE,
    create_proxy_calldata,
    initializer,
)

pytestmark = pytest.mark.evm

MAX = 2**256 - 1
POSITION = 10_000 * USDC
FUNDED = 100_000 * USDC
REWARDS = 100 * COMP
THIEF = to_checksum_address("0x" + "7e" * 20)
OWNER_KEY = keccak(text="yieldagent.tests:safe-owner")
SECOND_OWNER_KEY = keccak(text="yieldagent.tests:second-safe-owner")
LOOSE = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def call(signature: str, *args: Any) -> bytes:
    """ABI calldata of ``signature`` (static and dynamic types, no tuples)."""
    inner = signature[signature.index("(") + 1 : -1]
    types = inner.split(",") if inner else []
    return selector(signature) + encode(types, list(args))


class Account:
    """The funded account under attack, its owner and the contracts around it."""

    def __init__(self, world: SafeWorld, owner: Signer, address: str) -> None:
        net = world.net
        self.world, self.owner = world, owner
        self.address: str = to_checksum_address(address)
        self.usdc = contract(net, "DevToken", net.usdc)
        assert net.manifest.reward_token is not None and net.router is not None
        self.comp = contract(net, "DevToken", net.manifest.reward_token)
        self.aave = net.manifest.protocol("aave").address
        self.a_token = a_token(net)
        self.comet = contract(net, "Comet", net.compound.address)
        self.rewards = net.compound.contracts["rewards"]
        self.mtoken = contract(net, "MToken", net.moonwell.address)
        self.vault = contract(net, "Vault", net.morpho.address)
        self.router = net.router
        self.targets = [self.aave, self.comet.address, self.mtoken.address, self.vault.address]
        self.spenders = [*self.targets, self.rewards, self.router]

    def holdings(self) -> dict[str, int]:
        """What the account holds, in units that time does not move (scaled or principal)."""
        a = self.address
        held = {
            "usdc": self.usdc.functions.balanceOf(a).call(),
            "comp": self.comp.functions.balanceOf(a).call(),
            "aave_scaled": self.a_token.functions.scaledBalanceOf(a).call(),
            "comet_principal": self.comet.functions.userBasic(a).call()[0],
            "mtokens": self.mtoken.functions.balanceOf(a).call(),
            "vault_shares": self.vault.functions.balanceOf(a).call(),
            "ether": self.world.w3.eth.get_balance(to_checksum_address(a)),
        }
        for token in (self.usdc, self.comp):
            for spender in self.spenders:
                held[f"allowance:{token.address}:{spender}"] = token.functions.allowance(
                    a, to_checksum_address(spender)
                ).call()
        return held

    def supply_calls(self, amount: int) -> list[tuple[str, bytes]]:
        """One supply of ``amount`` USDC to each pool."""
        a, usdc = self.address, self.usdc.address
        return [
            (self.aave, call("supply(address,uint256,address,uint16)", usdc, amount, a, 0)),
            (self.comet.address, call("supply(address,uint256)", usdc, amount)),
            (self.mtoken.address, call("mint(uint256)", amount)),
            (self.vault.address, call("deposit(uint256,address)", amount, a)),
        ]

    def refused(self, calls: Sequence[tuple[str, bytes]]) -> str:
        """Sends ``calls`` through the module from the operator; they must revert and leave
        the account as it was. Returns the revert reason."""
        before = self.holdings()
        world = self.world
        reason = world.operator.refused(world.execute(self.address, calls), world.module_abi)
        assert self.holdings() == before
        return reason


def fresh_owner(world: SafeWorld, key: bytes) -> Signer:
    owner = Signer(world.w3, key)
    world.net.d.fund(owner.address, 10**20)
    return owner


@pytest.fixture(scope="module")
def funded(devnet: Devnet) -> Iterator[tuple[SafeWorld, Account, dict[str, int]]]:
    """The funded account on the session's devnet (undone when the module's tests end), and
    the gas its deployment and first supply took."""
    snapshot = rpc(devnet.url, "evm_snapshot")
    d = devnet.d
    world = safe_world(devnet, collector=d.accounts[5])
    owner = fresh_owner(world, OWNER_KEY)
    address, deployed = world.deploy_account(owner.address)
    account = Account(world, owner, address)
    d.transact(account.usdc.functions.mint(account.address, FUNDED))
    d.transact(account.comp.functions.mint(account.address, REWARDS))
    calls = account.supply_calls(POSITION)
    first = world.operator.transact(world.execute(address, calls[:1]))
    world.operator.transact(world.execute(address, calls[1:]))
    gas = {"deploy": int(deployed["gasUsed"]), "first_supply": int(first["gasUsed"])}
    yield world, account, gas
    assert rpc(devnet.url, "evm_revert", [snapshot]) is True


@pytest.fixture
def acct(net: Devnet, funded: tuple[SafeWorld, Account, dict[str, int]]) -> Account:
    """The funded account, every change of a test reverted after it."""
    return funded[1]


@pytest.fixture
def world(acct: Account) -> SafeWorld:
    return acct.world


def warp(net: Devnet | SafeWorld, seconds: int) -> None:
    url = net.url if isinstance(net, Devnet) else net.net.url
    rpc(url, "evm_increaseTime", [seconds])
    rpc(url, "evm_mine")


def admin_refused(world: SafeWorld, fn: Any, sender: str | None = None) -> str:
    """The revert reason of an admin-side call ``fn`` from ``sender`` (default: the admin)."""
    d = world.net.d
    data = fn._encode_transaction_data()
    return revert_reason(world.w3, sender or d.admin, str(fn.address), data, world.module_abi)


# ------------------------------------------------------------------ deployment


def test_safe_and_the_module_are_at_their_deterministic_addresses(world: SafeWorld) -> None:
    w3 = world.w3
    for name, (_, canonical) in SAFE_CONTRACTS.items():
        code = w3.eth.get_code(to_checksum_address(canonical)).to_0x_hex()
        assert code == safe_artifact(name).deployed_bytecode, name
    assert SAFE_L2 == "0x29fcB43b46531BcA003ddC8FCB67FFE91900C762"
    assert SAFE_PROXY_FACTORY == "0x4e1DCf7AD4e460CfD30791CCC4F9c8a4f820ec67"
    for deployer in (DETERMINISTIC_DEPLOYER, SINGLETON_FACTORY):
        assert len(w3.eth.get_code(to_checksum_address(deployer))) > 0
    factory = w3.eth.contract(
        address=to_checksum_address(SAFE_PROXY_FACTORY), abi=safe_artifact("SafeProxyFactory").abi
    )
    assert bytes(factory.functions.proxyCreationCode().call()) == SAFE_PROXY_CREATION_CODE
    safe = world.net.manifest.safe
    assert safe is not None
    admin = world.net.d.admin
    assert safe.module == create2_address(
        DETERMINISTIC_DEPLOYER, MODULE_SALT, module_initcode(admin)
    )
    setup_code = bytes.fromhex(compile_project()["OperatorModuleSetup"].bytecode[2:])
    assert safe.module_setup == create2_address(DETERMINISTIC_DEPLOYER, SETUP_SALT, setup_code)
    module = world.module.functions
    assert module.isSealed().call()
    assert module.delay().call() == TIMELOCK_DELAY == 48 * 3600
    assert (module.maxFeeBps().call(), module.maxSlippageBps().call()) == (1_000, 100)
    assert (module.admin().call(), module.operator().call()) == (admin, world.operator.address)


def test_the_account_lands_where_the_formula_says_and_is_set_up(acct: Account) -> None:
    world, a = acct.world, acct.address
    safe = world.safe(a)
    assert safe.functions.getOwners().call() == [acct.owner.address]
    assert safe.functions.getThreshold().call() == 1
    assert safe.functions.isModuleEnabled(world.module.address).call()
    assert safe.functions.getModulesPaginated(SENTINEL, 10).call()[0] == [world.module.address]
    handler_slot = int.from_bytes(keccak(text="fallback_manager.handler.address"), "big")
    handler = world.w3.eth.get_storage_at(to_checksum_address(a), handler_slot)[-20:]
    assert to_checksum_address(handler) == COMPATIBILITY_FALLBACK_HANDLER
    singleton = world.w3.eth.get_storage_at(to_checksum_address(a), 0)[-20:]
    assert to_checksum_address(singleton) == SAFE_L2
    registered = world.module.functions.accounts(a).call()
    assert registered == [acct.owner.address, acct.usdc.address, world.collector] or tuple(
        registered
    ) == (acct.owner.address, acct.usdc.address, world.collector)
    assert world.module.functions.isActive(a).call()


def test_each_agent_gets_its_own_account_and_a_second_deployment_is_refused(
    world: SafeWorld,
) -> None:
    owner = fresh_owner(world, SECOND_OWNER_KEY)
    first, _ = world.deploy_account(owner.address, "agent-a")
    second, _ = world.deploy_account(owner.address, "agent-b")
    assert first != second
    constants = world.constants()
    again = create_proxy_calldata(owner.address, "agent-a", constants)
    raw = world.operator.sign(constants.factory, again, gas=3_000_000)
    assert world.operator.send_raw(raw)["status"] == 0  # CREATE2 collision


@pytest.mark.parametrize("who", ["operator", "zero"])
def test_an_account_whose_collector_is_the_operator_or_zero_is_refused(
    world: SafeWorld, who: str
) -> None:
    owner = fresh_owner(world, SECOND_OWNER_KEY)
    good = world.constants()
    # the domain refuses a zero collector itself, so those bytes are made by hand
    collector = world.operator.address if who == "operator" else "0x" + "00" * 20
    data = initializer(owner.address, good).replace(
        bytes.fromhex(good.fee_collector[2:]), bytes.fromhex(collector[2:])
    )
    nonce = 7
    salt = keccak(keccak(data) + nonce.to_bytes(32, "big"))
    deployment = SAFE_PROXY_CREATION_CODE + bytes(12) + bytes.fromhex(good.singleton[2:])
    where = create2_address(good.factory, salt, deployment)
    factory = world.w3.eth.contract(
        address=to_checksum_address(good.factory), abi=safe_artifact("SafeProxyFactory").abi
    )
    fn = factory.functions.createProxyWithNonce(good.singleton, data, nonce)
    raw = world.operator.sign(good.factory, fn._encode_transaction_data(), gas=3_000_000)
    assert world.operator.send_raw(raw)["status"] == 0  # the set-up's register reverted
    assert len(world.w3.eth.get_code(where)) == 0
    # the same bytes with the world's collector deploy (so the collector alone was refused)
    ok = factory.functions.createProxyWithNonce(
        good.singleton, initializer(owner.address, good), nonce
    )
    world.operator.transact(ok)
    good_salt = keccak(keccak(initializer(owner.address, good)) + nonce.to_bytes(32, "big"))
    assert len(world.w3.eth.get_code(create2_address(good.factory, good_salt, deployment))) > 0


# ------------------------------------------------------------------ what the operator may do


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


def test_claim_and_swap_rewards_into_the_account_token(acct: Account) -> None:
    world, a = acct.world, acct.address
    warp(world, 30 * 86_400)
    refresh_feeds(world)
    comp_before = acct.comp.functions.balanceOf(a).call()
    claim = call("claim(address,address,bool)", acct.comet.address, a, True)
    world.operator.transact(world.execute(a, [(acct.rewards, claim)]))
    comp = acct.comp.functions.balanceOf(a).call()
    assert comp > comp_before
    usdc_before = acct.usdc.functions.balanceOf(a).call()
    amount = 10 * COMP
    floor = world.module.functions.swapFloor(acct.comp.address, acct.usdc.address, amount).call()
    assert floor == 10 * 50 * USDC * 99 // 100  # 10 COMP at 50 USD, less 1%
    swap = call(
        "swap(address,address,uint256,uint256,address)",
        acct.comp.address,
        acct.usdc.address,
        amount,
        0,
        a,
    )
    world.operator.transact(world.execute(a, [(acct.router, swap)]))
    received = acct.usdc.functions.balanceOf(a).call() - usdc_before
    assert floor <= received < 500 * USDC
    assert acct.comp.functions.balanceOf(a).call() == comp - amount
    assert acct.comp.functions.allowance(a, acct.router).call() == 0


def test_pay_the_owner_with_a_fee_up_to_the_bound(acct: Account) -> None:
    world, a = acct.world, acct.address
    owner, collector = acct.owner.address, world.collector
    before = {h: acct.usdc.functions.balanceOf(h).call() for h in (a, owner, collector)}
    # fee * 10_000 <= 1_000 * (toOwner + fee): 100 of a 1,000 payment is exactly the bound
    world.operator.transact(world.module.functions.pay(a, 900 * USDC, 100 * USDC))
    after = {h: acct.usdc.functions.balanceOf(h).call() for h in (a, owner, collector)}
    assert after[owner] - before[owner] == 900 * USDC
    assert after[collector] - before[collector] == 100 * USDC
    assert before[a] - after[a] == 1_000 * USDC
    world.operator.transact(world.module.functions.pay(a, 5 * USDC, 0))  # no fee is fine


def test_gas_of_deployment_activation_and_rebalance(
    acct: Account, funded: tuple[SafeWorld, Account, dict[str, int]]
) -> None:
    """Measured from receipts: printed for the docs, bounded so a regression shows."""
    world, a, usdc = acct.world, acct.address, acct.usdc.address
    gas = dict(funded[2])
    rebalance = [
        (acct.aave, call("withdraw(address,uint256,address)", usdc, 5_000 * USDC, a)),
        (acct.vault.address, call("deposit(uint256,address)", 5_000 * USDC, a)),
    ]
    gas["rebalance"] = int(world.operator.transact(world.execute(a, rebalance))["gasUsed"])
    gas["activation"] = gas["deploy"] + gas["first_supply"]
    fee = world.operator.transact(world.module.functions.pay(a, 900 * USDC, 100 * USDC))
    gas["pay_with_fee"] = int(fee["gasUsed"])
    print("gas:", gas)
    assert gas["deploy"] < 400_000
    assert gas["first_supply"] < 400_000
    assert gas["rebalance"] < 800_000


# ------------------------------------------------------------------ what a thief cannot do


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


def swap_call(acct: Account, token_in: str, token_out: str, amount: int, to: str) -> bytes:
    return call("swap(address,address,uint256,uint256,address)", token_in, token_out, amount, 0, to)


def test_no_swap_of_the_base_token_or_to_another_recipient(acct: Account) -> None:
    a, usdc, comp = acct.address, acct.usdc.address, acct.comp.address
    into_reward = swap_call(acct, usdc, comp, 1_000 * USDC, a)
    assert acct.refused([(acct.router, into_reward)]).startswith(
        ("NotRewardToken(", "NotAccountToken(")
    )
    elsewhere = swap_call(acct, comp, usdc, COMP, THIEF)
    assert acct.refused([(acct.router, elsewhere)]).startswith("NotAccount(")


def test_no_swap_below_the_feed_after_the_pool_is_moved(acct: Account) -> None:
    net = acct.world.net
    d = net.d
    # the thief dumps COMP into the router's pool (its own COMP): COMP is ~10% cheaper there
    whale = d.actor("pool-mover")
    d.transact(acct.comp.functions.mint(whale, 5_000 * COMP))
    d.transact(acct.comp.functions.approve(acct.router, MAX), sender=whale)
    router = contract(net, "SwapRouter", acct.router)
    d.transact(
        router.functions.swap(acct.comp.address, acct.usdc.address, 5_000 * COMP, 0, whale),
        sender=whale,
    )
    reason = acct.refused(
        [
            (
                acct.router,
                swap_call(acct, acct.comp.address, acct.usdc.address, 10 * COMP, acct.address),
            )
        ]
    )
    assert reason.startswith("SwapBelowFeed(")


@pytest.mark.parametrize("feed_state", ["stale", "zero", "negative", "future"])
def test_no_swap_on_a_stale_or_bad_feed(acct: Account, feed_state: str) -> None:
    world = acct.world
    d = world.net.d
    safe = world.net.manifest.safe
    assert safe is not None
    feed = contract(world.net, "DevPriceFeed", safe.price_feeds[acct.comp.address])
    now = world.w3.eth.get_block("latest")["timestamp"]
    if feed_state == "stale":
        d.transact(feed.functions.setRound(50 * 10**8, now - 366 * 86_400))
    elif feed_state == "future":
        d.transact(feed.functions.setRound(50 * 10**8, now + 3_600))
    else:
        d.transact(feed.functions.setAnswer(0 if feed_state == "zero" else -1))
    swap = swap_call(acct, acct.comp.address, acct.usdc.address, COMP, acct.address)
    reason = acct.refused([(acct.router, swap)])
    assert reason.startswith(("StalePrice(", "BadPrice("))


@pytest.mark.parametrize(
    ("to_owner", "fee"),
    [(900 * USDC, 100 * USDC + 1), (0, 1), (0, 0), (1, 1), (9 * USDC, 10 * USDC)],
)
def test_no_fee_above_the_bound_or_without_a_payment_to_the_owner(
    acct: Account, to_owner: int, fee: int
) -> None:
    world = acct.world
    before = {
        h: acct.usdc.functions.balanceOf(h).call() for h in (acct.owner.address, world.collector)
    }
    held = acct.holdings()
    fn = world.module.functions.pay(acct.address, to_owner, fee)
    reason = world.operator.refused(fn, world.module_abi)
    assert reason.startswith(("FeeAboveBound(", "NoOwnerPayment("))
    assert acct.holdings() == held
    assert before == {
        h: acct.usdc.functions.balanceOf(h).call() for h in (acct.owner.address, world.collector)
    }


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


def test_calldata_of_the_wrong_length_is_refused(acct: Account) -> None:
    data = acct.supply_calls(10 * USDC)[0][1]
    for bad in (data + b"\x00" * 32, data[:-32], data + b"\x01"):
        assert acct.refused([(acct.aave, bad)]).startswith("BadCalldata(")


def test_no_call_to_the_module_configuration(acct: Account) -> None:
    world = acct.world
    m = world.module.functions
    change = rule_change(THIEF, "steal()", Rule(Kind.WITHDRAW, 0))
    attempts = {
        "proposeChange": (m.proposeChange(change), "NotAdmin("),
        "applyChange": (m.applyChange(change), "NotAdmin("),
        "cancelChange": (m.cancelChange(bytes(32)), "NotAdmin("),
        "seal": (m.seal(), "NotAdmin("),
        "setPaused": (m.setPaused(True), "NotAdmin("),
        "transferAdmin": (m.transferAdmin(world.operator.address), "NotAdmin("),
        "acceptAdmin": (m.acceptAdmin(), "NotPendingAdmin("),
        "optOut": (m.optOut(bytes(32)), "NotRegistered("),
        "optIn": (m.optIn(THIEF), "NotRegistered("),
    }
    for name, (fn, expected) in attempts.items():
        before = acct.holdings()
        assert world.operator.refused(fn, world.module_abi).startswith(expected), name
        assert acct.holdings() == before
    # nor through the account: the module is never a target
    data = m.applyChange(change)._encode_transaction_data()
    assert acct.refused([(world.module.address, data)]).startswith("NotListed(")


def test_no_listing_change_without_the_timelock(acct: Account) -> None:
    world, d = acct.world, acct.world.net.d
    m = world.module.functions
    # a rogue listing: Aave's borrow as a "withdrawal" (beneficiary word = the account)
    rogue = rule_change(
        acct.aave,
        "borrow(address,uint256,uint256,uint16,address)",
        Rule(Kind.WITHDRAW, 5, 0, 0, (4,)),
    )
    assert admin_refused(world, m.applyChange(rogue)).startswith("UnknownChange(")
    d.transact(m.proposeChange(rogue))
    borrow = call(
        "borrow(address,uint256,uint256,uint16,address)", acct.usdc.address, 1, 2, 0, acct.address
    )
    warp(world, TIMELOCK_DELAY - 60)
    assert admin_refused(world, m.applyChange(rogue)).startswith("TooEarly(")
    assert acct.refused([(acct.aave, borrow)]).startswith("NotListed(")
    warp(world, 120)
    d.transact(m.applyChange(rogue))
    listed = m.rules(acct.aave, selector("borrow(address,uint256,uint256,uint16,address)")).call()
    assert listed[0] == int(Kind.WITHDRAW)


def test_a_listing_naming_a_token_or_a_transfer_is_refused(acct: Account) -> None:
    world = acct.world
    m = world.module.functions
    for bad in (
        rule_change(acct.usdc.address, "mint(uint256)", Rule(Kind.SUPPLY, 1, 0)),
        rule_change(acct.vault.address, "transfer(address,uint256)", Rule(Kind.WITHDRAW, 2)),
        rule_change(acct.aave, "approve(address,uint256)", Rule(Kind.WITHDRAW, 2)),
        rule_change(world.module.address, "seal()", Rule(Kind.CLAIM, 0)),
        rule_change(
            acct.router,
            "swap(address,address,uint256,uint256,address)",
            Rule(Kind.SWAP, 5, 2, 0, (), (1,)),
        ),
    ):
        assert admin_refused(world, m.proposeChange(bad)).startswith(("BadRule(", "BadConfig("))


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


def account_value(acct: Account) -> int:
    """The account's USDC, idle and in the four pools (present values), in base units."""
    a = acct.address
    mtokens = acct.mtoken.functions.balanceOf(a).call()
    rate = acct.mtoken.functions.exchangeRateStored().call()
    shares = acct.vault.functions.balanceOf(a).call()
    return int(
        acct.usdc.functions.balanceOf(a).call()
        + acct.a_token.functions.balanceOf(a).call()
        + acct.comet.functions.balanceOf(a).call()
        + mtokens * rate // 10**18
        + acct.vault.functions.convertToAssets(shares).call()
    )


# ------------------------------------------------------------------ the owner's powers


def test_the_owner_revokes_the_operator_in_one_transaction(acct: Account) -> None:
    world, a = acct.world, acct.address
    disable = call("disableModule(address,address)", SENTINEL, world.module.address)
    world.owner_safe_tx(acct.owner, a, a, disable)
    assert not world.safe(a).functions.isModuleEnabled(world.module.address).call()
    assert not world.module.functions.isActive(a).call()
    reason = acct.refused(acct.supply_calls(USDC)[:1])
    assert "GS104" in reason  # Safe: the module is not enabled
    assert "GS104" in world.operator.refused(
        world.module.functions.pay(a, USDC, 0), world.module_abi
    )
    # re-enabling is the owner's call too, and the account's registration still holds
    world.owner_safe_tx(acct.owner, a, a, call("enableModule(address)", world.module.address))
    assert world.module.functions.isActive(a).call()
    world.operator.transact(world.execute(a, acct.supply_calls(USDC)[:1]))


def test_the_owner_refuses_a_pending_listing_for_its_account(acct: Account) -> None:
    world, d = acct.world, acct.world.net.d
    m = world.module.functions
    # the admin proposes a change of Comet's listing; the owner opts out of it
    change = rule_change(
        acct.comet.address, "supply(address,uint256)", Rule(Kind.SUPPLY, 2, 1, 0, (), (0,))
    )
    receipt = d.transact(m.proposeChange(change))
    (event,) = world.module.events.ChangeProposed().process_receipt(receipt)
    change_id = event["args"]["id"]
    world.owner_safe_tx(
        acct.owner,
        acct.address,
        world.module.address,
        m.optOut(change_id)._encode_transaction_data(),
    )
    assert m.refused(acct.address, acct.comet.address).call()
    # a second account, which did not opt out, keeps using Comet
    other_owner = fresh_owner(world, SECOND_OWNER_KEY)
    other, _ = world.deploy_account(other_owner.address, "other")
    d.transact(acct.usdc.functions.mint(other, 1_000 * USDC))
    comet_supply = (
        acct.comet.address,
        call("supply(address,uint256)", acct.usdc.address, 100 * USDC),
    )
    warp(world, TIMELOCK_DELAY)
    d.transact(m.applyChange(change))
    world.operator.transact(world.execute(other, [comet_supply]))
    assert acct.refused([comet_supply]).startswith("Refused(")
    # the other pools still work for the account that opted out; it can also opt back in
    world.operator.transact(world.execute(acct.address, acct.supply_calls(USDC)[:1]))
    world.owner_safe_tx(
        acct.owner,
        acct.address,
        world.module.address,
        m.optIn(acct.comet.address)._encode_transaction_data(),
    )
    world.operator.transact(world.execute(acct.address, [comet_supply]))


def test_the_operator_key_changes_only_through_the_timelock(acct: Account) -> None:
    world, d = acct.world, acct.world.net.d
    m = world.module.functions
    new_operator = d.accounts[6]
    change = operator_change(new_operator)
    d.transact(m.proposeChange(change))
    warp(world, TIMELOCK_DELAY // 2)
    assert admin_refused(world, m.applyChange(change)).startswith("TooEarly(")
    warp(world, TIMELOCK_DELAY // 2)
    d.transact(m.applyChange(change))
    assert world.operator.refused(
        world.execute(acct.address, acct.supply_calls(USDC)[:1]), world.module_abi
    ).startswith("NotOperator(")
    d.transact(world.execute(acct.address, acct.supply_calls(USDC)[:1]), sender=new_operator)
    # the admin may never be the operator
    assert admin_refused(world, m.proposeChange(operator_change(d.admin))).startswith(
        "BadOperator("
    )


def test_a_change_can_be_cancelled_and_the_admin_hands_over_in_two_steps(acct: Account) -> None:
    world, d = acct.world, acct.world.net.d
    m = world.module.functions
    change = rule_change(THIEF, "steal(address)", Rule(Kind.WITHDRAW, 1, 0, 0, (0,)))
    receipt = d.transact(m.proposeChange(change))
    (event,) = world.module.events.ChangeProposed().process_receipt(receipt)
    d.transact(m.cancelChange(event["args"]["id"]))
    warp(world, TIMELOCK_DELAY)
    assert admin_refused(world, m.applyChange(change)).startswith("UnknownChange(")
    old, new = d.admin, d.accounts[7]
    d.transact(m.transferAdmin(new))
    assert m.admin().call() == old and m.pendingAdmin().call() == new
    assert admin_refused(world, m.acceptAdmin(), d.accounts[8]).startswith("NotPendingAdmin(")
    d.transact(m.acceptAdmin(), sender=new)
    assert m.admin().call() == new
    assert admin_refused(world, m.proposeChange(change), old).startswith("NotAdmin(")


def test_the_admin_pauses_every_operator_call_at_once(acct: Account) -> None:
    world, d = acct.world, acct.world.net.d
    d.transact(world.module.functions.setPaused(True))
    assert acct.refused(acct.supply_calls(USDC)[:1]).startswith("Paused(")
    assert not world.module.functions.isActive(acct.address).call()
    # the owner keeps every power of its Safe meanwhile
    disable = call("disableModule(address,address)", SENTINEL, world.module.address)
    world.owner_safe_tx(acct.owner, acct.address, acct.address, disable)


def refresh_feeds(world: SafeWorld) -> None:
    """Stamps both devnet feeds now (after the clock was moved)."""
    safe = world.net.manifest.safe
    assert safe is not None
    d: Deployer = world.net.d
    for token, feed in safe.price_feeds.items():
        answer = 10**8 if token == world.net.usdc else 50 * 10**8
        d.transact(contract(world.net, "DevPriceFeed", feed).functions.setAnswer(answer))
