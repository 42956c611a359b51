"""Tests for Kernel v3.1 counterfactual smart-account address derivation."""

import re

from eth_utils.address import is_checksum_address, to_checksum_address
from hypothesis import given
from hypothesis import strategies as st

from yieldagent.domain.partners.smart_accounts import (
    DEFAULT_AGENT_ID,
    agent_index,
    kernel_account_address,
    smart_account_address,
)

OWNER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
ADDRESS_RE = re.compile(r"^0x[0-9a-fA-F]{40}$")

owners = st.binary(min_size=20, max_size=20).map(to_checksum_address)


def test_matches_zerodev_sdk_check_value() -> None:
    assert kernel_account_address(OWNER, 0) == "0xB3729F7e1Ab0B4a50E7De5599Ecc321B8775d30d"


def test_agent_index_is_keccak_of_agent_id() -> None:
    assert agent_index("x") != agent_index("y")
    assert 0 <= agent_index(DEFAULT_AGENT_ID) < 2**256


def test_is_deterministic() -> None:
    assert smart_account_address(OWNER) == smart_account_address(OWNER)
    assert smart_account_address(OWNER) == smart_account_address(OWNER, DEFAULT_AGENT_ID)


def test_different_agent_ids_give_different_addresses() -> None:
    ids = ["yield-agent", "yield-agent-2", "other", ""]
    assert len({smart_account_address(OWNER, agent_id) for agent_id in ids}) == len(ids)


def test_default_agent_differs_from_index_zero() -> None:
    assert smart_account_address(OWNER) != kernel_account_address(OWNER, 0)


def test_owner_letter_case_does_not_matter() -> None:
    expected = smart_account_address(OWNER)
    assert smart_account_address(OWNER.lower()) == expected
    assert smart_account_address("0x" + OWNER[2:].upper()) == expected


@given(owner=owners, agent_id=st.text(max_size=30))
def test_any_owner_gives_checksummed_address(owner: str, agent_id: str) -> None:
    address = smart_account_address(owner, agent_id)
    assert ADDRESS_RE.match(address)
    assert is_checksum_address(address)


@given(many=st.lists(owners, min_size=2, max_size=5, unique=True))
def test_distinct_owners_give_distinct_addresses(many: list[str]) -> None:
    assert len({smart_account_address(owner) for owner in many}) == len(many)
