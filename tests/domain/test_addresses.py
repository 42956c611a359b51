"""EVM addresses and transaction hashes: parsing and canonical forms."""

from __future__ import annotations

import pytest
from eth_utils.address import is_checksum_address
from hypothesis import given
from hypothesis import strategies as st

from yieldagent.domain.addresses import is_address, parse_address, parse_tx_hash
from yieldagent.domain.errors import InvalidInput, Location

CHECKSUMMED = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
TX_HASH = "0x" + "a1B2c3D4e5F6" * 5 + "abcd"

hex_20 = st.binary(min_size=20, max_size=20).map(bytes.hex)
hex_32 = st.binary(min_size=32, max_size=32).map(bytes.hex)
# A random letter case for each character of a hex string.
recased = st.tuples(hex_20, st.lists(st.booleans(), min_size=40, max_size=40)).map(
    lambda pair: "".join(c.upper() if up else c for c, up in zip(*pair, strict=True))
)
locations = st.lists(st.one_of(st.text(max_size=8), st.integers(0, 9)), min_size=1, max_size=4)


@pytest.mark.parametrize(
    "value", [CHECKSUMMED, CHECKSUMMED.lower(), "0x" + CHECKSUMMED[2:].upper()]
)
def test_any_letter_case_gives_the_checksummed_form(value: str) -> None:
    assert parse_address(value, ("eoa",)) == CHECKSUMMED


@given(digits=recased)
def test_parsing_is_case_insensitive_and_checksums(digits: str) -> None:
    parsed = parse_address("0x" + digits, ("body", "eoa"))
    assert is_checksum_address(parsed)
    assert parsed.lower() == "0x" + digits.lower()
    assert parse_address(parsed, ("x",)) == parsed  # idempotent


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("", id="empty"),
        pytest.param("0x", id="prefix only"),
        pytest.param(CHECKSUMMED[2:], id="no prefix"),
        pytest.param("0X" + CHECKSUMMED[2:], id="upper-case prefix"),
        pytest.param(CHECKSUMMED[:-1], id="39 digits"),
        pytest.param(CHECKSUMMED + "0", id="41 digits"),
        pytest.param(CHECKSUMMED[:-1] + "g", id="non-hex digit"),
        pytest.param(" " + CHECKSUMMED, id="leading space"),
        pytest.param(CHECKSUMMED + "\n", id="trailing newline"),
        pytest.param("0x" + "０" * 40, id="full-width digits"),
    ],
)
def test_malformed_addresses_are_refused(value: str) -> None:
    assert not is_address(value)
    with pytest.raises(InvalidInput) as caught:
        parse_address(value, ("body", "eoa"))
    (violation,) = caught.value.violations
    assert violation.loc == ("body", "eoa")
    assert violation.type == "value_error.address"
    assert "not a valid Ethereum address" in violation.msg


@given(value=st.text(max_size=50).filter(lambda s: not is_address(s)), loc=locations)
def test_a_refusal_names_the_location_it_was_given(value: str, loc: list[str | int]) -> None:
    location: Location = tuple(loc)
    with pytest.raises(InvalidInput) as caught:
        parse_address(value, location)
    assert [v.loc for v in caught.value.violations] == [location]


@given(digits=hex_32)
def test_transaction_hashes_are_lower_cased(digits: str) -> None:
    value = "0x" + digits.upper()
    assert parse_tx_hash(value, ("tx_hash",)) == "0x" + digits
    assert parse_tx_hash("0x" + digits, ("tx_hash",)) == "0x" + digits


def test_a_mixed_case_transaction_hash_is_accepted() -> None:
    assert parse_tx_hash(TX_HASH, ("tx",)) == TX_HASH.lower()


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("", id="empty"),
        pytest.param(TX_HASH[2:], id="no prefix"),
        pytest.param(TX_HASH[:-1], id="63 digits"),
        pytest.param(TX_HASH + "0", id="65 digits"),
        pytest.param(TX_HASH[:-1] + "z", id="non-hex digit"),
        pytest.param(CHECKSUMMED, id="an address"),
    ],
)
def test_malformed_transaction_hashes_are_refused(value: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_tx_hash(value, ("path", "tx_hash"))
    (violation,) = caught.value.violations
    assert violation.loc == ("path", "tx_hash")
    assert violation.type == "value_error.tx_hash"
