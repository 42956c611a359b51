"""The module, Safe and an account where the formulas put them, and the accounts the module
refuses to register."""

from __future__ import annotations

import pytest
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak

from support.operator_module import SECOND_OWNER_KEY, Account, fresh_owner
from support.safe_world import SENTINEL, SafeWorld
from yieldagent.devnet.safe import (
    COMPATIBILITY_FALLBACK_HANDLER,
    DETERMINISTIC_DEPLOYER,
    MODULE_SALT,
    SAFE_CONTRACTS,
    SAFE_L2,
    SAFE_PROXY_FACTORY,
    SETUP_SALT,
    SINGLETON_FACTORY,
    TIMELOCK_DELAY,
    create2_address,
    module_initcode,
    safe_artifact,
)
from yieldagent.devnet.toolchain import compile_project
from yieldagent.domain.partners.safe_accounts import (
    SAFE_PROXY_CREATION_CODE,
    create_proxy_calldata,
    initializer,
)

pytestmark = pytest.mark.evm


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
