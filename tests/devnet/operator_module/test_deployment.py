"""The module, Safe and an account where the formulas put them; the accounts the module
refuses to register, which are created all the same and are their owners' alone; accounts
deployed after a listing changed, or on a chain whose module cannot register them."""

from __future__ import annotations

import pytest
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from web3.logs import DISCARD
from web3.types import TxReceipt

from support.operator_module import SECOND_OWNER_KEY, Account, call, fresh_owner, warp
from support.safe_world import SENTINEL, USDC, SafeWorld, Signer, contract
from yieldagent.devnet.anvil import Anvil, free_port, rpc
from yieldagent.devnet.deployer import Deployer, decode_custom_error
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
    deploy_deterministic,
    deploy_safe_contracts,
    install_deployers,
    module_at,
    module_initcode,
    safe_artifact,
    token_change,
)
from yieldagent.devnet.toolchain import compile_project
from yieldagent.domain.partners.safe_accounts import (
    SAFE_PROXY_CREATION_CODE,
    create_proxy_calldata,
    initializer,
    safe_account_address,
)

ZERO = "0x" + "00" * 20
OUTSIDER_KEY = keccak(text="yieldagent.tests:outsider")

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


def refused_registrations(world: SafeWorld, account: str, receipt: TxReceipt) -> list[bytes]:
    """The revert data of each ``RegistrationRefused`` the new Safe ``account`` emitted."""
    setup = contract(world.net, "OperatorModuleSetup", account)
    events = setup.events.RegistrationRefused().process_receipt(receipt, errors=DISCARD)
    assert all(e["args"]["module"] == world.module.address for e in events)
    return [bytes(e["args"]["reason"]) for e in events]


def deploy_by_hand(world: SafeWorld, data: bytes, nonce: int) -> tuple[str, TxReceipt]:
    """Deploys a Safe with the initializer ``data`` (made by hand), from the operator."""
    constants = world.constants()
    salt = keccak(keccak(data) + nonce.to_bytes(32, "big"))
    proxy = SAFE_PROXY_CREATION_CODE + bytes(12) + bytes.fromhex(constants.singleton[2:])
    where = create2_address(constants.factory, salt, proxy)
    factory = world.w3.eth.contract(
        address=to_checksum_address(constants.factory), abi=safe_artifact("SafeProxyFactory").abi
    )
    fn = factory.functions.createProxyWithNonce(constants.singleton, data, nonce)
    return where, world.operator.transact(fn)


def the_owner_takes_its_funds(world: SafeWorld, owner: Signer, account: str, token: str) -> None:
    """The owner moves what its Safe holds of ``token`` to itself, in one Safe transaction."""
    erc20 = contract(world.net, "DevToken", token)
    held = erc20.functions.balanceOf(account).call()
    before = erc20.functions.balanceOf(owner.address).call()
    world.owner_safe_tx(
        owner, account, token, call("transfer(address,uint256)", owner.address, held)
    )
    assert erc20.functions.balanceOf(owner.address).call() - before == held > 0


@pytest.mark.parametrize("who", ["operator", "zero"])
def test_an_account_whose_collector_is_the_operator_or_zero_is_created_unregistered(
    world: SafeWorld, who: str
) -> None:
    """The module refuses to register it, and the Safe is created all the same: funds sent to
    its address before are its owner's, and the operator can do nothing with it."""
    owner = fresh_owner(world, SECOND_OWNER_KEY)
    good = world.constants()
    # the domain refuses a zero collector itself, so those bytes are made by hand
    collector = world.operator.address if who == "operator" else "0x" + "00" * 20
    data = initializer(owner.address, good).replace(
        bytes.fromhex(good.fee_collector[2:]), bytes.fromhex(collector[2:])
    )
    salt = keccak(keccak(data) + (7).to_bytes(32, "big"))
    proxy = SAFE_PROXY_CREATION_CODE + bytes(12) + bytes.fromhex(good.singleton[2:])
    where = create2_address(good.factory, salt, proxy)
    usdc = contract(world.net, "DevToken", good.token)
    world.net.d.transact(usdc.functions.mint(where, 1_000 * USDC))  # sent before it exists
    address, receipt = deploy_by_hand(world, data, 7)
    assert address == where and len(world.w3.eth.get_code(where)) > 0
    assert world.safe(where).functions.getOwners().call() == [owner.address]
    [reason] = refused_registrations(world, where, receipt)
    assert str(decode_custom_error(reason.hex(), world.module_abi)).startswith("BadCollector(")
    m = world.module.functions
    assert m.accounts(where).call()[0] == ZERO and not m.isActive(where).call()
    supply = call("supply(address,uint256,address,uint16)", good.token, USDC, where, 0)
    aave = world.net.manifest.protocol("aave").address
    for fn in (world.execute(where, [(aave, supply)]), m.pay(where, USDC, 0)):
        assert world.operator.refused(fn, world.module_abi).startswith("NotRegistered(")
    the_owner_takes_its_funds(world, owner, where, good.token)


def test_an_account_owned_by_the_operator_is_created_unregistered(world: SafeWorld) -> None:
    """The operator key owning an account would hold it outside every rule of the module:
    the module refuses to register one, and the operator can do nothing through the module."""
    address, receipt = world.deploy_account(world.operator.address, "operator-owned")
    [reason] = refused_registrations(world, address, receipt)
    assert str(decode_custom_error(reason.hex(), world.module_abi)).startswith("BadOwner(")
    assert world.module.functions.accounts(address).call()[0] == ZERO
    pay = world.module.functions.pay(address, USDC, 0)
    assert world.operator.refused(pay, world.module_abi).startswith("NotRegistered(")


def test_an_account_deployed_after_its_token_is_unlisted_is_registered_and_served(
    acct: Account,
) -> None:
    """The mistaken admin unlists the accounts' token (through the timelock): accounts handed
    out before, deployed after, register and are served as those deployed before it."""
    world, d = acct.world, acct.world.net.d
    m = world.module.functions
    usdc = acct.usdc.address
    unlist = token_change(usdc, ZERO, 0, reward=False)
    d.transact(m.proposeChange(unlist))
    warp(world, TIMELOCK_DELAY)
    d.transact(m.applyChange(unlist))
    assert m.tokens(usdc).call()[0] == ZERO
    owner = fresh_owner(world, SECOND_OWNER_KEY)
    late = safe_account_address(owner.address, "late", world.constants())
    d.transact(acct.usdc.functions.mint(late, 1_000 * USDC))  # sent before it is deployed
    address, _ = world.deploy_account(owner.address, "late")
    assert address == late
    assert tuple(m.accounts(late).call()) == (owner.address, usdc, world.collector)
    supply = call("supply(address,uint256,address,uint16)", usdc, 100 * USDC, late, 0)
    world.operator.transact(world.execute(late, [(acct.aave, supply)]))
    world.operator.transact(m.pay(late, 10 * USDC, 0))
    assert acct.usdc.functions.balanceOf(owner.address).call() == 10 * USDC
    # and the account deployed before the unlisting is served as before
    world.operator.transact(world.execute(acct.address, acct.supply_calls(USDC)[:1]))
    world.operator.transact(m.pay(acct.address, USDC, 0))


@pytest.mark.parametrize("module_there", ["missing", "not sealed"])
def test_an_account_deployed_on_a_chain_whose_module_cannot_register_it_is_its_owners(
    world: SafeWorld, module_there: str
) -> None:
    """Its owner sent USDC to its address on a second chain where the module is missing, or
    was never sealed. Anyone deploys the account there from the same initializer (the salt
    names the first chain, but the factory does not check it); the owner takes the funds."""
    owner_key = SECOND_OWNER_KEY
    constants = world.constants()
    deployment = create_proxy_calldata(Signer(world.w3, owner_key).address, "agent", constants)
    address = safe_account_address(Signer(world.w3, owner_key).address, "agent", constants)
    with Anvil.start(free_port(), chain_id=10) as other:
        d = Deployer(other.url)
        install_deployers(d)
        deploy_safe_contracts(d)
        setup_code = bytes.fromhex(compile_project()["OperatorModuleSetup"].bytecode[2:])
        assert deploy_deterministic(d, DETERMINISTIC_DEPLOYER, SETUP_SALT, setup_code) == (
            constants.module_setup
        )
        if module_there == "not sealed":  # anyone can put it there; only its admin seals it
            initcode = module_initcode(world.net.d.admin)
            module = deploy_deterministic(d, DETERMINISTIC_DEPLOYER, MODULE_SALT, initcode)
            assert module == constants.module
            assert not module_at(d, module).functions.isSealed().call()
        token = d.deploy(compile_project()["DevToken"], "USD Coin", "USDC", 6)
        d.transact(token.functions.mint(address, 500 * USDC))
        outsider = Signer(d.w3, OUTSIDER_KEY)
        d.fund(outsider.address, 10**18)
        outsider.send(constants.factory, deployment)  # anyone may deploy it
        assert len(d.w3.eth.get_code(to_checksum_address(address))) > 0
        owner = Signer(d.w3, owner_key)
        d.fund(owner.address, 10**18)
        safe = d.w3.eth.contract(address=to_checksum_address(address), abi=world.safe_abi)
        assert safe.functions.getOwners().call() == [owner.address]
        signature = bytes(12) + bytes.fromhex(owner.address[2:]) + bytes(32) + b"\x01"
        move = call("transfer(address,uint256)", owner.address, 500 * USDC)
        owner.transact(
            safe.functions.execTransaction(
                token.address, 0, move, 0, 0, 0, 0, ZERO, ZERO, signature
            )
        )
        assert token.functions.balanceOf(owner.address).call() == 500 * USDC


def test_no_gas_limit_deploys_an_account_unregistered(world: SafeWorld) -> None:
    """An outsider front-runs the service's deployment with too little gas for the module's
    register, hoping the set-up goes on without it: at every gas limit the deployment either
    reverts or registers the account."""
    constants = world.constants()
    owner = fresh_owner(world, SECOND_OWNER_KEY).address
    data = create_proxy_calldata(owner, "starved", constants)
    address = safe_account_address(owner, "starved", constants)
    outsider = fresh_owner(world, OUTSIDER_KEY)
    m = world.module.functions
    seen: dict[int, str] = {}

    def attempt(gas: int) -> str:
        snapshot = rpc(world.net.url, "evm_snapshot")
        try:
            receipt = outsider.send_raw(outsider.sign(constants.factory, data, gas=gas))
            if receipt["status"] == 0:
                seen[gas] = "reverted"
            elif m.accounts(address).call()[0] == owner:
                seen[gas] = "registered"
            else:
                seen[gas] = "unregistered"
        finally:
            assert rpc(world.net.url, "evm_revert", [snapshot]) is True
        return seen[gas]

    low, high = 150_000, 1_000_000
    assert (attempt(low), attempt(high)) == ("reverted", "registered")
    while high - low > 1:  # the least gas limit that does not revert
        middle = (low + high) // 2
        if attempt(middle) == "reverted":
            low = middle
        else:
            high = middle
    for gas in range(high, high + 100_000, 2_500):
        attempt(gas)
    assert "unregistered" not in seen.values(), sorted(seen.items())
