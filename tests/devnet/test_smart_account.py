"""The devnet smart account: ERC-7579 execute, and the session key's powers enforced on chain."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from web3 import Web3
from web3.contract import Contract
from web3.types import RPCEndpoint

from support.devnet import Devnet
from support.smart_account import USDC_UNIT, Wallet, install_wallet, revert_data, selector
from yieldagent.devnet.accounts import (
    FEES_PAID_SLOT,
    OWNER_SLOT,
    PAID_TO_OWNER_SLOT,
    POLICY_SLOT,
    SESSION_KEY_SLOT,
    install_account,
)
from yieldagent.devnet.deployer import DeployError
from yieldagent.devnet.toolchain import compile_project

pytestmark = pytest.mark.evm

ACCOUNT = Web3.to_checksum_address("0xb3729f7e1ab0b4a50e7de5599ecc321b8775d30d")
FORBIDDEN = selector("SessionKeyForbidden(address,bytes4)")
MAX = 2**256 - 1


@pytest.fixture
def wallet(net: Devnet) -> Wallet:
    """An account holding 10,000 USDC."""
    wallet = install_wallet(net, ACCOUNT)
    net.d.transact(usdc(net).functions.mint(ACCOUNT, 10_000 * USDC_UNIT))
    return wallet


def usdc(net: Devnet) -> Contract:
    return net.d.at(compile_project()["DevToken"], net.usdc)


def contract(net: Devnet, name: str, address: str) -> Contract:
    return net.d.at(compile_project()[name], address)


def test_install_writes_code_and_slots_and_is_idempotent(net: Devnet, wallet: Wallet) -> None:
    w3 = net.w3
    runtime = compile_project()["SmartAccount"].deployed_bytecode
    assert w3.eth.get_code(ACCOUNT).to_0x_hex() == runtime
    slots = {s: w3.eth.get_storage_at(ACCOUNT, s)[-20:] for s in range(3)}
    assert slots[OWNER_SLOT] == bytes.fromhex(wallet.owner[2:])
    assert slots[SESSION_KEY_SLOT] == bytes.fromhex(wallet.session_key[2:])
    assert slots[POLICY_SLOT] == bytes.fromhex(str(wallet.policy.address)[2:])
    # the counters survive a re-install
    seven = "0x" + "07".rjust(64, "0")
    w3.provider.make_request(
        RPCEndpoint("anvil_setStorageAt"), [ACCOUNT, hex(FEES_PAID_SLOT), seven]
    )
    policy = str(wallet.policy.address)
    install_account(w3, ACCOUNT, wallet.owner, wallet.session_key, policy, runtime)
    assert wallet.account.functions.feesPaid().call() == 7
    assert wallet.account.functions.owner().call() == wallet.owner
    assert wallet.account.functions.accountId().call() == "yieldagent.devnet-session-account.1.0.0"
    assert PAID_TO_OWNER_SLOT == 4


def test_execution_modes(wallet: Wallet) -> None:
    modes = wallet.account.functions.supportsExecutionMode
    assert modes(bytes(32)).call()
    assert modes(bytes([1]) + bytes(31)).call()
    assert not modes(bytes([0xFF]) + bytes(31)).call()  # delegatecall
    assert not modes(bytes([0, 1]) + bytes(30)).call()  # try exec type


def test_session_key_supplies_and_withdraws_on_comet(net: Devnet, wallet: Wallet) -> None:
    d, comet_address = net.d, net.compound.address
    comet = contract(net, "Comet", comet_address)
    amount = 1_000 * USDC_UNIT
    approve = usdc(net).encode_abi("approve", [comet_address, amount])
    supply = comet.encode_abi("supply", [net.usdc, amount])
    calls = [(net.usdc, 0, approve), (comet_address, 0, supply)]
    d.transact(wallet.execute_batch(calls), sender=wallet.session_key)
    assert comet.functions.balanceOf(ACCOUNT).call() in (amount - 1, amount)
    withdraw = comet.encode_abi("withdraw", [net.usdc, MAX])
    d.transact(wallet.execute(comet_address, withdraw), sender=wallet.session_key)
    assert comet.functions.balanceOf(ACCOUNT).call() == 0
    assert usdc(net).functions.balanceOf(ACCOUNT).call() >= 10_000 * USDC_UNIT - 1


def test_session_key_mints_and_redeems_on_moonwell(net: Devnet, wallet: Wallet) -> None:
    d, address = net.d, net.moonwell.address
    mtoken = contract(net, "MToken", address)
    amount = 2_000 * USDC_UNIT
    calls = [
        (net.usdc, 0, usdc(net).encode_abi("approve", [address, amount])),
        (address, 0, mtoken.encode_abi("mint", [amount])),
    ]
    d.transact(wallet.execute_batch(calls), sender=wallet.session_key)
    assert mtoken.functions.balanceOfUnderlying(ACCOUNT).call() in (amount - 1, amount)
    redeem = mtoken.encode_abi("redeemUnderlying", [amount // 2])
    d.transact(wallet.execute(address, redeem), sender=wallet.session_key)
    assert usdc(net).functions.balanceOf(ACCOUNT).call() == 9_000 * USDC_UNIT


def test_session_key_deposits_withdraws_and_redeems_on_the_vault(
    net: Devnet, wallet: Wallet
) -> None:
    d, address = net.d, net.morpho.address
    vault = contract(net, "Vault", address)
    amount = 3_000 * USDC_UNIT
    calls = [
        (net.usdc, 0, usdc(net).encode_abi("approve", [address, amount])),
        (address, 0, vault.encode_abi("deposit", [amount, ACCOUNT])),
    ]
    d.transact(wallet.execute_batch(calls), sender=wallet.session_key)
    shares = vault.functions.balanceOf(ACCOUNT).call()
    assert vault.functions.convertToAssets(shares).call() in (amount - 1, amount)
    withdraw = vault.encode_abi("withdraw", [1_000 * USDC_UNIT, ACCOUNT, ACCOUNT])
    d.transact(wallet.execute(address, withdraw), sender=wallet.session_key)
    rest = vault.functions.balanceOf(ACCOUNT).call()
    redeem = vault.encode_abi("redeem", [rest, ACCOUNT, ACCOUNT])
    d.transact(wallet.execute(address, redeem), sender=wallet.session_key)
    assert vault.functions.balanceOf(ACCOUNT).call() == 0
    assert usdc(net).functions.balanceOf(ACCOUNT).call() >= 10_000 * USDC_UNIT - 2
    # a deposit for someone else is refused
    other = vault.encode_abi("deposit", [amount, wallet.owner])
    assert revert_data(wallet.execute(address, other), wallet.session_key).startswith(FORBIDDEN)


def test_session_key_supplies_and_withdraws_on_aave(net: Devnet, wallet: Wallet) -> None:
    d, aave = net.d, net.manifest.protocol("aave")
    pool = net.w3.eth.contract(address=Web3.to_checksum_address(aave.address), abi=AAVE_ABI)
    a_token = contract(net, "DevToken", aave.contracts["a_token"])  # balanceOf is ERC-20's
    amount = 4_000 * USDC_UNIT
    calls = [
        (net.usdc, 0, usdc(net).encode_abi("approve", [aave.address, amount])),
        (aave.address, 0, pool.encode_abi("supply", [net.usdc, amount, ACCOUNT, 0])),
    ]
    d.transact(wallet.execute_batch(calls), sender=wallet.session_key)
    assert a_token.functions.balanceOf(ACCOUNT).call() in (amount - 1, amount)
    withdraw = pool.encode_abi("withdraw", [net.usdc, MAX, ACCOUNT])
    d.transact(wallet.execute(aave.address, withdraw), sender=wallet.session_key)
    assert a_token.functions.balanceOf(ACCOUNT).call() == 0
    assert usdc(net).functions.balanceOf(ACCOUNT).call() >= 10_000 * USDC_UNIT
    for bad in (
        pool.encode_abi("supply", [net.usdc, 5, wallet.owner, 0]),
        pool.encode_abi("supply", [net.usdc, 5, ACCOUNT, 7]),
        pool.encode_abi("withdraw", [net.usdc, 5, wallet.owner]),
    ):
        assert revert_data(wallet.execute(aave.address, bad), wallet.session_key).startswith(
            FORBIDDEN
        )


def test_the_deployed_policy_lists_every_protocol(net: Devnet) -> None:
    policy = contract(net, "SessionPolicy", net.manifest.account_policy)
    kinds = {p.name: policy.functions.kindOf(p.address).call() for p in net.manifest.protocols}
    assert kinds == {"aave": 1, "compound": 2, "moonwell": 3, "morpho_gauntlet_usdc_prime": 4}
    assert policy.functions.kindOf(net.compound.contracts["rewards"]).call() == 5
    assert net.router is not None
    assert policy.functions.kindOf(net.router).call() == 6
    assert policy.functions.isToken(net.usdc).call()
    assert policy.functions.isToken(net.compound.contracts["reward_token"]).call()
    assert policy.functions.feeToken().call() == net.usdc
    assert policy.functions.feeCollector().call() == net.manifest.extras["fee_collector"]
    assert policy.functions.maxFeeBps().call() == 2000


def test_transfer_to_owner_works_and_to_anyone_else_reverts(net: Devnet, wallet: Wallet) -> None:
    token = usdc(net)
    to_owner = token.encode_abi("transfer", [wallet.owner, 100 * USDC_UNIT])
    net.d.transact(wallet.execute(net.usdc, to_owner), sender=wallet.session_key)
    assert token.functions.balanceOf(wallet.owner).call() == 100 * USDC_UNIT
    assert wallet.account.functions.paidToOwner().call() == 100 * USDC_UNIT
    stranger = net.d.accounts[7]
    to_stranger = token.encode_abi("transfer", [stranger, 1])
    data = revert_data(wallet.execute(net.usdc, to_stranger), wallet.session_key)
    assert data.startswith(FORBIDDEN)
    with pytest.raises(DeployError):
        net.d.transact(wallet.execute(net.usdc, to_stranger), sender=wallet.session_key)
    assert token.functions.balanceOf(stranger).call() == 0


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(to=st.binary(min_size=20, max_size=20), amount=st.integers(0, 10_000 * USDC_UNIT))
def test_session_key_transfer_to_any_other_address_reverts(
    net: Devnet, wallet: Wallet, to: bytes, amount: int
) -> None:
    recipient = Web3.to_checksum_address(to)
    if recipient in (wallet.owner, wallet.fee_collector):
        return
    call = usdc(net).encode_abi("transfer", [recipient, amount])
    data = revert_data(wallet.execute(net.usdc, call), wallet.session_key)
    assert data.startswith(FORBIDDEN)
    # nor through approve + transferFrom: approving anyone but a listed protocol is refused
    approve = usdc(net).encode_abi("approve", [recipient, amount])
    data = revert_data(wallet.execute(net.usdc, approve), wallet.session_key)
    assert data.startswith(FORBIDDEN)


def test_fee_transfers_are_capped_by_what_the_owner_received(net: Devnet, wallet: Wallet) -> None:
    token, d = usdc(net), net.d
    cap_exceeded = selector("FeeCapExceeded(uint256,uint256,uint256,uint256)")
    fee_call = token.encode_abi("transfer", [wallet.fee_collector, 1])
    data = revert_data(wallet.execute(net.usdc, fee_call), wallet.session_key)
    assert data.startswith(cap_exceeded)  # nothing paid to the owner yet: no fee at all
    # 800 to the owner allows fees up to 200 (20% of the 1,000 that left)
    to_owner = token.encode_abi("transfer", [wallet.owner, 800 * USDC_UNIT])
    fee = token.encode_abi("transfer", [wallet.fee_collector, 150 * USDC_UNIT])
    d.transact(
        wallet.execute_batch([(net.usdc, 0, to_owner), (net.usdc, 0, fee)]),
        sender=wallet.session_key,
    )
    assert token.functions.balanceOf(wallet.fee_collector).call() == 150 * USDC_UNIT
    more = token.encode_abi("transfer", [wallet.fee_collector, 50 * USDC_UNIT + 1])
    data = revert_data(wallet.execute(net.usdc, more), wallet.session_key)
    assert data.startswith(cap_exceeded)
    exact = token.encode_abi("transfer", [wallet.fee_collector, 50 * USDC_UNIT])
    d.transact(wallet.execute(net.usdc, exact), sender=wallet.session_key)
    assert wallet.account.functions.feesPaid().call() == 200 * USDC_UNIT


def test_owner_can_do_anything_and_strangers_nothing(net: Devnet, wallet: Wallet) -> None:
    token, d = usdc(net), net.d
    stranger = d.accounts[7]
    call = token.encode_abi("transfer", [stranger, 5 * USDC_UNIT])
    d.transact(wallet.execute(net.usdc, call), sender=wallet.owner)
    assert token.functions.balanceOf(stranger).call() == 5 * USDC_UNIT
    d.fund(ACCOUNT, 10**18)
    d.transact(wallet.execute(stranger, "0x", value=10**17), sender=wallet.owner)
    data = revert_data(wallet.execute(net.usdc, call), stranger)
    assert data.startswith(selector("Unauthorized(address)"))
    data = revert_data(wallet.execute(stranger, "0x", value=1), wallet.session_key)
    assert data.startswith(selector("SessionKeyValueForbidden(address,uint256)"))


def test_a_failing_call_bubbles_its_revert_reason(net: Devnet, wallet: Wallet) -> None:
    comet = contract(net, "Comet", net.compound.address)
    too_much = comet.encode_abi("supply", [net.usdc, 1])  # no allowance given
    data = revert_data(wallet.execute(net.compound.address, too_much), wallet.owner)
    assert "insufficient allowance" in data  # the token's own reason, bubbled


AAVE_ABI = [
    {
        "type": "function",
        "name": "supply",
        "stateMutability": "nonpayable",
        "inputs": [
            {"name": "asset", "type": "address"},
            {"name": "amount", "type": "uint256"},
            {"name": "onBehalfOf", "type": "address"},
            {"name": "referralCode", "type": "uint16"},
        ],
        "outputs": [],
    },
    {
        "type": "function",
        "name": "withdraw",
        "stateMutability": "nonpayable",
        "inputs": [
            {"name": "asset", "type": "address"},
            {"name": "amount", "type": "uint256"},
            {"name": "to", "type": "address"},
        ],
        "outputs": [{"name": "", "type": "uint256"}],
    },
]
