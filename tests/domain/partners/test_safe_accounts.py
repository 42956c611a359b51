"""The Safe account address formula, against an address Safe's factory produced on the devnet.

The vector below is the account that ``SafeProxyFactory.createProxyWithNonce`` deployed on a
devnet (``tests/devnet/operator_module/`` deploys accounts the same way and checks each
lands where ``safe_account_address`` says, from the factory's ``ProxyCreation`` event).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from eth_abi.abi import decode, encode
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from hypothesis import given
from hypothesis import strategies as st

from yieldagent.domain.partners.safe_accounts import (
    COMPATIBILITY_FALLBACK_HANDLER_1_4_1,
    SAFE_L2_1_4_1,
    SAFE_PROXY_CREATION_CODE,
    SAFE_PROXY_FACTORY_1_4_1,
    SALT_DOMAIN,
    SafeAccountConstants,
    create_proxy_calldata,
    initializer,
    safe_account_address,
    salt_nonce,
    setup_data,
)

DEVNET = SafeAccountConstants(
    chain_id=8453,
    factory=SAFE_PROXY_FACTORY_1_4_1,
    singleton=SAFE_L2_1_4_1,
    fallback_handler=COMPATIBILITY_FALLBACK_HANDLER_1_4_1,
    module_setup="0x725308040b4D93A52534154de2a655e172B7A373",
    module="0x8E58092bfCB6a88B7BE89ADCeCF0CE3065ccDeF8",
    token="0x5FbDB2315678afecb367f032d93F642f64180aa3",
    fee_collector="0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc",
)
OWNER = "0x3e106136Ca513Cd835E163Bc85016465bCb4B360"
DEPLOYED = "0xE3Be077819C4a1b4961646FD5e30a6b65fd756Be"  # by the factory, agent "yield-agent"
SETUP_TYPES = [
    "address[]",
    "uint256",
    "address",
    "bytes",
    "address",
    "address",
    "uint256",
    "address",
]


def test_the_address_is_where_the_factory_deployed_the_account() -> None:
    assert safe_account_address(OWNER, "yield-agent", DEVNET) == DEPLOYED


def test_the_salt_nonce_is_the_documented_formula() -> None:
    assert keccak(text="yieldagent.safe-account.v1") == SALT_DOMAIN
    expected = keccak(
        encode(["bytes32", "uint256", "bytes32"], [SALT_DOMAIN, 8453, keccak(text="yield-agent")])
    )
    assert salt_nonce(8453, "yield-agent") == int.from_bytes(expected, "big")


def test_the_initializer_is_safe_setup_with_the_module_set_up() -> None:
    data = initializer(OWNER, DEVNET)
    assert data[:4] == keccak(text=f"setup({','.join(SETUP_TYPES)})")[:4]
    owners, threshold, to, inner, handler, token, payment, receiver = decode(SETUP_TYPES, data[4:])
    assert [to_checksum_address(o) for o in owners] == [OWNER]
    assert threshold == 1 and payment == 0
    assert to_checksum_address(to) == DEVNET.module_setup
    assert to_checksum_address(handler) == DEVNET.fallback_handler
    assert int(token, 16) == 0 and int(receiver, 16) == 0
    assert inner == setup_data(DEVNET)
    assert inner[:4] == keccak(text="setUp(address,address,address)")[:4]
    module, usdc, collector = decode(["address", "address", "address"], inner[4:])
    assert [to_checksum_address(a) for a in (module, usdc, collector)] == [
        DEVNET.module,
        DEVNET.token,
        DEVNET.fee_collector,
    ]


def test_the_factory_calldata_carries_the_initializer_and_the_salt_nonce() -> None:
    data = create_proxy_calldata(OWNER, "yield-agent", DEVNET)
    assert data[:4] == keccak(text="createProxyWithNonce(address,bytes,uint256)")[:4]
    singleton, init, nonce = decode(["address", "bytes", "uint256"], data[4:])
    assert to_checksum_address(singleton) == SAFE_L2_1_4_1
    assert init == initializer(OWNER, DEVNET)
    assert nonce == salt_nonce(8453, "yield-agent")
    # the CREATE2 of the factory, spelled out
    salt = keccak(keccak(init) + nonce.to_bytes(32, "big"))
    code = SAFE_PROXY_CREATION_CODE + bytes(12) + bytes.fromhex(SAFE_L2_1_4_1[2:])
    raw = keccak(b"\xff" + bytes.fromhex(SAFE_PROXY_FACTORY_1_4_1[2:]) + salt + keccak(code))
    assert to_checksum_address(raw[12:]) == DEPLOYED


@pytest.mark.parametrize(
    "change",
    [
        {"chain_id": 1},
        {"module": "0x" + "11" * 20},
        {"module_setup": "0x" + "12" * 20},
        {"token": "0x" + "13" * 20},
        {"fee_collector": "0x" + "14" * 20},
        {"fallback_handler": "0x" + "15" * 20},
    ],
)
def test_every_constant_moves_the_address(change: dict[str, object]) -> None:
    assert safe_account_address(OWNER, "yield-agent", replace(DEVNET, **change)) != DEPLOYED  # type: ignore[arg-type]


def test_each_agent_and_owner_has_its_own_account() -> None:
    assert safe_account_address(OWNER, "other-agent", DEVNET) != DEPLOYED
    assert safe_account_address(DEVNET.fee_collector, "yield-agent", DEVNET) != DEPLOYED
    # the owner's letter case does not matter
    assert safe_account_address(OWNER.lower(), "yield-agent", DEVNET) == DEPLOYED


@pytest.mark.parametrize("field", ["fee_collector", "module", "token", "factory"])
@pytest.mark.parametrize("value", ["0x" + "00" * 20, "0x1234", "not an address"])
def test_constants_refuse_a_zero_or_malformed_address(field: str, value: str) -> None:
    with pytest.raises(ValueError, match=field):
        replace(DEVNET, **{field: value})  # type: ignore[arg-type]


def test_a_zero_owner_is_refused() -> None:
    with pytest.raises(ValueError, match="owner"):
        initializer("0x" + "00" * 20, DEVNET)


@given(owner=st.binary(min_size=20, max_size=20), agent=st.text(min_size=1, max_size=64))
def test_addresses_are_checksummed_and_deterministic(owner: bytes, agent: str) -> None:
    if not any(owner):
        owner = b"\x01" + owner[1:]
    eoa = to_checksum_address(owner)
    address = safe_account_address(eoa, agent, DEVNET)
    assert address == to_checksum_address(address)
    assert address == safe_account_address(eoa, agent, DEVNET)
