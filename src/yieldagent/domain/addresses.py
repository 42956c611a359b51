"""EVM addresses and transaction hashes: parsing and canonical forms."""

from __future__ import annotations

import re
from functools import lru_cache

from eth_utils.address import to_checksum_address

from yieldagent.domain.errors import FieldViolation, InvalidInput, Location

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
_TX_HASH = re.compile(r"0x[0-9a-fA-F]{64}")


def is_address(value: str) -> bool:
    """Whether ``value`` is 0x followed by 40 hex characters."""
    return _ADDRESS.fullmatch(value) is not None


def parse_address(value: str, loc: Location) -> str:
    """Returns the EIP-55 form of ``value``, or raises InvalidInput about ``loc``.

    Any letter case is accepted, as wallets and explorers print addresses either way.
    The checksum cache is keyed by the lower-case form, so spellings of one address share
    one entry.
    """
    if not is_address(value):
        raise InvalidInput.field(
            loc,
            "value is not a valid Ethereum address (0x followed by 40 hex characters)",
            "value_error.address",
        )
    return _checksummed(value.lower())


@lru_cache(maxsize=65_536)
def _checksummed(value: str) -> str:
    return str(to_checksum_address(value))


def parse_tx_hash(value: str, loc: Location) -> str:
    """Returns ``value`` in lower case, or raises InvalidInput about ``loc``."""
    if _TX_HASH.fullmatch(value) is None:
        raise InvalidInput.field(
            loc,
            "value is not a valid transaction hash (0x followed by 64 hex characters)",
            "value_error.tx_hash",
        )
    return value.lower()


def parse_addresses(fields: dict[str, str]) -> dict[str, str]:
    """EIP-55 forms of several address fields; InvalidInput lists every bad one."""
    violations: list[FieldViolation] = []
    parsed: dict[str, str] = {}
    for name, value in fields.items():
        try:
            parsed[name] = parse_address(value, (name,)) if value else _missing(name)
        except InvalidInput as error:
            violations += error.violations
    if violations:
        raise InvalidInput(violations)
    return parsed


def _missing(name: str) -> str:
    raise InvalidInput([FieldViolation((name,), "Field required", "missing")])
